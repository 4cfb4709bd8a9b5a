package checker

import (
	"encoding/json"
	"testing"

	"gregor/history"
)

// The share traps are valid: a lapsed lock's refused accept, an accept of
// unknown outcome followed by a redelivery, a record released at the limit
// and never seen again, a reject, and an ack sent just inside its lock.
func TestShareTrapsPass(t *testing.T) {
	res, err := Check(readFixture(t, "share-traps"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Counts) != 0 {
		t.Fatalf("valid %v, anomalies %v:\n%s", res.Valid, res.Counts, res.JSON())
	}
}

// The traps are traps: each, changed to the anomaly it resembles, is found.
func TestShareTrapsAreTraps(t *testing.T) {
	cases := []struct {
		anomaly string
		edit    func(ops []history.Op)
	}{
		// offset 0: p2's refused accept taken instead.
		{ShareDoubleAcquire, func(ops []history.Op) { setAck(ops, 0, history.OK) }},
		// offset 1: the accept of unknown outcome taken.
		{ShareAcceptedRedelivered, func(ops []history.Op) { setAck(ops, 1, history.OK) }},
		// offset 2's second delivery past a limit of 1.
		{ShareOverLimit, func(ops []history.Op) { setLimit(ops, 1) }},
		// A limit of 5: offset 2, released at count 2 with two processes alive
		// after (two unseen deliveries at most), is owed one.
		{ShareReleaseLost, func(ops []history.Op) { setLimit(ops, 5) }},
		// offset 5's ack sent a second later: past its lock.
		{ShareLateAck, func(ops []history.Op) {
			for i := range ops {
				if ops[i].F == history.FShareAck && ops[i].Time > 900e6 {
					ops[i].Time += 1e9
				}
			}
			for i := range ops {
				if ops[i].F != history.FShareAck && ops[i].Time > 900e6 {
					ops[i].Time += 1e9
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.anomaly, func(t *testing.T) {
			ops := readFixture(t, "share-traps")
			c.edit(ops)
			res, err := Check(ops, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts[c.anomaly] == 0 {
				t.Fatalf("changed trap: no %s found; anomalies %v:\n%s", c.anomaly, res.Counts, res.JSON())
			}
		})
	}
}

// setAck makes the first share-ack of offset completion typ, its acks taken.
func setAck(ops []history.Op, offset int64, typ history.Type) {
	for i := range ops {
		op := &ops[i]
		if op.F != history.FShareAck || op.Type != history.Invoke {
			continue
		}
		var a history.ShareAck
		_ = json.Unmarshal(op.Raw, &a)
		if len(a.Acks) == 0 || a.Acks[0].Offset != offset {
			continue
		}
		done := &ops[i+1]
		done.Type = typ
		done.Raw, _ = json.Marshal(history.ShareAck{Acks: a.Acks})
		return
	}
}

// setLimit rewrites every share-fetch's delivery count limit.
func setLimit(ops []history.Op, limit int16) {
	for i := range ops {
		op := &ops[i]
		if op.F != history.FShareFetch || op.Type != history.OK {
			continue
		}
		var f history.ShareFetch
		_ = json.Unmarshal(op.Raw, &f)
		f.Limit = limit
		op.Raw, _ = json.Marshal(f)
	}
}

// A share-partition leader's failover may lose a record's last delivery
// count (the durable state need not hold the last acquisitions; KIP-932:
// the count is not exact): p3 got offset 0 at count 2, its leader was
// killed, and p4 got it from the next leader at count 1 and accepted it;
// p3's accept was refused. Valid: a pair whose counts and times disagree
// is not ordered. The trap is a trap: with p4's delivery at count 3 (no
// regression) and p3's accept taken after it, two consumers held it.
func TestShareFailoverCountRegression(t *testing.T) {
	res, err := Check(readFixture(t, "share-failover-trap"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Counts) != 0 {
		t.Fatalf("valid %v, anomalies %v:\n%s", res.Valid, res.Counts, res.JSON())
	}
	ops := readFixture(t, "share-failover-trap")
	for i := range ops {
		op := &ops[i]
		switch {
		case op.F == history.FShareAck && op.Process == history.Process(3) && op.Type == history.Fail:
			op.Type = history.OK
			op.Raw, _ = json.Marshal(history.ShareAck{Acks: []history.ShareAckItem{{Key: "t/0", Offset: 0, Type: history.ShareAccept}}})
		case op.F == history.FShareFetch && op.Process == history.Process(4) && op.Type == history.OK:
			var f history.ShareFetch
			_ = json.Unmarshal(op.Raw, &f)
			f.Acquired[0].Count = 3
			op.Raw, _ = json.Marshal(f)
		}
	}
	res, err = Check(ops, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[ShareDoubleAcquire] == 0 {
		t.Fatalf("p3's accept taken after p4's delivery at count 3: no %s; anomalies %v:\n%s", ShareDoubleAcquire, res.Counts, res.JSON())
	}
}

// A record prefetched by p2's client, whose lock lapsed in the client's
// buffer while p2 stalled, is acquired again by the same client at count 2
// (fetched at 16.2 s) before p2 accepts its count-1 delivery (17.0 s):
// the broker takes the accept for the count-2 acquisition, which p2's next
// poll returns, and p2's release of it is refused (INVALID_RECORD_STATE).
// Valid (issue 30's false alarm). The trap is a trap: with that release
// taken, the record was acquired again after the accept.
func TestSharePrefetchedReacquisition(t *testing.T) {
	res, err := Check(readFixture(t, "share-prefetch-trap"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Counts) != 0 {
		t.Fatalf("valid %v, anomalies %v:\n%s", res.Valid, res.Counts, res.JSON())
	}
	ops := readFixture(t, "share-prefetch-trap")
	setAckTaken(ops, 2)
	res, err = Check(ops, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[ShareAcceptedRedelivered] == 0 {
		t.Fatalf("p2's release of its count-2 delivery taken after its accept: no %s; anomalies %v:\n%s", ShareAcceptedRedelivered, res.Counts, res.JSON())
	}
}

// setAckTaken makes every acknowledgement of the delivery count count
// taken.
func setAckTaken(ops []history.Op, count int16) {
	for i := range ops {
		op := &ops[i]
		if op.F != history.FShareAck || op.Type != history.Invoke {
			continue
		}
		var a history.ShareAck
		_ = json.Unmarshal(op.Raw, &a)
		if len(a.Acks) == 0 || a.Acks[0].Count != count {
			continue
		}
		done := &ops[i+1]
		done.Type = history.OK
		done.Raw, _ = json.Marshal(history.ShareAck{Acks: a.Acks, Member: a.Member})
	}
}
