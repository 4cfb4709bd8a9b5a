// Package validate measures the harness itself (DESIGN.md section 6): for each
// planted bug, how often a run with the fault most likely to expose it ends
// in a forbidden anomaly (sensitivity), and how often the safe
// configuration, without a bug, fails under any nemesis (false alarms).
//
// A probe is a matrix cell with a planted bug; the plan turns probes and the
// safe runs into matrix cells (gregor run subprocesses), and the summary
// reads their results back.
package validate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gregor/matrix"
	"gregor/workloads/authz"
	"gregor/workloads/eos"
	"gregor/workloads/group"
	"gregor/workloads/share"
	"gregor/workloads/txn"
)

// Probe is one planted bug and the run most likely to expose it.
type Probe struct {
	Bug string
	// Config is the configuration the bug is run in: the safe one, except
	// where the bug only loses data under a weaker setting (Why says so).
	Config  matrix.Settings
	Nemesis matrix.Nemesis
	// Why says why this fault exposes the bug, and what the checker sees.
	Why string
}

// Choices are the harness settings every validation run shares, each with
// the reason it raises the detection rate (shown in the report).
var Choices = []string{
	"--dedicated-controllers --controllers 1: brokers are raft non-voters, so a fault on a broker never takes the controller with it; a cut-off leader is deposed by a controller that stays reachable from the majority, and a stranded leader keeps its controller",
	"partitions put the controller-only voter with the majority side: an isolated leader is fenced and a new one elected while the old one still takes writes",
	"--concurrency 16: producers are blocked one record at a time by a partition that stalls; 16 keep the other partitions written while one is faulted",
	"--session-timeout 3s and --replica-lag-max 3s (gregor run's defaults): elections and ISR shrinks happen within a fault's hold",
	"scenario faults (strand-leader, kip101) play a whole failure story on one partition's leader in one step, instead of waiting for two random faults to line up",
}

// Safe is the configuration that must never fail: acks=all, min ISR 2,
// unclean off, RF 3, idempotence on.
func Safe(timeLimit time.Duration) matrix.Settings {
	return matrix.Settings{Acks: "all", MinISR: ptr(2), RF: ptr(3), Unclean: ptr(false), Idempotence: ptr(true),
		Nodes: ptr(3), Controllers: ptr(1), Partitions: ptr(3), TimeLimit: timeLimit.String(),
		Args: []string{"--dedicated-controllers", "--concurrency", "16"}}
}

func ptr[T any](v T) *T { return &v }

// SafeEOS is the safe configuration for the eos workload: Safe with
// transaction version 2, three pipeline instances in one group.
func SafeEOS(timeLimit time.Duration) matrix.Settings {
	s := Safe(timeLimit)
	s.Workload = eos.Name // in the row label too, as SafeTxn's
	s.Args = []string{"--dedicated-controllers", "--consumers", "3", "--transaction-version", "2"}
	return s
}

// SafeTxn is the safe configuration for the txn workload: Safe with
// transaction version 2 (KIP-890), four transactional producers each
// owning one of four partitions, and a third of the transactions aborted.
func SafeTxn(timeLimit time.Duration) matrix.Settings {
	s := Safe(timeLimit)
	s.Partitions = ptr(4)
	s.Workload = txn.Name // in the row label too: its false alarms are its own row
	s.Args = []string{"--dedicated-controllers", "--concurrency", "4", "--abort-rate", "0.3", "--transaction-version", "2"}
	return s
}

// SafeConsumerGroup is the group workload on the safe brokers with the
// KIP-848 consumer protocol, committing before processing (so that any
// record processed twice is forbidden), three consumers.
func SafeConsumerGroup(timeLimit time.Duration) matrix.Settings {
	s := Safe(timeLimit)
	s.Workload, s.CommitMode, s.Consumers = group.Name, group.CommitBefore, ptr(3)
	// The broker's KIP-848 heartbeat interval and session stay Kafka's
	// (5 s, 45 s): the bug acts at the join, which a heartbeat answers at
	// once.
	s.Args = append(slices.Clone(s.Args), "--group-protocol", group.ProtocolConsumer)
	return s
}

