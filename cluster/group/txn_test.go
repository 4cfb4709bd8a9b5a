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
	h.c.CompleteTxn(0, 9, true)
	if o, e := fetch(2, true); o != 30 || e != nil {
		t.Fatalf("after the commit marker: %d %v, want 30", o, e)
	}
}

// A TxnOffsetCommit whose write fails leaves nothing pending (the group
// does not wait for a marker that will never carry those offsets); one
// whose write succeeds is pending until its marker.
func TestTxnOffsetCommitWriteFails(t *testing.T) {
	h := newHarness(t, 1)
	l := h.env.logs[0]
	commit := func(pid int64, off int64) *kmsg.TxnOffsetCommitResponse {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.Generation = "tx", "tg", pid, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return h.c.TxnOffsetCommit(context.Background(), req)()
	}
	stable := func() *kerr.Error {
		g := h.c.fetchGroup("tg", nil, -1, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}, false, true)
		e, _ := kerr.ErrorForCode(g.Topics[0].Partitions[0].ErrorCode).(*kerr.Error)
		return e
	}
	l.FailAppends(kerr.NotEnoughReplicas)
	if resp := commit(7, 10); resp.Topics[0].Partitions[0].ErrorCode == 0 {
		t.Fatal("TxnOffsetCommit succeeded with its write failing")
	}
	if e := stable(); e != nil {
		t.Fatalf("after the failed write: %v, want no pending offset", e)
	}
	l.FailAppends(nil)
	if resp := commit(7, 20); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	if e := stable(); e != kerr.UnstableOffsetCommit {
		t.Fatalf("after the write: %v, want UNSTABLE_OFFSET_COMMIT", e)
	}
}
