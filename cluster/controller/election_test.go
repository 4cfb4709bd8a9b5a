package controller

import (
	"slices"
	"testing"

	"gregor/cluster/meta"
)

func liveSet(ids ...int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(ids, id) }
}

func TestElect(t *testing.T) {
	p := meta.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: meta.NoLeader}
	cases := []struct {
		name       string
		live       []int32
		unclean    bool
		bug        bool
		wantLeader int32
		wantISR    []int32
	}{
		{"clean takes first ISR member in replica order", []int32{1, 2, 3}, false, false, 2, []int32{2, 3}},
		{"clean skips a dead ISR member", []int32{1, 3}, false, false, 3, []int32{2, 3}},
		{"no live ISR member, unclean off: offline", []int32{1}, false, false, meta.NoLeader, []int32{2, 3}},
		{"no live ISR member, unclean on: out-of-sync replica, ISR=[it]", []int32{1}, true, false, 1, []int32{1}},
		{"unclean on but a clean choice exists: clean wins", []int32{1, 3}, true, false, 3, []int32{2, 3}},
		{"nobody live, unclean on: offline", nil, true, false, meta.NoLeader, []int32{2, 3}},
		{"planted bug prefers out-of-ISR live replica", []int32{1, 2, 3}, false, true, 1, []int32{1}},
		{"planted bug falls back to clean when all live are in ISR", []int32{2, 3}, false, true, 2, []int32{2, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, isr := elect(p, liveSet(c.live...), c.unclean, electPolicy{ElectOutsideISR: c.bug})
			if l != c.wantLeader || !slices.Equal(isr, c.wantISR) {
				t.Fatalf("elect = %d %v, want %d %v", l, isr, c.wantLeader, c.wantISR)
			}
		})
	}
}

func TestWithoutBrokerNeverEmptiesISR(t *testing.T) {
	p := meta.Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9}
	if !withoutBroker(&p, 1, liveSet(2), false, electPolicy{}) {
		t.Fatal("no change reported")
	}
	if !slices.Equal(p.ISR, []int32{1}) || p.Leader != meta.NoLeader {
		t.Fatalf("got leader %d ISR %v, want offline with ISR [1]", p.Leader, p.ISR)
	}
	if p.LeaderEpoch != 5 || p.PartitionEpoch != 10 {
		t.Fatalf("epochs %d/%d, want 5/10", p.LeaderEpoch, p.PartitionEpoch)
	}
	// The ISR member returns: electIfOffline brings it back, another epoch.
	if !electIfOffline(&p, liveSet(1, 2), false, electPolicy{}) || p.Leader != 1 || p.LeaderEpoch != 6 {
		t.Fatalf("after return: leader %d epoch %d, want 1/6", p.Leader, p.LeaderEpoch)
	}
}

func TestWithoutBrokerFollowerOnlyShrinks(t *testing.T) {
	p := meta.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}
	withoutBroker(&p, 2, liveSet(1, 3), false, electPolicy{})
	if p.Leader != 1 || p.LeaderEpoch != 0 || !slices.Equal(p.ISR, []int32{1, 3}) || p.PartitionEpoch != 1 {
		t.Fatalf("got %+v", p)
	}
}