// SafeShare is the safe configuration running the share workload
// (KIP-932) with one share consumer, at least 60 s: its stalls past the
// 15 s lock (pause-share-consumer's) leave the lapsed records to no one
// else, so a late acknowledgement meets them still available.
func SafeShare(timeLimit time.Duration) matrix.Settings {
	s := Safe(timeLimit)
	s.Workload = share.Name
	s.TimeLimit = max(timeLimit, 60*time.Second).String()
	s.Args = append(slices.Clone(s.Args), "--consumers", "1") // keeps the safe args (dedicated controllers)
	return s
}

// SafeAuthz is the safe configuration for the authz workload: Safe with
// idempotence off (the workload's producers are not idempotent: a refused
// produce would gap a sequence) and two principals; 20 s of faults hold a
// revocation past the bound for each of them.
func SafeAuthz(timeLimit time.Duration) matrix.Settings {
	s := Safe(timeLimit)
	s.Workload, s.Idempotence = authz.Name, ptr(false)
	s.Args = []string{"--dedicated-controllers", "--concurrency", "2"}
	return s
}

var (
	consumerJoin  = matrix.Nemesis{Name: "consumer-join", Kinds: []string{"consumer-join"}, Interval: "4s", Duration: "1ms"}
	isolateLeader = matrix.Nemesis{Name: "isolate-leader", Kinds: []string{"partition"}, Shapes: []string{"isolate-leader"},
		Target: "leader", Interval: "3s", Duration: "5s"}
	strandLeader       = matrix.Nemesis{Name: "strand-leader", Kinds: []string{"strand-leader"}, Interval: "3s", Duration: "3s"}
	pauseProducer      = matrix.Nemesis{Name: "pause-producer", Kinds: []string{"pause-producer"}, Interval: "3s", Duration: "4s"}
	pipelineCrash      = matrix.Nemesis{Name: "client-crash", Kinds: []string{"client-crash"}, Interval: "2s", Duration: "1ms"}
	killTxnCoordinator = matrix.Nemesis{Name: "kill-txn-coordinator", Kinds: []string{"kill-txn-coordinator"}, Interval: "3s", Duration: "3s"}
	killLeader         = matrix.Nemesis{Name: "kill-leader", Kinds: []string{"kill"}, Target: "leader", Interval: "3s", Duration: "3s"}
	// A step stalls its consumer 17 s (the workload's), so 60 s hold two
	// or three.
	pauseShareConsumer = matrix.Nemesis{Name: "pause-share-consumer", Kinds: []string{"pause-share-consumer"}, Interval: "3s", Duration: "1ms"}
	kip101             = matrix.Nemesis{Name: "kip101", Kinds: []string{"kip101"}, Interval: "3s", Duration: "3s",
		// Y must stay in the ISR through the story (the KIP's timeline).
		Settings: matrix.Settings{Args: []string{"--replica-lag-max", "20s"}}}
)

