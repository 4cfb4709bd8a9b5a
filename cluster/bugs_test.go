package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// laggingFollowerCluster starts 2 brokers (+1 controller-only voter) with
// planted bugs, an RF 2 topic with min ISR 2 and a long lag timeout, and
// cuts the follower off from the leader: the ISR still holds the follower,
// which has nothing new. It returns the cluster and a seeded value count.
func laggingFollowerCluster(t *testing.T, bugs ...string) *testCluster {
	planted, err := ParseBugs(bugs)
	if err != nil {
		t.Fatal(err)
	}
	tc := startClusterWith(t, 2, 1, func(c *Config) { c.ReplicaLagMax = time.Minute; c.Bugs = planted })
	two := "2"
	tc.createTopic("bug", 1, 2, map[string]*string{"min.insync.replicas": &two})
	all := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := 0; i < 3; i++ {
		if _, err := produce(all, "bug", fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	a := int(tc.leader("bug", 0))
	tc.block(a, 3-a)
	return tc
}

// TestPlantedAckBeforeISR: with the follower unable to fetch, a correct
// leader cannot acknowledge acks=all (it times out); the planted bug
// acknowledges at once.
func TestPlantedAckBeforeISR(t *testing.T) {
	for _, bug := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", bug), func(t *testing.T) {
			var tc *testCluster
			if bug {
				tc = laggingFollowerCluster(t, "ack-before-isr")
			} else {
				tc = laggingFollowerCluster(t)
			}
			code := tc.rawProduceTimeout("bug", "x", 500)
			switch {
			case bug && code != 0:
				t.Fatalf("planted ack-before-isr: error %d, want an acknowledgement", code)
			case !bug && code != kerr.RequestTimedOut.Code:
				t.Fatalf("correct leader: error %d, want REQUEST_TIMED_OUT (the ISR never got the batch)", code)
			}
		})
	}
}

// TestPlantedHWPastLaggingISR: acks=1 writes the follower cannot fetch stay
// above the HW (invisible to consumers) on a correct leader; the planted
// bug exposes them at once.
func TestPlantedHWPastLaggingISR(t *testing.T) {
	for _, bug := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", bug), func(t *testing.T) {
			var tc *testCluster
			if bug {
				tc = laggingFollowerCluster(t, "hw-past-lagging-isr")
			} else {
				tc = laggingFollowerCluster(t)
			}
			if code := tc.rawProduce("bug", 1, "y"); code != 0 {
				t.Fatalf("acks=1 write: error %d", code)
			}
			switch hw := tc.endOffset("bug", 0); {
			case bug && hw != 4:
				t.Fatalf("planted hw-past-lagging-isr: HW %d, want 4 (past the lagging ISR member)", hw)
			case !bug && hw != 3:
				t.Fatalf("correct leader: HW %d, want 3 (the follower lacks offset 3)", hw)
			}
		})
	}
}

// TestPlantedSkipMinISR: with the ISR down to the leader (below min ISR 2),
// a correct leader refuses acks=all with NOT_ENOUGH_REPLICAS; the planted
// bug accepts it.
func TestPlantedSkipMinISR(t *testing.T) {
	for _, bug := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", bug), func(t *testing.T) {
			planted, _ := ParseBugs(nil)
			if bug {
				planted, _ = ParseBugs([]string{"skip-min-isr"})
			}
			tc := startClusterWith(t, 2, 1, func(c *Config) { c.Bugs = planted })
			two := "2"
			tc.createTopic("minisr", 1, 2, map[string]*string{"min.insync.replicas": &two})
			a := int(tc.leader("minisr", 0))
			tc.kill(3 - a)
			tc.waitISRWithout("minisr", int32(3-a), 10*time.Second)
			code := tc.rawProduce("minisr", -1, "z")
			switch {
			case bug && code != 0:
				t.Fatalf("planted skip-min-isr: error %d, want an acknowledgement", code)
			case !bug && code != kerr.NotEnoughReplicas.Code:
				t.Fatalf("correct leader: error %d, want NOT_ENOUGH_REPLICAS", code)
			}
		})
	}
}
