package wire

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
	"gregor/cluster/replica"
	"gregor/cluster/storage"
	"gregor/cluster/txn"
)

// markerRaceBackend leads one partition and answers verifications itself;
// the first one lands the producer's previous transaction's marker on the
// partition while it is "at the coordinator".
type markerRaceBackend struct {
	emptyBackend
	p     *replica.Partition
	coord *txn.Coordinator
	calls atomic.Int32
	pid   int64
}

func (b *markerRaceBackend) Partition(topic string, index int32) *replica.Partition {
	if topic == b.p.Topic && index == b.p.Index {
		return b.p
	}
	return nil
}
func (b *markerRaceBackend) TxnCoordinator() *txn.Coordinator { return b.coord }
func (b *markerRaceBackend) FindTxnCoordinator(context.Context, string) (Coordinator, *kerr.Error) {
	return Coordinator{}, kerr.CoordinatorNotAvailable
}
func (b *markerRaceBackend) TransactionVersion() int16 { return 2 }
func (b *markerRaceBackend) VerifyTxn(_ context.Context, _ string, _ int64, epoch int16, parts []txn.TopicPartition, _ bool) (map[txn.TopicPartition]*kerr.Error, *kerr.Error) {
	if b.calls.Add(1) == 1 {
		// The previous transaction's marker (version 2: at the bumped
		// epoch, the one the next transaction produces at) lands now; the
		// coordinator then completes that transaction and adds the
		// partition to the next.
		if _, e := b.p.AppendMarker(b.pid, epoch, storage.Marker{Commit: true}, 2, time.Now()); e != nil {
			panic(e)
		}
	}
	out := map[txn.TopicPartition]*kerr.Error{}
	for _, tp := range parts {
		out[tp] = nil
	}
	return out, nil
}

// TestProduceVerifyRacedByMarker: with transaction version 2 a producer's
// next transaction produces at the epoch its previous one's markers carry.
// A produce that reaches a partition before that marker starts a
// verification there; the marker, landing while the coordinator is asked,
// retires the verification's guard, and the coordinator, which adds a
// partition only once every marker is written, adds it to the next
// transaction. The produce is verified anew and appended, not refused with
// INVALID_TXN_STATE (fatal to a KIP-890 client: franz-go's TestTxnEtl
// failed on it under load).
func TestProduceVerifyRacedByMarker(t *testing.T) {
	l, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := replica.Open(&replica.Config{NodeID: 1, ReplicaLagMax: time.Minute, Logger: testServer().log}, "t", 0, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.Update(meta.Partition{Topic: "t", Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}, 1)

	const pid = 7
	txnBatch := func(epoch int16, seq int32) []byte {
		return storage.Batch{Timestamp: 1, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
			Attributes: storage.AttrTransactional, Values: [][]byte{[]byte("v")}}.Encode()
	}
	// The previous transaction, at epoch 0, open on the partition.
	guard, e := p.BeginVerification(pid, 0, 0, true)
	if e != nil || guard == 0 {
		t.Fatalf("verification: guard %d, %v", guard, e)
	}
	if _, e := p.AppendAsLeader(txnBatch(0, 0), replica.AppendOptions{Acks: 1, Guard: guard}); e != nil {
		t.Fatal(e)
	}

	b := &markerRaceBackend{p: p, coord: txn.New(txn.Config{}, nil), pid: pid}
	s := NewServer(b, testServer().opts)
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr("x")
	req.Acks = 1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = txnBatch(1, 0) // the next transaction: epoch 1, sequence 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	hdr, dreq, _, err := s.decode(frameFor(req, 12))
	if err != nil {
		t.Fatal(err)
	}
	r := s.dispatch(context.Background(), hdr, dreq)
	if r.later != nil {
		r.resp = r.later()
	}
	resp := r.resp.(*kmsg.ProduceResponse)
	if e := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); e != nil {
		t.Fatalf("the next transaction's produce: %v (coordinator asked %d times), want it appended", e, b.calls.Load())
	}
	if n := b.calls.Load(); n != 2 {
		t.Fatalf("coordinator asked %d times, want 2 (once more under a fresh guard)", n)
	}
}
