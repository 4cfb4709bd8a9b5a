package checker

import (
	"strings"
	"testing"

	"gregor/history"
)

func golden() history.Config {
	return history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, Nemeses: []string{"kill", "stop", "pause", "partition", "slow"}}
}

func allowedSet(cfg *history.Config) map[string]bool {
	out := map[string]bool{}
	for a, v := range Expect(cfg) {
		if v.Allowed {
			out[a] = true
		}
		if v.Reason == "" {
			panic("verdict without a reason: " + a)
		}
	}
	return out
}

func TestTheoryTable(t *testing.T) {
	loss := []string{LostWrite, Unseen, InconsistentOffsets, NonmonotonicSend, Nonlinearizable}
	// Where records consumers read can vanish (unclean election, power
	// loss): their offsets are reused, positions reset, and an idempotent
	// producer's retry of a lost batch lands again.
	readLoss := []string{InconsistentOffsets, Nonlinearizable, PollSkip, NonmonotonicPoll, Duplicate}
	union := func(sets ...[]string) []string {
		var out []string
		for _, s := range sets {
			out = append(out, s...)
		}
		return out
	}
	// Where an acks=all record can be lost, so can a commit.
	commitLoss := []string{CommittedOffsetRegression, Redelivered}
	with := func(f func(*history.Config)) *history.Config {
		c := golden()
		f(&c)
		return &c
	}
	cases := []struct {
		name   string
		cfg    *history.Config
		allow  []string
		reason string // a word the reason of the first allowed anomaly must hold
	}{
		{"golden config, single-node faults", with(func(c *history.Config) {}), nil, ""},
		{"no faults at all, acks=0, auto-commit", with(func(c *history.Config) {
			c.Acks, c.AutoCommit, c.Idempotence, c.Unclean, c.Nemeses = "0", true, false, true, nil
		}), nil, ""},
		{"acks=1 under kill", with(func(c *history.Config) { c.Acks, c.Nemeses = "1", []string{"kill"} }), loss, "acks=1"},
		// A slow link fences its broker (late heartbeats): leadership moves.
		{"acks=1 under slow only", with(func(c *history.Config) { c.Acks, c.Nemeses = "1", []string{"slow"} }), loss, "acks=1"},
		{"acks=0 under slow", with(func(c *history.Config) { c.Acks, c.Nemeses = "0", []string{"slow"} }), loss, "acks=0"},
		{"acks=all min ISR 1 under partition and kill", with(func(c *history.Config) { c.MinISR, c.Nemeses = 1, []string{"partition", "kill"} }), nil, ""},
		{"acks=all min ISR 1, lazyfs power loss on one node", with(func(c *history.Config) {
			c.MinISR, c.Nemeses, c.LazyFS, c.Fsync, c.NemesisTarget = 1, []string{"power-loss"}, true, "never", "random"
		}), union(loss, commitLoss, readLoss), "min.insync.replicas=1"},
		{"RF 1 (so min ISR 1), lazyfs power loss", with(func(c *history.Config) {
			c.RF, c.MinISR, c.Nemeses, c.LazyFS, c.Fsync, c.NemesisTarget = 1, 1, []string{"power-loss"}, true, "never", "random"
		}), union(loss, commitLoss, readLoss), "min.insync.replicas=1"},
		{"min ISR not recorded (0, read as 1), lazyfs power loss", with(func(c *history.Config) {
			c.MinISR, c.Nemeses, c.LazyFS, c.Fsync, c.NemesisTarget = 0, []string{"power-loss"}, true, "never", "random"
		}), union(loss, commitLoss, readLoss), "min.insync.replicas=1"},
		{"unclean under kill", with(func(c *history.Config) { c.Unclean = true }), union(loss, readLoss, commitLoss), "unclean"},
		{"unclean, min ISR 1 under strand-leader", with(func(c *history.Config) { c.Unclean, c.MinISR, c.Nemeses = true, 1, []string{"strand-leader"} }),
			union(loss, readLoss, commitLoss), "unclean"},
		// The first false alarm of issue 28: an unclean leader never had
		// the batch a consumer read, so the idempotent retry lands again.
		{"unclean with idempotence under kill: duplicate", with(func(c *history.Config) { c.Unclean, c.MinISR, c.Nemeses = true, 1, []string{"kill"} }),
			union([]string{Duplicate}, loss, readLoss, commitLoss), "KIP-98"},
		{"acks=1 under kip101", with(func(c *history.Config) { c.Acks, c.Nemeses = "1", []string{"kip101"} }), loss, "acks=1"},
		{"acks=all min ISR 1 under strand-leader and kip101", with(func(c *history.Config) { c.MinISR, c.Nemeses = 1, []string{"strand-leader", "kip101"} }), nil, ""},
		{"lazyfs power loss on all nodes", with(func(c *history.Config) {
			c.Nemeses, c.LazyFS, c.Fsync, c.NemesisTarget = []string{"power-loss"}, true, "never", "all"
		}), union(loss, readLoss, commitLoss), "page cache"},
		// min ISR 2: no acknowledged record is lost (another ISR member
		// holds it), but a leader left alone in the ISR exposes its
		// unsynced tail to consumers before a power cut takes it.
		{"lazyfs power loss on one node", with(func(c *history.Config) {
			c.Nemeses, c.LazyFS, c.Fsync, c.NemesisTarget = []string{"power-loss"}, true, "never", "random"
		}), readLoss, "maybeIncrementLeaderHW"},
		{"fsync always survives power loss", with(func(c *history.Config) {
			c.Nemeses, c.LazyFS, c.Fsync, c.NemesisTarget = []string{"power-loss"}, true, "always", "all"
		}), nil, ""},
		{"no idempotence", with(func(c *history.Config) { c.Idempotence = false }), []string{Duplicate}, "idempotence"},
		{"no idempotence, 5 in flight", with(func(c *history.Config) { c.Idempotence, c.MaxInFlight = false, 5 }), []string{Duplicate, NonmonotonicSend}, "idempotence"},
		{"acks=1 under reassignments", with(func(c *history.Config) { c.Acks, c.MinISR, c.Nemeses = "1", 1, []string{"reassign"} }), loss, "acks=1"},
		{"acks=all min ISR 2 under reassignments", with(func(c *history.Config) { c.Nemeses = []string{"reassign"} }), nil, ""},
		// A history from before the two auto-commit modes recorded
		// AutoCommit alone: it was greedy.
		{"auto-commit (old history) with client crashes", with(func(c *history.Config) { c.AutoCommit, c.Nemeses = true, []string{"client-crash"} }), []string{CommittedSkip, Redelivered}, "greedy auto-commit"},
		{"greedy auto-commit with client crashes", with(func(c *history.Config) {
			c.AutoCommit, c.CommitMode, c.Nemeses = true, history.CommitAutoGreedy, []string{"client-crash"}
		}), []string{CommittedSkip, Redelivered}, "processed or not"},
		// The Java consumer's auto-commit: a crash re-delivers, it never
		// skips (Jepsen's Bufstream correction).
		{"Java auto-commit with client crashes", with(func(c *history.Config) {
			c.AutoCommit, c.CommitMode, c.Nemeses = true, history.CommitAuto, []string{"client-crash"}
		}), []string{Redelivered}, "ConsumerCoordinator"},
		// ... unless failures are swallowed (seed 002's incident).
		{"Java auto-commit with swallowed failures", with(func(c *history.Config) {
			c.AutoCommit, c.CommitMode, c.Nemeses = true, history.CommitAuto, []string{"client-crash"}
			c.FailureRate, c.FailureHandling = 0.03, "swallow"
		}), []string{CommittedSkip, Redelivered}, "swallowed"},
		{"greedy auto-commit with swallowed failures, no faults", with(func(c *history.Config) {
			c.AutoCommit, c.CommitMode, c.Nemeses = true, history.CommitAutoGreedy, nil
			c.FailureRate, c.FailureHandling = 0.03, "swallow"
		}), []string{CommittedSkip}, "swallowed"},
		{"commit after processing", with(func(c *history.Config) { c.CommitMode, c.Nemeses = "after-processing", []string{"client-crash"} }), []string{Redelivered}, "at-least-once"},
		{"commit before processing", with(func(c *history.Config) { c.CommitMode, c.Nemeses = "before-processing", []string{"client-crash"} }), []string{CommittedSkip}, "at-most-once"},
		// Disk faults (issue 29): a flipped bit is cut from its replica by
		// recovery, as a power cut cuts an unsynced tail; another ISR
		// member's copy survives, a lone one's does not.
		{"acks=all min ISR 2 under disk faults", with(func(c *history.Config) { c.Nemeses = []string{history.NemesisDiskFault} }), readLoss, "LogSegment.recover"},
		{"acks=all min ISR 1 under disk faults", with(func(c *history.Config) { c.MinISR, c.Nemeses = 1, []string{history.NemesisDiskFault} }),
			union(loss, readLoss), "min.insync.replicas=1"},
		{"acks=1 under disk faults", with(func(c *history.Config) { c.Acks, c.Nemeses = "1", []string{history.NemesisDiskFault} }), union(loss, readLoss), "acks=1"},
		// A skewed wall clock breaks no replication rule of Kafka's.
		{"golden config under clock skew", with(func(c *history.Config) { c.Nemeses = []string{history.NemesisClockSkew} }), nil, ""},
		{"acks=1 under clock skew", with(func(c *history.Config) { c.Acks, c.MinISR, c.Nemeses = "1", 1, []string{history.NemesisClockSkew} }), nil, ""},
	}
	for _, c := range cases {
		got := allowedSet(c.cfg)
		want := map[string]bool{}
		for _, a := range c.allow {
			want[a] = true
		}
		for _, a := range AnomalyNames {
			if got[a] != want[a] {
				t.Errorf("%s: %s allowed=%v, want %v", c.name, a, got[a], want[a])
			}
		}
		if len(c.allow) > 0 {
			if r := Expect(c.cfg)[c.allow[0]].Reason; !strings.Contains(r, c.reason) {
				t.Errorf("%s: reason %q lacks %q", c.name, r, c.reason)
			}
		}
		// G1a is forbidden everywhere.
		if got[G1a] {
			t.Errorf("%s: G1a allowed", c.name)
		}
	}
	for _, v := range Expect(nil) {
		if v.Allowed || !strings.Contains(v.Reason, "no configuration") {
			t.Fatalf("nil config: %+v", v)
		}
	}
}

