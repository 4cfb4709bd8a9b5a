package controller

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/meta"
)

func TestSessionExpiryFencesMovesLeadersShrinksISR(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	tc.active()
	tc.waitUnfenced(1, 2, 3)
	tc.mustCreate(topicSpec{name: "t", partitions: 3, rf: 3})
	victim := tc.part("t", 0).Leader
	before := map[int32]meta.Partition{}
	for p := int32(0); p < 3; p++ {
		before[p] = tc.part("t", p)
	}

	stopped := time.Now()
	tc.stopBroker(victim)
	time.Sleep(testSession / 2)
	if tc.img().Brokers[victim].Fenced {
		t.Fatalf("broker %d fenced after %v, before its %v session expired", victim, time.Since(stopped), testSession)
	}
	waitFor(t, fenceBound, "the silent broker to be fenced", func() bool {
		return tc.img().Brokers[victim].Fenced
	})
	since := time.Since(stopped)
	if since < testSession {
		t.Fatalf("fenced %v after the last heartbeat, before the %v session timeout", since, testSession)
	}
	t.Logf("fenced %v after the last heartbeat: %.2fx the session timeout", since, float64(since)/float64(testSession))

	img := tc.img()
	for p := int32(0); p < 3; p++ {
		now, old := img.Topics["t"].Partitions[p], before[p]
		if now.InISR(victim) || len(now.ISR) != 2 {
			t.Fatalf("p%d ISR %v still holds fenced %d", p, now.ISR, victim)
		}
		if old.Leader == victim {
			if now.Leader == victim || now.Leader == meta.NoLeader || now.LeaderEpoch != old.LeaderEpoch+1 {
				t.Fatalf("p%d led by the fenced broker: now %+v", p, now)
			}
		} else if now.Leader != old.Leader || now.LeaderEpoch != old.LeaderEpoch {
			t.Fatalf("p%d leader moved although its leader is alive: %+v -> %+v", p, old, now)
		}
		if now.PartitionEpoch <= old.PartitionEpoch {
			t.Fatalf("p%d partition epoch did not grow", p)
		}
	}

	// Silence the remaining brokers too: the ISR never goes empty, and a
	// partition whose last ISR member is gone goes offline (unclean off).
	for _, id := range []int32{1, 2, 3} {
		tc.stopBroker(id)
	}
	waitFor(t, fenceBound, "all brokers fenced", func() bool { return tc.img().FencedBrokers() == 3 })
	img = tc.img()
	if img.OfflinePartitions() != 3 {
		t.Fatalf("offline partitions %d, want 3", img.OfflinePartitions())
	}
	lastISR := map[int32]int32{}
	for p, ps := range img.Topics["t"].Partitions {
		if len(ps.ISR) != 1 {
			t.Fatalf("p%d ISR %v, want exactly the last member", p, ps.ISR)
		}
		lastISR[int32(p)] = ps.ISR[0]
	}

	// An out-of-sync replica returning does not bring a partition back;
	// its last ISR member does.
	ret := lastISR[0]
	var other int32
	for _, r := range img.Topics["t"].Partitions[0].Replicas {
		if r != ret {
			other = r
			break
		}
	}
	tc.startBroker(other)
	tc.waitUnfenced(other)
	if p := tc.part("t", 0); p.Leader != meta.NoLeader && p.Leader != ret {
		t.Fatalf("unclean off, yet out-of-sync %d leads p0: %+v", p.Leader, p)
	}
	tc.startBroker(ret)
	waitFor(t, waitLong, "the last ISR member to lead p0 again", func() bool {
		return tc.part("t", 0).Leader == ret
	})
	if p := tc.part("t", 0); !slices.Equal(p.ISR, []int32{ret}) {
		t.Fatalf("p0 after return %+v", p)
	}
}