// Probes lists each planted bug of DESIGN.md section 6 with its fault.
func Probes(timeLimit time.Duration) []Probe {
	safe := Safe(timeLimit)
	minISR1 := safe
	minISR1.MinISR = ptr(1)
	// The KIP-101 story loses the records a follower received in its last
	// fetch response before the cut, so one partition and 32 producers
	// make that response hold several (with three partitions it held one
	// or two, and a cut that missed the window lost nothing); a story
	// takes about 15 s, so the probe gets at least 35 s for two of them.
	kip := safe
	kip.Partitions, kip.Rate = ptr(1), ptr(400.0)
	kip.TimeLimit = max(timeLimit, 35*time.Second).String()
	kip.Args = []string{"--dedicated-controllers", "--concurrency", "32"}
	txnLong := SafeTxn(timeLimit)
	txnLong.TimeLimit = max(timeLimit, 40*time.Second).String()
	return []Probe{
		{Bug: "ack-before-isr", Config: safe, Nemesis: isolateLeader,
			Why: "the isolated leader, deposed by the majority, acknowledges acks=all writes its followers never fetch; the new leader's log lacks them: lost-write / inconsistent-offsets"},
		{Bug: "hw-past-lagging-isr", Config: safe, Nemesis: isolateLeader,
			Why: "the isolated leader moves its high watermark past followers that fetch nothing, so acks=all is answered with a single copy; the new leader lacks it: lost-write / inconsistent-offsets"},
		{Bug: "truncate-to-hw", Config: kip, Nemesis: kip101,
			Why: "the KIP-101 scenario: a follower holding acknowledged records above its lagging HW truncates to the HW when it starts following a new leader, then is elected: lost-write / inconsistent-offsets. Needs --replica-lag-max 20s so it stays in the ISR; one partition, 32 producers and at least 35 s (two stories) so the follower's last fetch response holds several acknowledged records"},
		{Bug: "skip-min-isr", Config: safe, Nemesis: strandLeader,
			Why: "the stranded leader's ISR shrinks to itself; with min ISR 2 a correct leader refuses acks=all (NOT_ENOUGH_REPLICAS), the bug acknowledges: the metadata samples show the ISR below min ISR while the ack happened (under-min-isr-ack)"},
		{Bug: "lso-past-open-txn", Config: SafeTxn(timeLimit), Nemesis: killLeader,
			Why: "the txn workload aborts a third of its transactions; read_committed fetches answered up to the high watermark return open transactions' records, and those later aborted are aborted reads (aborted-read), those read before the rest of their transaction intermediate reads. Faults are not needed; leader kills add failovers"},
		{Bug: "no-zombie-fencing", Config: txnLong, Nemesis: pauseProducer,
			Why: "a transactional producer frozen past its transaction timeout (15 s) is fenced and its transaction aborted; resumed, it sends on at its old epoch: a correct partition refuses (INVALID_PRODUCER_EPOCH), the bug appends, and the record joins the producer's next transaction on that partition, so when that one commits, part of the frozen transaction is read while its earlier writes were aborted (torn-transaction). A pause whose next transaction aborts shows nothing; at least 40 s for two pauses"},
		{Bug: "marker-before-prepare", Config: txnLong, Nemesis: killTxnCoordinator,
			Why: "markers go out before PrepareCommit is durable; a coordinator killed in that window leaves a successor that knows the transaction only as Ongoing and aborts it, while some partitions already hold its COMMIT: torn-transaction or aborted-read. The window is one replication round trip, so random kills hit it rarely: this probe measures how rarely"},
		{Bug: "txn-offsets-early", Config: SafeEOS(timeLimit), Nemesis: pipelineCrash,
			Why: "the eos pipeline commits its group's offsets in each transaction; a pipeline torn down mid-transaction leaves it to be aborted, and the bug has already applied its offsets: the partition's next owner starts past input whose output was aborted (eos-missing). Leader kills rarely abort a pipeline transaction (franz-go retries the produce)"},
		{Bug: "assign-before-revoke", Config: SafeConsumerGroup(timeLimit), Nemesis: consumerJoin,
			Why: "KIP-848 consumer groups committing before processing (at-most-once: no redelivery allowed); a joining consumer is given partitions their owner has not revoked yet: it starts at the owner's last commit while the owner still consumes, and both process the same records (redelivered). A correct coordinator gives them only after the revoke, when the owner has committed all it polled"},
		{Bug: "share-ack-after-lock-expiry", Config: SafeShare(timeLimit), Nemesis: pauseShareConsumer,
			Why: "the share consumer stalls past its acquisition lock with its fetching paused, then acknowledges; a correct share-partition leader refuses the late acknowledgement (INVALID_RECORD_STATE), the bug takes it while the lapsed record waits for its next delivery: the ack was sent after the poll plus the lock (share-late-ack). Leader kills (section 10.2) ended the locks before they lapsed, and a stall that kept fetching had the client acquire its lapsed records again, which every broker then takes the ack for"},
		{Bug: "keep-deleted-acls", Config: SafeAuthz(timeLimit), Nemesis: killLeader,
			Why: "the authz workload's grantor revokes each principal's WRITE and READ in turn and keeps them revoked past the propagation bound; a correct broker drops a deleted ACL when it applies the metadata record, the bug keeps it in the broker's cache, so the principal's sends are acknowledged and its fetches answered after the bound (unauthorized-write, unauthorized-read, forbidden under kill with acks=all and min ISR 2). Leader kills restart brokers, whose cache is rebuilt from the log"},
		{Bug: "elect-outside-isr", Config: minISR1, Nemesis: strandLeader,
			Why: "min ISR 1 (the bug needs writes only the ISR holds): the stranded leader acknowledges alone, is killed, and the controller elects a follower outside the ISR although unclean election is off: lost-write / inconsistent-offsets. A correct controller keeps the partition offline"},
	}
}

