package replica

import (
	"os"
	"strings"
	"testing"
	"time"

	"gregor/cluster/invariant"
	"gregor/cluster/meta"
	"gregor/cluster/storage"
)

func TestMain(m *testing.M) {
	invariant.Enable()
	os.Exit(m.Run())
}

// leaderOf2 is node 1 leading a partition replicated on 1 and 2, with three
// records appended and follower 2 caught up to offset 2.
func leaderOf2(t *testing.T) *Partition {
	t.Helper()
	l, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(&Config{NodeID: 1, ReplicaLagMax: time.Minute}, "t", 0, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.Update(meta.Partition{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, 1)
	if _, e := p.AppendAsLeader(storage.NewBatch(0, 0, []byte("a"), []byte("b"), []byte("c")), AppendOptions{Acks: 1}); e != nil {
		t.Fatal(e)
	}
	if r := p.ReadForFollower(2, 2, 1<<20, 0); r.Err != nil {
		t.Fatal(r.Err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.invariants(); err != nil || p.hw != 2 {
		t.Fatalf("healthy partition: hw %d, %v", p.hw, err)
	}
	return p
}

// TestReplicaInvariantsCatch breaks each replica invariant on purpose and
// sees the check name it.
func TestReplicaInvariantsCatch(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(p *Partition)
		want   string
	}{
		{"hw past LEO", func(p *Partition) { p.hw = 4 }, "outside [0, LEO"},
		{"negative hw", func(p *Partition) { p.hw = -1 }, "outside [0, LEO"},
		{"leader hw goes back", func(p *Partition) { p.hw = 1 }, "went back from 2 to 1"},
		{"ISR outside replicas", func(p *Partition) { p.state.ISR = []int32{1, 3} }, "not within replicas"},
		{"empty ISR", func(p *Partition) { p.state.ISR = nil }, "empty ISR"},
		{"leader outside ISR", func(p *Partition) { p.state.ISR = []int32{2} }, "outside ISR"},
		{"replica twice", func(p *Partition) { p.state.Replicas = []int32{1, 2, 2} }, "twice"},
		{"node not a replica", func(p *Partition) {
			p.state.Replicas, p.state.ISR, p.state.Leader = []int32{2, 3}, []int32{2}, 2
			p.followers, p.pendingISR = nil, nil
		}, "not in replicas"},
		{"follower untracked", func(p *Partition) { delete(p.followers, 2) }, "tracks 0 followers"},
		{"stranger tracked", func(p *Partition) { p.followers[3] = p.followers[2]; delete(p.followers, 2) }, "not another replica"},
		{"follower past leader LEO", func(p *Partition) { p.followers[2].leo = 9 }, "outside [-1, leader LEO"},
		{"fetch from the future", func(p *Partition) { p.followers[2].leaderLEOAtLastFetch = 9 }, "past today's"},
		{"caught up after last fetch", func(p *Partition) {
			p.followers[2].lastCaughtUp = p.followers[2].lastFetch.Add(time.Second)
		}, "after its last fetch"},
		{"pending ISR drops leader", func(p *Partition) { p.pendingISR = []int32{2} }, "drops the leader"},
		{"pending ISR outside replicas", func(p *Partition) { p.pendingISR = []int32{1, 5} }, "not within replicas"},
		{"follower tracking followers", func(p *Partition) {
			p.state.Leader, p.state.LeaderEpoch = 2, 1
		}, "not leading, yet tracking"},
		{"negative epoch", func(p *Partition) { p.state.PartitionEpoch = -3 }, "negative epoch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := leaderOf2(t)
			p.mu.Lock()
			defer p.mu.Unlock()
			c.break_(p)
			err := p.invariants()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("check said %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestReplicaInvariantHookRuns: the check runs after a change on the
// partition's own paths, not only when a test calls it.
func TestReplicaInvariantHookRuns(t *testing.T) {
	p := leaderOf2(t)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "not within replicas") {
			t.Fatalf("a published ISR outside the replicas did not stop the broker: %v", r)
		}
	}()
	p.Update(meta.Partition{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 3}, Leader: 1, PartitionEpoch: 1}, 1)
}