// An allowed anomaly is "unsafe configuration demonstrated", not a failure;
// a planted bug changes nothing about what is forbidden.
func TestCheckSplitsAllowedFromForbidden(t *testing.T) {
	cfg := golden()
	cfg.Acks, cfg.Nemeses = "1", []string{"kill"}
	res, err := Check(readFixture(t, "lost-write"), &cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Forbidden) != 0 || !strings.Contains(res.Allowed[LostWrite], "unsafe configuration demonstrated") {
		t.Fatalf("acks=1 lost write: valid %v forbidden %v allowed %v", res.Valid, res.Forbidden, res.Allowed)
	}
	cfg = golden()
	cfg.PlantedBugs = []string{"ack-before-isr"}
	res, err = Check(readFixture(t, "lost-write"), &cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidFalse || res.Forbidden[LostWrite] == "" || len(res.PlantedBugs) != 1 {
		t.Fatalf("planted bug: valid %v forbidden %v planted %v", res.Valid, res.Forbidden, res.PlantedBugs)
	}
}

// Composed faults on lazyfs: two power-cutting kinds on timelines of their
// own can cut two replicas at once, so acknowledged records may be lost;
// one kind alone (serial cuts), fsync always, or no --compose may not.
func TestTheoryComposedPowerCuts(t *testing.T) {
	base := history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, LazyFS: true, Fsync: "never",
		NemesisTarget: history.TargetLeader, Compose: true,
		Nemeses: []string{history.NemesisPowerLoss, history.NemesisRestartStorm, history.NemesisPartition}}
	if a := allowedSet(&base); !a[LostWrite] || !a[CommittedOffsetRegression] {
		t.Fatalf("composed power cuts: %v", a)
	}
	if v := Expect(&base)[LostWrite]; !strings.Contains(v.Reason, "several brokers at once") {
		t.Fatalf("reason %q does not say why", v.Reason)
	}
	for name, mod := range map[string]func(*history.Config){
		"one power-cutting kind": func(c *history.Config) { c.Nemeses = []string{history.NemesisRestartStorm, history.NemesisPartition} },
		"fsync always":           func(c *history.Config) { c.Fsync = "always" },
		"serial":                 func(c *history.Config) { c.Compose = false },
		"no lazyfs":              func(c *history.Config) { c.LazyFS = false },
	} {
		c := base
		c.Nemeses = append([]string(nil), base.Nemeses...)
		mod(&c)
		// No acknowledged record is lost; records only consumers saw can
		// be, where a lone ISR leader can lose power.
		a := allowedSet(&c)
		if a[LostWrite] || a[Unseen] || a[CommittedOffsetRegression] {
			t.Errorf("%s: loss allowed: %v", name, a)
		}
		if powerCut := c.LazyFS && c.Fsync != "always"; a[InconsistentOffsets] != powerCut {
			t.Errorf("%s: inconsistent-offsets allowed %v, want %v", name, a[InconsistentOffsets], powerCut)
		}
	}
}