// SafeNemeses are the faults the safe configuration runs under: every
// kind, leader-targeted where that is the harder case.
func SafeNemeses() []matrix.Nemesis {
	lazy := matrix.Settings{LazyFS: ptr(true), Fsync: "never"}
	return append([]matrix.Nemesis{
		killLeader,
		{Name: "stop", Kinds: []string{"stop"}, Interval: "3s", Duration: "3s"},
		{Name: "pause-leader", Kinds: []string{"pause"}, Target: "leader", Interval: "3s", Duration: "4s"},
		isolateLeader,
		{Name: "partition", Kinds: []string{"partition"}, Interval: "3s", Duration: "5s"},
		{Name: "slow", Kinds: []string{"slow"}, Interval: "3s", Duration: "4s"},
		{Name: "power-loss", Kinds: []string{"power-loss"}, Target: "leader", Interval: "3s", Duration: "2s", Settings: lazy},
		strandLeader,
		kip101,
		clientCrash,
	}, linkSafeNemeses()...)
}

// TxnSafeNemeses are the faults of the txn workload's false-alarm runs.
var TxnSafeNemeses = []matrix.Nemesis{killLeader, killTxnCoordinator, pauseProducer}

var clientCrash = matrix.Nemesis{Name: "client-crash", Kinds: []string{"client-crash", "kill"}, Interval: "2s", Duration: "3s"}

// GroupCommitModes are the group workload's commit modes
// (workloads/group): each one's safe form is in the false-alarm set.
var GroupCommitModes = []string{group.CommitAuto, group.CommitAutoGreedy, group.CommitBefore, group.CommitAfter, group.CommitOnRevoked}

// SafeSet is one configuration of the false-alarm set and the nemeses it
// runs under. Every workload is in the set: a checker that cries wolf only
// on the group workload is as wrong as one that does on the queue.
type SafeSet struct {
	Config  matrix.Settings
	Nemeses []matrix.Nemesis
}

// SafeSets is the false-alarm set: the queue workload in the safe
// configuration under every nemesis, and the group workload in each commit
// mode's safe form (the safe brokers, no injected processing failures: the
// theory then allows exactly what the mode's semantics allow, e.g.
// redelivery after a crash under commit-after) under consumer crashes
// and leader kills.
func SafeSets(timeLimit time.Duration) []SafeSet {
	sets := []SafeSet{{Config: Safe(timeLimit), Nemeses: SafeNemeses()}}
	for _, mode := range GroupCommitModes {
		cfg := Safe(timeLimit)
		cfg.Workload, cfg.CommitMode, cfg.Consumers = group.Name, mode, ptr(2)
		sets = append(sets, SafeSet{Config: cfg, Nemeses: []matrix.Nemesis{
			{Name: "consumer-crash", Kinds: []string{"client-crash"}, Interval: "3s", Duration: "1ms"},
			killLeader,
		}})
	}
	// The txn workload's safe form (transaction version 2, KIP-890) under
	// the faults its anomalies need: none of them is allowed there.
	sets = append(sets, SafeSet{Config: SafeTxn(timeLimit), Nemeses: TxnSafeNemeses})
	return sets
}

// Row labels of a plan's matrix cells: Summarize reads a cell's kind back
// from its prefix.
const (
	bugPrefix     = "bug="
	controlPrefix = "control="
	safePrefix    = "safe: "
)

// SafeLabel is the queue workload's safe row.
var SafeLabel = SafeConfigLabel(Safe(time.Second))

// SafeConfigLabel names a safe configuration's matrix row.
func SafeConfigLabel(cfg matrix.Settings) string { return safePrefix + cfg.Label() }

// BugLabel is the matrix row of a probe.
func BugLabel(bug string) string { return bugPrefix + bug }

// ControlLabel is the matrix row of a probe's control: its exact settings
// and fault, without the bug. A run there that fails is a false alarm.
func ControlLabel(bugs ...string) string { return controlPrefix + strings.Join(bugs, ",") }

// Plan is what `gregor validate` runs.
type Plan struct {
	Runs int // per planted bug, and as many controls (the probe without its bug)
	// SafeRuns are spread over every (safe configuration, nemesis) pair of
	// SafeSets, on top of the controls.
	SafeRuns  int
	TimeLimit time.Duration
	Seed      int64 // first seed; run i uses Seed+i
	Bugs      []string
}

