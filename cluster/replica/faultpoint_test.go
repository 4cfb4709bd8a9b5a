package replica

import (
	"context"
	"sync"
	"testing"
	"time"

	"gregor/cluster/faultpoint"
	"gregor/cluster/meta"
	"gregor/cluster/storage"
)

// The replica's fault points name the node each step is about
// (faultpoint.Attrs.Broker, what an arm aimed AimAbout acts on): the
// follower an expansion asks for and adds, each follower a shrink drops,
// and the slowest ISR follower when the HW moves.
func TestReplicaPointsNameTheFollowerTheyAreAbout(t *testing.T) {
	var mu sync.Mutex
	about := map[faultpoint.Point][]int32{}
	faultpoint.Install(1, faultpoint.Handlers{Record: func(f faultpoint.Firing) error {
		mu.Lock()
		defer mu.Unlock()
		about[f.Point] = append(about[f.Point], f.Broker)
		return nil
	}})
	defer faultpoint.Uninstall(1)
	var arms []faultpoint.Arm
	for _, p := range []faultpoint.Point{faultpoint.ISRExpandRequested, faultpoint.ISRExpandApplied, faultpoint.ISRShrinkApplied, faultpoint.HWAdvanced} {
		arms = append(arms, faultpoint.Arm{ID: string(p), Point: p, Action: faultpoint.Cut, Max: 100}) // no Cut handler: recorded only
	}
	if err := faultpoint.Set(1, arms, nil); err != nil {
		t.Fatal(err)
	}
	l, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan []int32, 4)
	p, err := Open(&Config{NodeID: 1, ReplicaLagMax: time.Minute,
		AlterISR: func(_ context.Context, _ meta.Partition, isr []int32) { asked <- isr }}, "t", 0, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.Update(meta.Partition{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, 1)
	if _, e := p.AppendAsLeader(storage.NewBatch(0, 0, []byte("a"), []byte("b")), AppendOptions{Acks: 1}); e != nil {
		t.Fatal(e)
	}
	p.ReadForFollower(2, 2, 1<<20, 0)
	p.ReadForFollower(3, 1, 1<<20, 0) // 3 is the slowest: the HW moves to its LEO, 1
	p.Update(meta.Partition{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, PartitionEpoch: 1}, 1)
	p.ReadForFollower(3, 2, 1<<20, 0) // 3 caught up: the leader asks to re-admit it
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the caught-up follower was never proposed for the ISR")
	}
	p.Update(meta.Partition{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, PartitionEpoch: 2}, 1)
	mu.Lock()
	defer mu.Unlock()
	want := map[faultpoint.Point]int32{faultpoint.ISRShrinkApplied: 3, faultpoint.ISRExpandRequested: 3, faultpoint.ISRExpandApplied: 3}
	for pt, w := range want {
		if got := about[pt]; len(got) != 1 || got[0] != w {
			t.Errorf("%s about %v, want [%d]", pt, got, w)
		}
	}
	if got := about[faultpoint.HWAdvanced]; len(got) == 0 || got[0] != 3 {
		t.Errorf("hw-advanced about %v, want 3 (the slowest ISR follower) first", got)
	}
}