func TestUncleanElection(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		name := "off"
		if unclean {
			name = "on"
		}
		t.Run(name, func(t *testing.T) {
			tc := newTestCluster(t, 3, nil)
			tc.active()
			tc.waitUnfenced(1, 2, 3)
			cfg := map[string]string{}
			if unclean {
				cfg[meta.ConfigUnclean] = "true"
			}
			tc.mustCreate(topicSpec{name: "u", assignment: [][]int32{{1, 2, 3}}, configs: cfg})
			// The leader drops both followers from the ISR (they lag).
			p := tc.part("u", 0)
			got, err := tc.client(1).AlterISR(t.Context(), 1, tc.nodes[1].lc.Epoch(), ISRChange{
				Topic: "u", Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1}})
			if err != nil || !slices.Equal(got.ISR, []int32{1}) {
				t.Fatalf("shrink: %+v %v", got, err)
			}
			tc.stopBroker(1)
			waitFor(t, fenceBound, "leader 1 fenced", func() bool { return tc.img().Brokers[1].Fenced })
			p = tc.part("u", 0)
			if !unclean {
				if p.Leader != meta.NoLeader || !slices.Equal(p.ISR, []int32{1}) {
					t.Fatalf("unclean off: %+v, want offline with ISR [1]", p)
				}
				// Stays offline while only out-of-sync replicas are alive.
				time.Sleep(testSession)
				if p2 := tc.part("u", 0); p2.Leader != meta.NoLeader {
					t.Fatalf("unclean off, elected %d", p2.Leader)
				}
				tc.startBroker(1)
				waitFor(t, waitLong, "ISR member 1 to lead again", func() bool { return tc.part("u", 0).Leader == 1 })
				if p2 := tc.part("u", 0); p2.LeaderEpoch != p.LeaderEpoch+1 {
					t.Fatalf("leader epoch %d, want %d", p2.LeaderEpoch, p.LeaderEpoch+1)
				}
				return
			}
			if p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 1 {
				t.Fatalf("unclean on: %+v, want leader 2, ISR [2], epoch 1", p)
			}
		})
	}
}

func TestControlledShutdownIsImmediate(t *testing.T) {
	// A session far longer than the test: only controlled shutdown can
	// explain the broker leaving ISRs.
	tc := newTestCluster(t, 3, func(c *Config) { c.SessionTimeout = time.Minute })
	tc.active()
	tc.waitUnfenced(1, 2, 3)
	tc.mustCreate(topicSpec{name: "c", partitions: 3, rf: 3})
	victim := tc.part("c", 1).Leader
	if len(tc.img().LeaderOf(victim)) == 0 {
		t.Fatal("victim leads nothing")
	}
	ctx := t.Context()
	if err := tc.nodes[victim].lc.ControlledShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	img := tc.img()
	if !img.Brokers[victim].ShuttingDown {
		t.Fatalf("broker %+v not shutting down", img.Brokers[victim])
	}
	if l := img.LeaderOf(victim); len(l) != 0 {
		t.Fatalf("still leads %v after ShouldShutdown", l)
	}
	for _, p := range img.Topics["c"].Partitions {
		if p.InISR(victim) || p.Leader == meta.NoLeader {
			t.Fatalf("partition %+v after controlled shutdown", p)
		}
	}
}

// A paused broker (SIGSTOP) keeps its epoch: fenced when its session
// expires, unfenced by its first heartbeat after resuming, without
// re-registering.
func TestPausedBrokerUnfencedOnResume(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	tc.active()
	tc.waitUnfenced(1, 2, 3)
	epoch := tc.nodes[2].lc.Epoch()
	tc.stopBroker(2) // "pause"
	waitFor(t, fenceBound, "paused broker fenced", func() bool { return tc.img().Brokers[2].Fenced })
	r, err := tc.client(2).Heartbeat(t.Context(), 2, epoch, int64(tc.img().Version), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.IsFenced || !r.IsCaughtUp {
		t.Fatalf("resumed heartbeat answered %+v", r)
	}
	if b := tc.img().Brokers[2]; b.Fenced || b.Epoch != epoch {
		t.Fatalf("after resume %+v, want unfenced with epoch %d", b, epoch)
	}
	// An older incarnation's heartbeat is refused.
	if _, err := tc.client(2).Heartbeat(t.Context(), 2, epoch-1, 0, false, false); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale heartbeat: %v", err)
	}
}
