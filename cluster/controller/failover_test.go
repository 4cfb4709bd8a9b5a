package controller

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestControllerFailoverAndRestart(t *testing.T) {
	// Snapshot often and keep few logs, so that the restarted node needs
	// its own snapshot (Restore) and the leader's (InstallSnapshot).
	tc := newTestCluster(t, 3, func(c *Config) {
		c.SnapshotThreshold, c.TrailingLogs, c.SnapshotInterval = 4, 2, 200*time.Millisecond
	})
	old := tc.active()
	tc.waitUnfenced(1, 2, 3)
	tc.mustCreate(topicSpec{name: "f", partitions: 3, rf: 3})
	tc.converged()

	crashed := time.Now()
	tc.crashNode(old.id) // controller and broker die together (a kill)
	next := tc.active()
	t.Logf("new active controller after %v (%.1fx the raft election timeout)",
		time.Since(crashed), float64(time.Since(crashed))/float64(testRaftTimeout))
	if next.id == old.id {
		t.Fatal("crashed node still active")
	}
	if _, ok := next.c.Image().Topics["f"]; !ok {
		t.Fatal("topic lost in failover")
	}
	// The dead broker's session expires on the new controller too, and its
	// leaderships move.
	waitFor(t, fenceBound+2*testRaftTimeout, "the dead broker fenced by the new controller", func() bool {
		return tc.img().Brokers[old.id].Fenced
	})
	img := tc.img()
	if l := img.LeaderOf(old.id); len(l) != 0 {
		t.Fatalf("dead broker still leads %v", l)
	}
	// Survivors keep heartbeating to the new controller: still unfenced
	// well past a session timeout.
	time.Sleep(testSession)
	for _, n := range tc.nodes {
		if n.id != old.id && tc.img().Brokers[n.id].Fenced {
			t.Fatalf("live broker %d fenced after failover", n.id)
		}
	}

	// Restart from the data dir: the node catches up and its broker rejoins.
	oldEpoch := img.Brokers[old.id].Epoch
	tc.mustCreate(topicSpec{name: "while-down", partitions: 1, rf: 2})
	for _, n := range []string{"d1", "d2", "d3", "d4", "d5", "d6"} {
		tc.mustCreate(topicSpec{name: n, partitions: 1, rf: 1})
	}
	time.Sleep(4 * 200 * time.Millisecond) // a few snapshot intervals
	tc.startNode(old.id, nil)
	tc.startBroker(old.id)
	tc.waitUnfenced(old.id)
	got := tc.converged()
	if _, ok := got.Topics["while-down"]; !ok || len(got.Topics) != 8 {
		t.Fatal("restarted node missed a topic created while it was down")
	}
	snaps, _ := raft.NewFileSnapshotStore(old.dir, 2, io.Discard)
	if list, err := snaps.List(); err != nil || len(list) == 0 {
		t.Fatalf("restarted node holds no snapshot (%v): the snapshot path went untested", err)
	}
	if got.Brokers[old.id].Epoch <= oldEpoch {
		t.Fatalf("re-registration epoch %d, want > %d", got.Brokers[old.id].Epoch, oldEpoch)
	}
}

func TestNetworkPartitionIsolatesActiveController(t *testing.T) {
	for _, mode := range []string{"reset", "stall"} {
		t.Run(mode, func(t *testing.T) { testIsolateActive(t, mode == "stall") })
	}
}

func testIsolateActive(t *testing.T, stall bool) {
	tc := newTestCluster(t, 3, nil)
	tc.fnet.mu.Lock()
	tc.fnet.stall = stall
	tc.fnet.mu.Unlock()
	old := tc.active()
	tc.waitUnfenced(1, 2, 3)
	tc.mustCreate(topicSpec{name: "p", partitions: 1, rf: 3})

	tc.fnet.isolate(old.id)
	var next *testNode
	waitFor(t, waitLong, "the majority to elect a new active controller", func() bool {
		for _, n := range tc.nodes {
			if n.id != old.id && n.c.IsActive() {
				next = n
				return true
			}
		}
		return false
	})
	// The cut-off node loses its lease and stops acting as controller.
	waitFor(t, waitLong, "the isolated node to step down", func() bool { return !old.c.IsActive() })
	// The majority makes progress without it.
	if rt := tc.createTopic(next.id, topicSpec{name: "majority", partitions: 1, rf: 2}); rt.ErrorCode != 0 {
		t.Fatalf("create on the majority side: code %d", rt.ErrorCode)
	}
	if _, ok := old.c.Image().Topics["majority"]; ok {
		t.Fatal("isolated node applied a record it cannot have received")
	}
	tc.fnet.heal()
	if _, ok := tc.converged().Topics["majority"]; !ok {
		t.Fatal("healed node did not catch up")
	}
}
