package replica

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/meta"
	"gregor/cluster/producer"
	"gregor/cluster/storage"
)

// leaderOf1 is node 1 leading a one-replica partition of topic.
func leaderOf1(t *testing.T, topic string) *Partition {
	t.Helper()
	l, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(&Config{NodeID: 1, ReplicaLagMax: time.Minute}, topic, 0, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.Update(meta.Partition{Topic: topic, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}, 1)
	return p
}

// TestInternalTopicWriters: a client cannot produce to an internal topic
// (Kafka's "Cannot append to internal topic"), and a coordinator writes
// only there; so a follower or a rebuild, which cannot tell a batch's
// writer from the batch, can tell it from the topic.
func TestInternalTopicWriters(t *testing.T) {
	batch := func() []byte {
		return storage.Batch{Timestamp: 1, ProducerID: 5, ProducerEpoch: 0, BaseSequence: 0, Values: [][]byte{[]byte("v")}}.Encode()
	}
	for _, c := range []struct {
		topic  string
		origin producer.Origin
		want   *kerr.Error
	}{
		{meta.OffsetsTopic, producer.Client, kerr.InvalidTopicException},
		{meta.TransactionStateTopic, producer.Client, kerr.InvalidTopicException},
		{"orders", producer.Coordinator, kerr.InvalidTopicException},
		{meta.OffsetsTopic, producer.Coordinator, nil},
		{"orders", producer.Client, nil},
	} {
		p := leaderOf1(t, c.topic)
		if _, e := p.AppendAsLeader(batch(), AppendOptions{Acks: 1, Origin: c.origin}); e != c.want {
			t.Errorf("%s written by origin %d: %v, want %v", c.topic, c.origin, e, c.want)
		}
	}
	// Two coordinator batches at sequence 0 in one epoch (two offset
	// commits of one producer) pass the checks, invariants included, and a
	// rebuild from the log agrees.
	p := leaderOf1(t, meta.OffsetsTopic)
	for i := range 2 {
		if _, e := p.AppendAsLeader(batch(), AppendOptions{Acks: 1, Origin: producer.Coordinator}); e != nil {
			t.Fatalf("coordinator batch %d: %v", i, e)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.rebuildProducers(); err != nil {
		t.Fatal(err)
	}
	if err := p.invariants(); err != nil {
		t.Fatalf("after a rebuild: %v", err)
	}
}

// TestLSOInvariantsCatch: with producer 5's transaction open at offset 3
// and the HW at 4, the LSO is 3; the check refuses every other value: the
// HW (what lso-past-open-txn answers), past the HW, below any transaction.
// With the bug planted only the HW bound is checked: the harness must
// catch the bug, not the broker's own check.
func TestLSOInvariantsCatch(t *testing.T) {
	p := leaderOf1(t, "t")
	if _, e := p.AppendAsLeader(storage.NewBatch(0, 0, []byte("a"), []byte("b"), []byte("c")), AppendOptions{Acks: 1}); e != nil {
		t.Fatal(e)
	}
	guard, e := p.BeginVerification(5, 0, 0, false)
	if e != nil || guard == 0 {
		t.Fatalf("verification: guard %d, %v", guard, e)
	}
	txnl := storage.Batch{Timestamp: 1, ProducerID: 5, BaseSequence: 0, Attributes: storage.AttrTransactional, Values: [][]byte{[]byte("t")}}
	if _, e := p.AppendAsLeader(txnl.Encode(), AppendOptions{Acks: 1, Guard: guard}); e != nil {
		t.Fatal(e)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if lso := p.lso(); p.hw != 4 || lso != 3 {
		t.Fatalf("healthy partition: HW %d, LSO %d; want 4, 3", p.hw, lso)
	}
	if err := p.invariants(); err != nil {
		t.Fatalf("healthy partition: %v", err)
	}
	for _, c := range []struct {
		lso  int64
		want string
	}{
		{4, "LSO 4 past producer 5's transaction from 3"},
		{5, "LSO 5 past the HW 4"},
		{2, "LSO 2 is neither the HW 4 nor where an unstable transaction starts"},
	} {
		if err := p.lsoInvariants(c.lso); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LSO %d: check said %v, want %q", c.lso, err, c.want)
		}
	}
	p.cfg.Bugs.LSOPastOpenTxn = true
	if err := p.lsoInvariants(4); err != nil {
		t.Errorf("the planted bug's LSO refused by the check: %v", err)
	}
	if err := p.lsoInvariants(5); err == nil {
		t.Error("LSO past the HW accepted with the bug planted")
	}
}

// TestIdleFollowerStaysInSync: as Kafka's ReplicaState.isCaughtUp, a
// follower that last fetched at the leader's LEO stays in the ISR however
// long it has been silent; once a write leaves it behind, replica.lag.time.max.ms
// after its last catch-up it is asked out.
func TestIdleFollowerStaysInSync(t *testing.T) {
	l, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	cfg := &Config{NodeID: 1, ReplicaLagMax: time.Second, Now: func() time.Time { return now },
		AlterISR: func(context.Context, meta.Partition, []int32) {}}
	p, err := Open(cfg, "idle", 0, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.Update(meta.Partition{Topic: "idle", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1}, 1)
	if r := p.ReadForFollower(2, 0, 1<<20, 1); r.Err != nil {
		t.Fatal(r.Err)
	}
	now = now.Add(time.Hour)
	if p.MaybeShrinkISR() {
		t.Fatal("an idle follower at the leader's LEO was asked out of the ISR")
	}
	b := storage.Batch{Timestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Values: [][]byte{[]byte("v")}}.Encode()
	if _, e := p.AppendAsLeader(b, AppendOptions{Acks: 1, Origin: producer.Client}); e != nil {
		t.Fatal(e)
	}
	if !p.MaybeShrinkISR() {
		t.Fatal("a follower behind the leader and silent past replica.lag.time.max.ms stayed in the ISR")
	}
	p.mu.Lock()
	pending := p.pendingISR
	p.mu.Unlock()
	if !slices.Equal(pending, []int32{1}) {
		t.Fatalf("pending ISR %v, want [1]", pending)
	}
}

// TestNewLeaderWithLaggingHWHidesItsEnd: a follower learns the HW one fetch
// late, so when it takes over, its HW can trail records the old leader
// acknowledged. Until its followers fetch, the latest offset is
// OFFSET_NOT_AVAILABLE (KIP-207), not the stale HW: a reader that took the
// stale HW for the end would stop short of acknowledged records (issue 28's
// second false alarm: a final read ended 13 acknowledged records early).
func TestNewLeaderWithLaggingHWHidesItsEnd(t *testing.T) {
	l, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{NodeID: 2, ReplicaLagMax: time.Minute, AlterISR: func(context.Context, meta.Partition, []int32) {}}
	p, err := Open(cfg, "t", 0, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	st := meta.Partition{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1}
	p.Update(st, 1)
	b := storage.Batch{Timestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Values: [][]byte{[]byte("a"), []byte("b"), []byte("c")}}.Encode()
	if err := p.AppendAsFollower(1, 1, b, 1); err != nil {
		t.Fatal(err)
	}
	st.Leader, st.LeaderEpoch = 2, 2
	p.Update(st, 1)
	if o := p.ListOffset(-1, 2, ReadUncommitted); o.Err != kerr.OffsetNotAvailable {
		t.Fatalf("latest offset with HW 1 below the epoch start 3: %+v, want OFFSET_NOT_AVAILABLE", o)
	}
	if o := p.ListOffset(-2, 2, ReadUncommitted); o.Err != nil || o.Offset != 0 {
		t.Fatalf("earliest offset: %+v, want 0", o)
	}
	if r := p.ReadForFollower(1, 3, 1<<20, 2); r.Err != nil {
		t.Fatal(r.Err)
	}
	if o := p.ListOffset(-1, 2, ReadUncommitted); o.Err != nil || o.Offset != 3 {
		t.Fatalf("latest offset once the follower caught up: %+v, want 3", o)
	}
}

// TestUpdateAssertsMinISR: a min ISR below 1 reaching a replica passed every
// validation of the config layers: Update panics naming it, and the replica
// keeps the min ISR it had.
func TestUpdateAssertsMinISR(t *testing.T) {
	p := leaderOf1(t, "t")
	for _, bad := range []int{0, -1} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, "invariant broken") || !strings.Contains(s, "min.insync.replicas") {
					t.Fatalf("min ISR %d: recovered %v, want the broken invariant named", bad, r)
				}
			}()
			p.Update(meta.Partition{Topic: "t", Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}, bad)
		}()
		if p.MinISR() != 1 {
			t.Fatalf("min ISR %d after the refused update, want 1", p.MinISR())
		}
	}
}

// TestRejoiningFollowerCatchesAMovingHW: with the ISR down to the leader
// (acks=1 after a strand, or a restarted sole-ISR leader), the HW is the
// leader's LEO and moves with every append. A follower that fetches up to
// the LEO while writes keep landing in each round trip would never reach
// it, and never rejoin, were the HW not held at its LEO once it has caught
// up (Kafka's maybeIncrementLeaderHW, shouldWaitForReplicaToJoinIsr). Make
// check's runs so waited out a minute's recovery with producers writing.
// A follower its broker's fencing makes ineligible holds nothing back.
func TestRejoiningFollowerCatchesAMovingHW(t *testing.T) {
	for _, eligible := range []bool{true, false} {
		l, err := storage.Open(t.TempDir(), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1000, 0)
		// AlterISR runs on a goroutine of its own: its requests come here.
		asked := make(chan []int32, 10)
		cfg := &Config{NodeID: 1, ReplicaLagMax: time.Second, Now: func() time.Time { return now },
			IsrEligible: func(int32) bool { return eligible },
			AlterISR:    func(_ context.Context, _ meta.Partition, isr []int32) { asked <- isr }}
		p, err := Open(cfg, "rejoin", 0, l)
		if err != nil {
			t.Fatal(err)
		}
		p.Update(meta.Partition{Topic: "rejoin", Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1}, 1)
		write := func() {
			b := storage.Batch{Timestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Values: [][]byte{[]byte("v")}}.Encode()
			if _, e := p.AppendAsLeader(b, AppendOptions{Acks: 1, Origin: producer.Client}); e != nil {
				t.Fatal(e)
			}
		}
		// Each round: the follower fetches up to the LEO it last saw, and a
		// write lands before its next fetch.
		var at int64
		for round := 0; round < 5 && !p.isrPending(); round++ {
			write()
			now = now.Add(100 * time.Millisecond)
			r := p.ReadForFollower(2, at, 1<<20, 1)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			at = r.LEO
		}
		_, hw, leo := p.Offsets()
		pending := p.isrPending()
		p.Close()
		if eligible {
			select {
			case isr := <-asked:
				if !slices.Equal(isr, []int32{1, 2}) {
					t.Fatalf("eligible follower: ISR request %v, want [1 2]", isr)
				}
			case <-time.After(10 * time.Second): // a bound, not a timing: the request is already made
				t.Fatalf("eligible follower fetching behind a moving LEO: no ISR request (hw %d, leo %d)", hw, leo)
			}
		}
		if !eligible && (pending || hw != leo) {
			t.Fatalf("ineligible follower: ISR request pending %v, hw %d of leo %d; want none, and the HW at the LEO", pending, hw, leo)
		}
	}
}

// isrPending says whether the leader has an ISR change in flight.
func (p *Partition) isrPending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pendingISR != nil
}
