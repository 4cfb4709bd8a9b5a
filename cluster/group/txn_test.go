package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
)

// A reload rebuilds transactional offsets: pending until their
// transaction's marker, materialized by COMMIT, dropped by ABORT, and
// UNSTABLE_OFFSET_COMMIT to a RequireStable fetch meanwhile.
func TestReloadTxnOffsets(t *testing.T) {
	h := newHarness(t, 1)
	l := h.env.logs[0]
	txn := func(pid int64, part int32, off int64) coordinator.Record {
		r := offsetRecord("tg", "t", part, &offsetValue{Offset: off, LeaderEpoch: -1})
		r.Txn = &coordinator.TxnInfo{ProducerID: pid}
		return r
	}
	marker := func(pid int64, commit bool) coordinator.Record {
		return coordinator.Record{Txn: &coordinator.TxnInfo{ProducerID: pid, Marker: true, Commit: commit}}
	}
	l.Add(
		offsetRecord("tg", "t", 0, &offsetValue{Offset: 1, LeaderEpoch: -1}),
		txn(7, 0, 10), txn(8, 1, 20), txn(9, 2, 30),
		marker(7, true), marker(8, false),
	)
	l.SetLeader(false, 0)
	h.c.Poll()
	l.SetLeader(true, 5)
	h.c.Poll()
	h.waitLoaded("tg")
	fetch := func(p int32, stable bool) (int64, *kerr.Error) {
		g := h.c.fetchGroup("tg", nil, -1, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{p}}}, false, stable)
		tp := g.Topics[0].Partitions[0]
		e, _ := kerr.ErrorForCode(tp.ErrorCode).(*kerr.Error)
		return tp.Offset, e
	}
	if o, e := fetch(0, true); o != 10 || e != nil {
		t.Fatalf("committed transaction's offset: %d %v, want 10", o, e)
	}
	if o, e := fetch(1, true); o != -1 || e != nil {
		t.Fatalf("aborted transaction's offset: %d %v, want none", o, e)
	}
	if _, e := fetch(2, true); e != kerr.UnstableOffsetCommit {
		t.Fatalf("open transaction's offset, stable fetch: %v, want UNSTABLE_OFFSET_COMMIT", e)
	}
	if o, e := fetch(2, false); o != -1 || e != nil {
		t.Fatalf("open transaction's offset: %d %v, want none yet", o, e)
	}
	h.c.CompleteTxn(0, 9, true, int64(len(l.Records())))
	if o, e := fetch(2, true); o != 30 || e != nil {
		t.Fatalf("after the commit marker: %d %v, want 30", o, e)
	}
}

// txnCommit is a TxnOffsetCommit of producer pid of offset off for t/0 in
// group tg, answered.
func txnCommit(h *harness, pid, off int64) *kerr.Error {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.Generation = "tx", "tg", pid, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, off
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := h.c.TxnOffsetCommit(context.Background(), req)()
	e, _ := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode).(*kerr.Error)
	return e
}

// fetchT0 is tg's offset for t/0 (-1: none), with a stable fetch's error.
func fetchT0(h *harness, stable bool) (int64, *kerr.Error) {
	g := h.c.fetchGroup("tg", nil, -1, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}, false, stable)
	tp := g.Topics[0].Partitions[0]
	e, _ := kerr.ErrorForCode(tp.ErrorCode).(*kerr.Error)
	return tp.Offset, e
}

// A TxnOffsetCommit whose write fails leaves nothing pending (the group
// does not wait for a marker that will never carry those offsets); one
// whose write succeeds is pending until its marker.
func TestTxnOffsetCommitWriteFails(t *testing.T) {
	h := newHarness(t, 1)
	l := h.env.logs[0]
	l.FailAppends(kerr.NotEnoughReplicas)
	if e := txnCommit(h, 7, 10); e == nil {
		t.Fatal("TxnOffsetCommit succeeded with its write failing")
	}
	if _, e := fetchT0(h, true); e != nil {
		t.Fatalf("after the failed write: %v, want no pending offset", e)
	}
	l.FailAppends(nil)
	if e := txnCommit(h, 7, 20); e != nil {
		t.Fatalf("TxnOffsetCommit: %v", e)
	}
	if _, e := fetchT0(h, true); e != kerr.UnstableOffsetCommit {
		t.Fatalf("after the write: %v, want UNSTABLE_OFFSET_COMMIT", e)
	}
}

// The next transaction's TxnOffsetCommit can reach the group before the
// marker of the producer's previous one (KIP-890: EndTxn answers before
// its markers are written): refused meanwhile (CONCURRENT_TRANSACTIONS) or
// still out when the marker lands, it must leave the previous
// transaction's pending offset for that marker to materialize. It did not:
// the offset was lost, the group kept the one before, and the partition's
// next owner consumed again what the transaction had (franz-go's
// TestTxnEtl "saw double offset", in a full conformance run).
func TestTxnOffsetCommitBeforePreviousMarker(t *testing.T) {
	h := newHarness(t, 1)
	l := h.env.logs[0]
	marker := func(commit bool) { h.c.CompleteTxn(0, 7, commit, int64(len(l.Records()))) }
	want := func(what string, off int64, unstable bool) {
		t.Helper()
		if o, _ := fetchT0(h, false); o != off {
			t.Fatalf("%s: offset %d, want %d", what, o, off)
		}
		if _, e := fetchT0(h, true); (e == kerr.UnstableOffsetCommit) != unstable {
			t.Fatalf("%s: stable fetch %v, want unstable %v", what, e, unstable)
		}
	}
	// markerWhileOut commits off with its write held (before its records
	// are appended, or after), a marker landing meanwhile.
	markerWhileOut := func(off int64, appended, commit bool) {
		t.Helper()
		entered, release := l.gate.arm(appended)
		done := make(chan *kerr.Error, 1)
		go func() { done <- txnCommit(h, 7, off) }()
		<-entered
		marker(commit)
		close(release)
		if e := <-done; e != nil {
			t.Fatalf("TxnOffsetCommit: %v", e)
		}
	}
	if e := txnCommit(h, 7, 10); e != nil {
		t.Fatalf("TxnOffsetCommit: %v", e)
	}
	l.FailAppends(kerr.ConcurrentTransactions)
	if e := txnCommit(h, 7, 20); e == nil {
		t.Fatal("TxnOffsetCommit succeeded with its write refused")
	}
	l.FailAppends(nil)
	want("the next transaction's write refused", -1, true)
	marker(true)
	want("after the first transaction's marker", 10, false)

	// The next transaction's write out while the previous one's marker lands.
	if e := txnCommit(h, 7, 30); e != nil {
		t.Fatalf("TxnOffsetCommit: %v", e)
	}
	markerWhileOut(40, false, true)
	want("the marker landed before the next write", 30, true)
	marker(true)
	want("after the next transaction's marker", 40, false)

	// A write in the log before an abort marker, answered after it.
	markerWhileOut(50, true, false)
	want("a write the abort marker ended while it was out", 40, false)
}
