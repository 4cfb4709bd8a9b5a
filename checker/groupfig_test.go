package checker

import (
	"testing"

	"gregor/history"
)

const ms = int64(1e6)

// groupHist builds a group history by hand, in time order.
type groupHist struct{ ops []history.Op }

func (h *groupHist) add(op history.Op) {
	op.Index = int64(len(h.ops))
	h.ops = append(h.ops, op)
}

func (h *groupHist) send(t int64, key string, off, v int64) {
	h.add(history.Op{Time: t - ms/2, Process: 0, Type: history.Invoke, F: history.FSend, Mops: []history.Mop{history.Send(key, v)}})
	m := history.Send(key, v)
	m.Offset = off
	h.add(history.Op{Time: t, Process: 0, Type: history.OK, F: history.FSend, Mops: []history.Mop{m}})
}

func (h *groupHist) reb(t int64, p history.Process, slot int, ev string, gen int32, keys ...string) {
	op := history.RebalanceOp(p, "g", history.Rebalance{Event: ev, Keys: keys, Generation: gen, Slot: slot})
	op.Time = t
	h.add(op)
}

func (h *groupHist) process(t int64, p history.Process, key string, off, v int64) {
	h.add(history.Op{Time: t, Process: p, Type: history.OK, F: history.FProcess, Group: "g",
		Records: []history.KeyRecords{{Key: key, Records: []history.Record{{Offset: off, Value: v}}}}})
}

func (h *groupHist) commit(t int64, p history.Process, key string, off int64) {
	h.add(history.Op{Time: t, Process: p, Type: history.OK, F: history.FCommit, Group: "g",
		Offsets: []history.KeyOffset{{Key: key, Offset: off}}})
}