// A min ISR above RF never reaches the theory (history.Config.Normalize
// refuses it, gregor run too): one that does is a bug, asserted, not
// clamped to RF.
func TestTheoryAssertsMinISRAtMostRF(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "min ISR 3 > RF 2") {
			t.Fatalf("recovered %q, want the broken invariant named", r)
		}
	}()
	c := golden()
	c.MinISR, c.RF = 3, 2
	Expect(&c)
}

// The authorization rows: each fails if its rule is dropped or widened.
func TestTheoryAuthz(t *testing.T) {
	authz := func(acks string, minISR int, nemeses ...string) *history.Config {
		return &history.Config{Acks: acks, MinISR: minISR, RF: 3, Workload: history.WorkloadAuthz, Nemeses: nemeses}
	}
	cases := []struct {
		name        string
		cfg         *history.Config
		write, read bool
	}{
		{"kill, acks=all, min ISR 2", authz("all", 2, "kill"), false, false},
		{"partition, acks=all, min ISR 2", authz("all", 2, "partition"), false, true},
		{"pause, acks=all, min ISR 2", authz("all", 2, "pause"), false, true},
		{"kill, acks=all, min ISR 1", authz("all", 1, "kill"), true, false},
		{"partition, acks=1", authz("1", 2, "partition"), true, true},
		{"no faults, acks=1", authz("1", 1), false, false},
		{"client-crash only", authz("all", 2, "client-crash"), false, false},
	}
	for _, c := range cases {
		got := allowedSet(c.cfg)
		if got[UnauthorizedWrite] != c.write || got[UnauthorizedRead] != c.read {
			t.Errorf("%s: unauthorized-write allowed %v (want %v), unauthorized-read %v (want %v)", c.name, got[UnauthorizedWrite], c.write, got[UnauthorizedRead], c.read)
		}
	}
	// Another workload's table has no authorization rows.
	q := golden()
	if got := allowedSet(&q); got[UnauthorizedRead] || got[UnauthorizedWrite] {
		t.Errorf("queue workload under partition allows %v", got)
	}
}
