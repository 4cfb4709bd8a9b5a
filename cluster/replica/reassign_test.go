package replica

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"gregor/cluster/meta"
	"gregor/cluster/storage"
)

// reassigningLeader is node 1 leading a partition on 1 and 2 (three records,
// HW 3) that the controller moves to 1 and 3 (KIP-455): the published state
// during the move has replicas [1 3 2], adding 3, removing 2. Replica 3 then
// catches up, and the leader asks for ISR [1 2 3]; asked returns the ISRs
// the leader asked for. Every Update runs the invariant checks (TestMain).
func reassigningLeader(t *testing.T) (p *Partition, asked chan []int32) {
	t.Helper()
	l, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	asked = make(chan []int32, 4)
	cfg := &Config{NodeID: 1, ReplicaLagMax: time.Minute,
		AlterISR: func(_ context.Context, _ meta.Partition, isr []int32) { asked <- isr }}
	p, err = Open(cfg, "t", 0, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.Update(meta.Partition{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, 1)
	if _, e := p.AppendAsLeader(storage.NewBatch(0, 0, []byte("a"), []byte("b"), []byte("c")), AppendOptions{Acks: 1}); e != nil {
		t.Fatal(e)
	}
	if r := p.ReadForFollower(2, 3, 1<<20, 0); r.Err != nil || r.HW != 3 {
		t.Fatalf("follower 2 caught up: hw %d, %v", r.HW, r.Err)
	}
	p.Update(meta.Partition{Topic: "t", Replicas: []int32{1, 3, 2}, ISR: []int32{1, 2}, Leader: 1,
		PartitionEpoch: 1, Adding: []int32{3}, Removing: []int32{2}}, 1)
	if got := slices.Sorted(maps.Keys(p.followers)); !slices.Equal(got, []int32{2, 3}) {
		t.Fatalf("during the move the leader tracks %v, want the other replicas [2 3]", got)
	}
	if r := p.ReadForFollower(3, 3, 1<<20, 0); r.Err != nil {
		t.Fatalf("adding replica 3 fetches: %v", r.Err)
	}
	select {
	case isr := <-asked:
		if !slices.Equal(isr, []int32{1, 2, 3}) {
			t.Fatalf("leader asked for ISR %v, want [1 2 3]", isr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("caught-up replica 3 was never proposed for the ISR")
	}
	return p, asked
}

// A reassignment's completion and its cancel both change the replicas
// while the leader's ISR expansion is pending; the leader then tracks
// exactly its new other replicas, and drops the pending ISR, which named a
// replica that is gone (Kafka's Partition.makeLeader takes the committed
// state from every newer partition epoch).
func TestReassignmentKeepsLeaderInvariants(t *testing.T) {
	for _, c := range []struct {
		name     string
		replicas []int32
		isr      []int32
	}{
		// The expansion completed the move: 3 in, 2 out.
		{"complete", []int32{1, 3}, []int32{1, 3}},
		// The move was cancelled before the expansion applied.
		{"cancel", []int32{1, 2}, []int32{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := reassigningLeader(t)
			p.Update(meta.Partition{Topic: "t", Replicas: c.replicas, ISR: c.isr, Leader: 1, PartitionEpoch: 2}, 1)
			p.mu.Lock()
			defer p.mu.Unlock()
			if err := p.invariants(); err != nil {
				t.Fatal(err)
			}
			want := slices.DeleteFunc(slices.Clone(c.replicas), func(r int32) bool { return r == 1 })
			if got := slices.Sorted(maps.Keys(p.followers)); !slices.Equal(got, want) {
				t.Fatalf("leader tracks %v, want %v", got, want)
			}
			if p.pendingISR != nil || p.hw != 3 {
				t.Fatalf("pending ISR %v, hw %d: want none, 3", p.pendingISR, p.hw)
			}
		})
	}
}

// A refusal clears only the pending ISR of the request it answers: one
// made from an older state than the published one is stale, and the
// pending ISR now belongs to a later request.
func TestClearPendingISROnlyForItsRequest(t *testing.T) {
	p, _ := reassigningLeader(t)
	sent := p.State()
	older := sent
	older.PartitionEpoch--
	p.ClearPendingISR(older)
	p.mu.Lock()
	pending := slices.Clone(p.pendingISR)
	p.mu.Unlock()
	if !slices.Equal(pending, []int32{1, 2, 3}) {
		t.Fatalf("a stale refusal cleared the pending ISR: %v", pending)
	}
	p.ClearPendingISR(sent)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pendingISR != nil {
		t.Fatalf("the refusal of the pending request left %v", p.pendingISR)
	}
}

// A refusal answered after the partition closed (its broker killed during
// the AlterPartition round trip) changes nothing, and the always-on check
// does not read the closed log's LEO (-1) as below the HW: a sim run under
// composed kills panicked so (hw=815 leo=-1).
func TestClearPendingISRAfterClose(t *testing.T) {
	p, _ := reassigningLeader(t)
	sent := p.State()
	p.mu.Lock()
	hw := p.hw
	p.mu.Unlock()
	if hw <= 0 {
		t.Fatalf("hw %d: the leader should hold records", hw)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p.ClearPendingISR(sent)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hw != hw {
		t.Fatalf("hw %d after close, was %d", p.hw, hw)
	}
	if leo, broken := p.hwPastLEO(); broken {
		t.Fatalf("closed partition: hw %d read as past LEO %d", p.hw, leo)
	}
}
