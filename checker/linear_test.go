package checker

import (
	"testing"

	"gregor/checker/checkertest"
	"gregor/history"
)

// hist builds a history from compact steps: each is one line.
type step struct {
	p    history.Process
	typ  history.Type
	f    string
	mop  history.Mop
	time int64
}

func build(steps []step) []history.Op {
	ops := make([]history.Op, len(steps))
	for i, s := range steps {
		ops[i] = history.Op{Index: int64(i), Time: s.time, Process: s.p, Type: s.typ, F: s.f}
		if s.f == history.FAssign {
			ops[i].Keys = []string{"t/0"}
		} else {
			ops[i].Mops = []history.Mop{s.mop}
		}
	}
	return ops
}

func acked(v, o int64) history.Mop {
	m := history.Send("t/0", v)
	m.Offset = o
	return m
}

func polled(recs ...history.Record) history.Mop {
	return history.Mop{Kind: history.MopPoll, Polls: []history.KeyRecords{{Key: "t/0", Records: recs}}}
}

// An offset nobody observed, below one that was acknowledged, must be the
// record of some send whose outcome is unknown; with such a send the key is
// linearizable, without one it is not.
func TestGapNeedsAnIndeterminateSend(t *testing.T) {
	base := []step{
		{0, history.Invoke, "send", history.Send("t/0", 10), 10},
		{0, history.OK, "send", acked(10, 0), 20},
		{0, history.Invoke, "send", history.Send("t/0", 12), 50},
		{0, history.OK, "send", acked(12, 2), 60},
		{1, history.Invoke, "assign", history.Mop{}, 70},
		{1, history.OK, "assign", history.Mop{}, 71},
		{1, history.Invoke, "poll", history.Poll(), 80},
		{1, history.OK, "poll", polled(history.Record{Offset: 0, Value: 10}, history.Record{Offset: 2, Value: 12}), 90},
	}
	res, err := Check(build(base), nil, Options{Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizability["t/0"].Status != "illegal" {
		t.Fatalf("gap without a candidate writer: %+v", res.Linearizability["t/0"])
	}
	withInfo := append([]step{
		{2, history.Invoke, "send", history.Send("t/0", 11), 30},
		{2, history.Info, "send", history.Send("t/0", 11), 40},
	}, base...)
	res, err = Check(build(withInfo), nil, Options{Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizability["t/0"].Status != "ok" || res.Valid != ValidTrue {
		t.Fatalf("gap with an indeterminate send: %+v %v", res.Linearizability["t/0"], res.Counts)
	}
	// The indeterminate send began after the send at offset 2 completed, so
	// it cannot be the record at offset 1.
	late := append(append([]step{}, base...),
		step{2, history.Invoke, "send", history.Send("t/0", 11), 100},
		step{2, history.Info, "send", history.Send("t/0", 11), 110})
	res, err = Check(build(late), nil, Options{Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizability["t/0"].Status != "illegal" {
		t.Fatalf("gap filled by a later send: %+v", res.Linearizability["t/0"])
	}
}

// A time budget that runs out makes the key unknown and the result unknown,
// never a pass.
func TestTimeoutIsUnknown(t *testing.T) {
	ops := checkertest.Generate(checkertest.GenOptions{Seed: 3, Ops: 20000, Keys: 1, Producers: 4, Consumers: 2})
	res, err := Check(ops, nil, Options{KeyTimeout: 1}) // 1ns
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizability["t/0"].Status != "unknown" || res.Valid != ValidUnknown || len(res.UnknownReasons) == 0 {
		t.Fatalf("status %+v valid %v", res.Linearizability["t/0"], res.Valid)
	}
}

// A copy of an acknowledged send that a late request appends after the
// acknowledgement (the delay-client nemesis: the request was held, the
// producer retried on a new connection and was acknowledged, then the held
// request arrived) is a duplicate and nothing else: it may sit above
// records sent after the acknowledgement. Trap: a copy read before its send
// began is still not linearizable.
func TestLateCopyIsOnlyADuplicate(t *testing.T) {
	late := []step{
		{0, history.Invoke, "send", history.Send("t/0", 10), 10},
		{0, history.OK, "send", acked(10, 0), 20},
		{1, history.Invoke, "send", history.Send("t/0", 11), 30},
		{1, history.OK, "send", acked(11, 1), 40},
		{2, history.Invoke, "assign", history.Mop{}, 70},
		{2, history.OK, "assign", history.Mop{}, 71},
		{2, history.Invoke, "poll", history.Poll(), 80},
		{2, history.OK, "poll", polled(history.Record{Offset: 0, Value: 10}, history.Record{Offset: 1, Value: 11},
			history.Record{Offset: 2, Value: 10}), 90},
	}
	cfg := &history.Config{Acks: "all", RF: 3, MinISR: 2, Nemeses: []string{history.NemesisDelayClient}}
	res, err := Check(build(late), cfg, Options{Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizability["t/0"].Status != "ok" || res.Counts[Duplicate] != 1 || len(res.Counts) != 1 || res.Valid != ValidFalse && res.Valid != ValidTrue {
		t.Fatalf("late copy: %+v %v", res.Linearizability["t/0"], res.Counts)
	}
	if _, ok := res.Forbidden[Duplicate]; ok {
		t.Fatalf("idempotence off: the late duplicate must be allowed: %v", res.Forbidden)
	}
	idem := *cfg
	idem.Idempotence = true
	res, err = Check(build(late), &idem, Options{Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Forbidden[Duplicate]; !ok || len(res.Forbidden) != 1 {
		t.Fatalf("idempotence on: the late duplicate must be forbidden, alone: %v", res.Forbidden)
	}
	// Trap: the copy at offset 2 is read before its send (value 12) began.
	early := []step{
		{0, history.Invoke, "send", history.Send("t/0", 10), 10},
		{0, history.OK, "send", acked(10, 0), 20},
		{1, history.Invoke, "send", history.Send("t/0", 11), 30},
		{1, history.OK, "send", acked(11, 1), 40},
		{2, history.Invoke, "assign", history.Mop{}, 70},
		{2, history.OK, "assign", history.Mop{}, 71},
		{2, history.Invoke, "poll", history.Poll(), 80},
		{2, history.OK, "poll", polled(history.Record{Offset: 0, Value: 10}, history.Record{Offset: 1, Value: 11},
			history.Record{Offset: 2, Value: 12}), 90},
		{0, history.Invoke, "send", history.Send("t/0", 12), 100},
		{0, history.OK, "send", acked(12, 3), 110},
		{2, history.Invoke, "poll", history.Poll(), 120},
		{2, history.OK, "poll", polled(history.Record{Offset: 3, Value: 12}), 130},
	}
	res, err = Check(build(early), cfg, Options{Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizability["t/0"].Status != "illegal" {
		t.Fatalf("a copy read before its send began: %+v %v", res.Linearizability["t/0"], res.Counts)
	}
}