// Cells expands the plan into matrix cells: probes, their controls, then
// the safe sets.
func (p Plan) Cells() ([]matrix.Cell, error) {
	if p.Runs < 0 || p.SafeRuns < 0 || p.Runs+p.SafeRuns == 0 {
		return nil, fmt.Errorf("--runs %d --safe-runs %d: give a positive number of runs", p.Runs, p.SafeRuns)
	}
	if p.TimeLimit <= 0 {
		return nil, fmt.Errorf("--time-limit %v: give a positive duration", p.TimeLimit)
	}
	probes := Probes(p.TimeLimit)
	if len(p.Bugs) > 0 {
		var keep []Probe
		for _, b := range p.Bugs {
			found := false
			for _, pr := range probes {
				if pr.Bug == b {
					keep, found = append(keep, pr), true
				}
			}
			if !found {
				return nil, fmt.Errorf("--bugs %q: no probe for it; choose from %v", b, BugNames())
			}
		}
		probes = keep
	}
	var cells []matrix.Cell
	add := func(label string, cfg matrix.Settings, n matrix.Nemesis, seeds []int64) error {
		cs, err := LabelledCells(label, cfg, n, seeds)
		cells = append(cells, cs...)
		return err
	}
	seeds := func(n, offset int) []int64 {
		var s []int64
		for i := range n {
			s = append(s, p.Seed+int64(offset+i))
		}
		return s
	}
	if p.Runs > 0 {
		for _, pr := range probes {
			cfg := pr.Config
			cfg.Bugs = []string{pr.Bug}
			if err := add(BugLabel(pr.Bug), cfg, pr.Nemesis, seeds(p.Runs, 0)); err != nil {
				return nil, err
			}
		}
		// The controls: each probe's settings, fault and seeds, no bug. Two
		// probes with the same settings and fault (ack-before-isr and
		// hw-past-lagging-isr) share one control: the same runs, run once.
		ctrls, err := controls(probes)
		if err != nil {
			return nil, err
		}
		for _, c := range ctrls {
			if err := add(ControlLabel(c.bugs...), c.probe.Config, c.probe.Nemesis, seeds(p.Runs, 0)); err != nil {
				return nil, err
			}
		}
	}
	type pair struct {
		cfg matrix.Settings
		n   matrix.Nemesis
		at  int // seed offset
	}
	var pairs []pair
	for i, set := range SafeSets(p.TimeLimit) {
		for j, n := range set.Nemeses {
			pairs = append(pairs, pair{set.Config, n, 1000 + 1000*i + 100*j})
		}
	}
	for i, pr := range pairs {
		// Runs are dealt round-robin: pair i gets runs i, i+len, ...
		k := 0
		for j := i; j < p.SafeRuns; j += len(pairs) {
			k++
		}
		if k == 0 {
			continue
		}
		if err := add(SafeConfigLabel(pr.cfg), pr.cfg, pr.n, seeds(k, pr.at)); err != nil {
			return nil, err
		}
	}
	ids := map[string]string{}
	for _, c := range cells {
		if other, dup := ids[c.ID]; dup {
			return nil, fmt.Errorf("validate plan: cells %q and %q are the same run (%s): a plan must not run one cell twice into one directory", other, c.Label, c.ID)
		}
		ids[c.ID] = c.Label
	}
	return cells, nil
}

type control struct {
	probe Probe
	bugs  []string
}

// controls groups probes by their settings and fault (the arguments of
// their runs without the bug), in probe order.
func controls(probes []Probe) ([]control, error) {
	var out []control
	var keys []string
	for _, pr := range probes {
		cs, err := LabelledCells("", pr.Config, pr.Nemesis, []int64{0})
		if err != nil {
			return nil, err
		}
		key := strings.Join(cs[0].Args, " ")
		if i := slices.Index(keys, key); i >= 0 {
			out[i].bugs = append(out[i].bugs, pr.Bug)
			continue
		}
		keys = append(keys, key)
		out = append(out, control{pr, []string{pr.Bug}})
	}
	return out, nil
}

// LabelledCells are the cells of one configuration under one nemesis, one
// per seed, in row label.
func LabelledCells(label string, cfg matrix.Settings, n matrix.Nemesis, seeds []int64) ([]matrix.Cell, error) {
	spec := matrix.Spec{Name: "validate", Configs: []matrix.Settings{cfg}, Nemeses: []matrix.Nemesis{n}, Seeds: seeds}
	cs, err := spec.Cells()
	if err != nil {
		return nil, err
	}
	for i := range cs {
		cs[i].Label = label
	}
	return cs, nil
}

// BugNames are the planted bugs with a probe.
func BugNames() []string {
	var out []string
	for _, p := range Probes(time.Second) {
		out = append(out, p.Bug)
	}
	return out
}
