package controller

import (
	"slices"
	"testing"
)

// The planted bug elects outside the ISR through the whole stack (the
// active controller's policy travels in the replicated record).
func TestPlantedBugElectOutsideISRInCluster(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) { c.Bugs.ElectOutsideISR = true })
	tc.active()
	tc.waitUnfenced(1, 2, 3)
	tc.mustCreate(topicSpec{name: "b", assignment: [][]int32{{1, 2, 3}}})
	p := tc.part("b", 0)
	if _, err := tc.client(1).AlterISR(t.Context(), 1, tc.nodes[1].lc.Epoch(), ISRChange{
		Topic: "b", Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		NewISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	tc.stopBroker(1)
	waitFor(t, fenceBound, "leader 1 fenced", func() bool { return tc.img().Brokers[1].Fenced })
	p = tc.part("b", 0)
	if p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("with the bug: %+v, want out-of-sync 3 elected (2 was the clean choice)", p)
	}
}