// A history with an initial generation, a crash followed by an eager
// rebalance (everything revoked, then everything assigned: a pause), and a
// cooperative one (one partition moves, the other is consumed throughout:
// no pause). The crashed consumer's unconfirmed record is processed again
// by the survivor and attributed to the crash.
func TestGroupFiguresEagerAndCooperative(t *testing.T) {
	var h groupHist
	h.reb(0, 1, 0, history.RebalanceJoin, -1)
	h.reb(0, 2, 1, history.RebalanceJoin, -1)
	h.send(5*ms, "t/0", 0, 1)
	h.send(5*ms, "t/1", 0, 1)
	h.reb(10*ms, 1, 0, history.RebalanceAssigned, 1, "t/0")
	h.reb(10*ms, 2, 1, history.RebalanceAssigned, 1, "t/1")
	h.send(15*ms, "t/0", 1, 2)
	h.process(20*ms, 1, "t/0", 0, 1)
	h.process(20*ms, 2, "t/1", 0, 1)
	h.process(30*ms, 1, "t/0", 1, 2)
	h.commit(40*ms, 1, "t/0", 2)
	h.commit(40*ms, 2, "t/1", 1)
	h.send(95*ms, "t/1", 1, 2)
	h.add(history.Op{Time: 100 * ms, Process: history.Nemesis, Type: history.Info, F: "client-crash", Raw: []byte(`{"process":2}`)})
	h.process(105*ms, 2, "t/1", 1, 2)
	h.add(history.Op{Time: 110 * ms, Process: 2, Type: history.Info, F: history.FCrash})
	h.send(150*ms, "t/0", 2, 3)
	h.reb(200*ms, 1, 0, history.RebalanceRevoked, 1, "t/0")
	h.reb(300*ms, 1, 0, history.RebalanceAssigned, 2, "t/0", "t/1")
	h.process(310*ms, 1, "t/1", 1, 2) // redelivered: p2 processed it, crashed before committing
	h.process(320*ms, 1, "t/0", 2, 3)
	h.commit(330*ms, 1, "t/0", 3)
	h.commit(330*ms, 1, "t/1", 2)
	h.reb(350*ms, 3, 1, history.RebalanceJoin, -1)
	h.reb(400*ms, 1, 0, history.RebalanceRevoked, 2, "t/1")
	h.reb(450*ms, 3, 1, history.RebalanceAssigned, 3, "t/1")
	h.reb(450*ms, 1, 0, history.RebalanceAssigned, 3)

	res, err := Check(h.ops, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 {
		t.Fatalf("groups: %+v", res.Groups)
	}
	g := res.Groups[0]
	if g.Group != "g" || len(g.Keys) != 2 || g.Consumers != 3 || g.Processed != 5 {
		t.Fatalf("group %q keys %v consumers %d processed %d", g.Group, g.Keys, g.Consumers, g.Processed)
	}
	if len(g.Rebalances) != 3 {
		t.Fatalf("rebalances: %+v", g.Rebalances)
	}
	r1, r2, r3 := g.Rebalances[0], g.Rebalances[1], g.Rebalances[2]
	if !r1.Initial || r1.Generation != 1 || r1.Members != 2 {
		t.Errorf("first generation: %+v", r1)
	}
	if r2.Initial || r2.Start != 200*ms || r2.End != 300*ms || r2.Pause != 100*ms || r2.UnownedTime != 200*ms || r2.Moved != 1 {
		t.Errorf("eager rebalance after the crash: %+v, want start 200ms end 300ms pause 100ms unowned 200ms moved 1", r2)
	}
	if r3.Start != 400*ms || r3.End != 450*ms || r3.Pause != 0 || r3.UnownedTime != 50*ms || r3.Moved != 1 || r3.Members != 2 {
		t.Errorf("cooperative rebalance: %+v, want start 400ms end 450ms no pause, unowned 50ms, moved 1", r3)
	}
	if g.RebalanceCount != 2 || g.TotalPause != 100*ms {
		t.Errorf("count %d total pause %d, want 2 and 100ms", g.RebalanceCount, g.TotalPause)
	}
	if r2.LagBefore != 1 || r2.LagPeak < 1 {
		t.Errorf("lag around the eager rebalance: before %d peak %d, want 1 and >= 1", r2.LagBefore, r2.LagPeak)
	}
	if len(g.Lag) != LagSamples {
		t.Fatalf("%d lag samples", len(g.Lag))
	}
	// At 250 ms: ends t/0 3, t/1 2; committed 2 and 1; processed up to 2 and 2.
	for _, s := range g.Lag {
		if s[0] >= 250*ms && s[0] < 290*ms && (s[1] != 2 || s[2] != 1) {
			t.Errorf("lag at %dms: committed %d processing %d, want 2 and 1", s[0]/ms, s[1], s[2])
		}
	}
	if last := g.Lag[len(g.Lag)-1]; last[1] != 0 || last[2] != 0 {
		t.Errorf("lag at the end %v, want caught up", last)
	}
	if len(g.Ends) != 1 || g.Ends[0].Process != 2 || g.Ends[0].Kind != "crash" || g.Ends[0].Redelivered != 1 || g.RedeliveredOther != 0 {
		t.Errorf("ends %+v other %d: want p2's crash with 1 redelivered", g.Ends, g.RedeliveredOther)
	}
	if res.Counts[Redelivered] != 1 {
		t.Errorf("redelivered count %d", res.Counts[Redelivered])
	}
}

// A queue history has no group: no figures.
func TestGroupFiguresAbsentWithoutGroups(t *testing.T) {
	res, err := Check(readFixture(t, "clean"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Groups != nil {
		t.Fatalf("figures for a history without groups: %+v", res.Groups)
	}
}

// An auto-commit answered while the consumer's poll is still open (a
// standalone commit line) past a record whose processing failed and was
// swallowed: committed-skip names it. The same history with the record
// retried to success before the commit holds none.
func TestCommittedSkipFromSwallowedFailure(t *testing.T) {
	build := func(retried bool) []history.Op {
		var h groupHist
		h.reb(0, 1, 0, history.RebalanceJoin, -1)
		h.send(5*ms, "t/0", 0, 10)
		h.send(6*ms, "t/0", 1, 11)
		h.reb(10*ms, 1, 0, history.RebalanceAssigned, 1, "t/0")
		h.add(history.Op{Time: 20 * ms, Process: 1, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
		h.add(history.Op{Time: 21 * ms, Process: 1, Type: history.OK, F: history.FPoll, Mops: []history.Mop{{Kind: history.MopPoll,
			Polls: []history.KeyRecords{{Key: "t/0", Records: []history.Record{{Offset: 0, Value: 10}, {Offset: 1, Value: 11}}}}}}})
		h.process(30*ms, 1, "t/0", 0, 10)
		if retried {
			h.process(40*ms, 1, "t/0", 1, 11)
		} else {
			h.add(history.Op{Time: 40 * ms, Process: 1, Type: history.Fail, F: history.FProcess, Group: "g", Error: "processing failed (swallowed)",
				Records: []history.KeyRecords{{Key: "t/0", Records: []history.Record{{Offset: 1, Value: 11}}}}})
		}
		h.add(history.Op{Time: 50 * ms, Process: 1, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
		h.commit(60*ms, 1, "t/0", 2) // the auto-commit, while the poll is open
		h.add(history.Op{Time: 70 * ms, Process: 1, Type: history.OK, F: history.FPoll, Mops: []history.Mop{{Kind: history.MopPoll, Polls: []history.KeyRecords{}}}})
		return h.ops
	}
	cfg := &history.Config{Acks: "all", AutoCommit: true, FailureRate: 0.1, FailureHandling: "swallow"}
	res, err := Check(build(false), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	exs := res.Anomalies[CommittedSkip]
	if len(exs) != 1 || len(exs[0].Offsets) != 1 || exs[0].Offsets[0] != 1 || exs[0].Values[0] != 11 {
		t.Fatalf("committed-skip %+v, want offset 1 value 11", exs)
	}
	if _, ok := res.Allowed[CommittedSkip]; !ok || res.Valid != ValidTrue {
		t.Errorf("swallowed failures allow committed-skip: valid %v allowed %v", res.Valid, res.Allowed)
	}
	if g := res.Groups[0]; g.Failed != 1 || g.Processed != 1 {
		t.Errorf("failed %d processed %d, want 1 and 1", g.Failed, g.Processed)
	}
	res, err = Check(build(true), &history.Config{Acks: "all", CommitMode: "after-processing", FailureRate: 0.1, FailureHandling: "retry"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[CommittedSkip] != 0 || res.Valid != ValidTrue {
		t.Fatalf("retried record: %s", res.JSON())
	}
	// Without a configuration that allows it, the skip is forbidden.
	res, _ = Check(build(false), &history.Config{Acks: "all", CommitMode: "after-processing", FailureHandling: "retry"}, Options{})
	if _, ok := res.Forbidden[CommittedSkip]; !ok || res.Valid != ValidFalse {
		t.Errorf("commit after processing with retries forbids committed-skip: %v", res.Forbidden)
	}
}

func TestTheoryGroupModes(t *testing.T) {
	on := Expect(&history.Config{Acks: "all", CommitMode: "on-revoked", Nemeses: []string{"client-crash"}})
	if !on[Redelivered].Allowed || on[CommittedSkip].Allowed {
		t.Errorf("on-revoked: %+v", on)
	}
	sw := Expect(&history.Config{Acks: "all", CommitMode: "after-processing", FailureRate: 0.2, FailureHandling: "swallow"})
	if !sw[CommittedSkip].Allowed {
		t.Errorf("swallowed failures without faults must allow committed-skip: %+v", sw[CommittedSkip])
	}
	re := Expect(&history.Config{Acks: "all", CommitMode: "after-processing", FailureRate: 0.2, FailureHandling: "retry", Nemeses: []string{"client-crash"}})
	if re[CommittedSkip].Allowed {
		t.Errorf("retried failures with commit after processing: %+v", re[CommittedSkip])
	}
}

// A static member restarted within its session takes its place in the same
// generation (KIP-345): no rebalance, counted as a static rejoin; a
// leaving member's revoke does not start the next rebalance.
func TestGroupFiguresStaticRejoin(t *testing.T) {
	var h groupHist
	h.reb(0, 1, 0, history.RebalanceJoin, -1)
	h.reb(0, 2, 1, history.RebalanceJoin, -1)
	h.reb(10*ms, 1, 0, history.RebalanceAssigned, 1, "t/0")
	h.reb(10*ms, 2, 1, history.RebalanceAssigned, 1, "t/1")
	h.send(20*ms, "t/0", 0, 1)
	h.process(30*ms, 1, "t/0", 0, 1)
	h.add(history.Op{Time: 90 * ms, Process: history.Nemesis, Type: history.Info, F: "consumer-restart"})
	h.reb(100*ms, 1, 0, history.RebalanceRevoked, 1, "t/0")
	h.reb(101*ms, 1, 0, history.RebalanceLeave, -1)
	h.reb(110*ms, 3, 0, history.RebalanceJoin, -1)
	h.reb(150*ms, 3, 0, history.RebalanceAssigned, 1, "t/0")
	// Later a real rebalance: it starts at p2's revoke, not p1's.
	h.reb(500*ms, 2, 1, history.RebalanceRevoked, 1, "t/1")
	h.reb(520*ms, 3, 0, history.RebalanceRevoked, 1, "t/0")
	h.reb(600*ms, 2, 1, history.RebalanceAssigned, 2, "t/1")
	h.reb(600*ms, 3, 0, history.RebalanceAssigned, 2, "t/0")
	res, err := Check(h.ops, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := res.Groups[0]
	if g.StaticRejoins != 1 || len(g.Rebalances) != 2 {
		t.Fatalf("static rejoins %d, rebalances %+v", g.StaticRejoins, g.Rebalances)
	}
	if r := g.Rebalances[0]; r.End != 10*ms {
		t.Errorf("the static rejoin stretched generation 1 to %d", r.End)
	}
	if r := g.Rebalances[1]; r.Start != 500*ms || r.Pause != 80*ms || r.Moved != 0 || g.RebalanceCount != 1 {
		t.Errorf("second rebalance %+v (count %d): want start 500ms, pause 80ms, nothing moved", r, g.RebalanceCount)
	}
	if len(g.Ends) != 1 || g.Ends[0].Kind != "leave" {
		t.Errorf("ends %+v", g.Ends)
	}
}
