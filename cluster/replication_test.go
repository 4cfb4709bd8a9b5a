package cluster

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/cluster/faultnet"
	"gregor/cluster/meta"
	"gregor/cluster/storage"
)

// block makes node a drop all traffic with nodes bs (both ways: every
// listed node gets the rule), as a partition would.
func (tc *testCluster) block(a int, bs ...int) {
	tc.t.Helper()
	host := func(id int) string { h, _, _ := splitHost(tc.cfgs[id-1].Listen); return h }
	rules := map[int][]string{}
	for _, b := range bs {
		rules[a] = append(rules[a], host(b))
		rules[b] = append(rules[b], host(a))
	}
	for id, drop := range rules {
		if br := tc.brokers[id-1]; br != nil {
			br.net.Set(faultnet.Rules{Drop: drop})
		}
	}
}

// heal removes every node's network faults.
func (tc *testCluster) heal() {
	for _, b := range tc.brokers {
		if b != nil {
			b.net.Set(faultnet.Rules{})
		}
	}
}

func splitHost(addr string) (string, string, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], nil
		}
	}
	return addr, "", fmt.Errorf("no port in %q", addr)
}

// waitISRWithout waits until id leaves topic/0's ISR and returns how long it
// took.
func (tc *testCluster) waitISRWithout(topic string, id int32, limit time.Duration) time.Duration {
	tc.t.Helper()
	return tc.waitFor(fmt.Sprintf("%d leaves the ISR", id), limit, func() error {
		if isr := tc.isr(topic, 0); slices.Contains(isr, id) {
			return fmt.Errorf("isr %v", isr)
		}
		return nil
	})
}

// follower returns a follower of topic/0 that is not the active controller,
// so that cutting it off from the leader does not also cut the leader off
// from the controller it must ask to shrink the ISR.
func (tc *testCluster) follower(topic string) int {
	l := int(tc.leader(topic, 0))
	active := int(tc.any().q.ctrl.ActiveController())
	for id := 1; id <= tc.n; id++ {
		if id != l && id != active {
			return id
		}
	}
	return -1
}

// logBytes returns every batch of a replica's log, as stored.
func logBytes(t *testing.T, b *Broker, topic string) []byte {
	t.Helper()
	p := b.Partition(topic, 0)
	if p == nil {
		t.Fatalf("node %d has no replica of %s", b.cfg.NodeID, topic)
	}
	_, _, leo := p.Offsets()
	var out []byte
	for off := int64(0); off < leo; {
		recs, err := p.Log().Read(off, 1<<20, leo)
		if err != nil || len(recs) == 0 {
			t.Fatalf("node %d: read at %d: %v", b.cfg.NodeID, off, err)
		}
		out = append(out, recs...)
		// Advance past what was read: the last batch's next offset.
		off = lastNext(t, recs)
	}
	return out
}

// lastNext is the offset after the last of the batches in recs.
func lastNext(t *testing.T, recs []byte) int64 {
	t.Helper()
	next := int64(-1)
	if err := storage.ForEachBatch(recs, func(h storage.BatchHeader, _ []byte) error {
		next = h.NextOffset()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return next
}

// rawProduceTimeout sends one acks=all record to partition 0's leader with
// the given produce timeout and returns the partition's error code.
func (tc *testCluster) rawProduceTimeout(topic, value string, timeoutMs int32) int16 {
	tc.t.Helper()
	return tc.rawProduceWith(topic, -1, value, timeoutMs)
}

// TestUncleanElection: the follower is out of the ISR and acknowledged
// records exist only on the leader, which then dies. With unclean election
// on, the stale follower leads and the records are lost; off, the partition
// stays offline until the ISR member returns, and nothing is lost.
func TestUncleanElection(t *testing.T) {
	for _, unclean := range []bool{true, false} {
		t.Run(fmt.Sprintf("unclean=%v", unclean), func(t *testing.T) {
			tc := startClusterWith(t, 2, 1, func(c *Config) { c.ReplicaLagMax = time.Second; c.Unclean = unclean })
			tc.createTopic("uncl", 1, 2, nil) // min ISR 1
			all := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(10*time.Second))
			a := int(tc.leader("uncl", 0))
			b := 3 - a
			tc.block(a, b)
			// b is in sync while it has everything (Kafka's isCaughtUp): a
			// write only the leader has leaves it behind.
			if _, err := produce(tc.client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()), "uncl", "behind"); err != nil {
				t.Fatal(err)
			}
			tc.waitISRWithout("uncl", int32(b), 15*time.Second)
			var acked []string
			for i := 0; i < 5; i++ {
				v := fmt.Sprint("only-on-leader-", i)
				if _, err := produce(all, "uncl", v); err != nil {
					t.Fatalf("acks=all with ISR [leader], min ISR 1: %v", err)
				}
				acked = append(acked, v)
			}
			tc.kill(a)
			tc.heal()
			if unclean {
				tc.waitFor("stale follower elected", 10*time.Second, func() error {
					if l := tc.leader("uncl", 0); l != int32(b) {
						return fmt.Errorf("leader %d", l)
					}
					return nil
				})
				got := tc.readAll("uncl")
				for _, v := range acked {
					if slices.Contains(got, v) {
						t.Fatalf("%s survived an unclean election it was never replicated to", v)
					}
				}
				return
			}
			// Clean only: offline for well past the session timeout.
			deadline := time.Now().Add(3 * testSession)
			for time.Now().Before(deadline) {
				if l := tc.leader("uncl", 0); l == int32(b) {
					t.Fatal("the out-of-sync follower was elected with unclean election off")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if l := tc.leader("uncl", 0); l != meta.NoLeader {
				t.Fatalf("leader %d while the only ISR member is down", l)
			}
			tc.start(a)
			tc.waitFor("ISR member returns as leader", 15*time.Second, func() error {
				if l := tc.leader("uncl", 0); l != int32(a) {
					return fmt.Errorf("leader %d", l)
				}
				return nil
			})
			got := tc.readAll("uncl")
			for _, v := range acked {
				if !slices.Contains(got, v) {
					t.Fatalf("acknowledged %s lost with unclean election off", v)
				}
			}
		})
	}
}

// TestFailoverWithinTwoSessions: after the leader is SIGKILLed, a new
// leader serves writes within 2 x broker.session.timeout.ms.
func TestFailoverWithinTwoSessions(t *testing.T) {
	tc := startClusterWith(t, 3, 2, nil)
	tc.createTopic("fo", 1, 3, nil)
	all := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))
	if _, err := produce(all, "fo", "before"); err != nil {
		t.Fatal(err)
	}
	old := tc.leader("fo", 0)
	start := time.Now()
	tc.kill(int(old))
	tc.waitFor("new leader", 2*testSession, func() error {
		if l := tc.leader("fo", 0); l == old || l == meta.NoLeader {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	elected := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testSession)
	defer cancel()
	if err := all.ProduceSync(ctx, &kgo.Record{Topic: "fo", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("no write within 2 sessions of the kill (leader elected after %v): %v", elected, err)
	}
	t.Logf("leader elected %v after SIGKILL; session %v", elected, testSession)
}

func hostOf(addr string) string {
	h, _, _ := splitHost(addr)
	return h
}

// scrape reads a broker's /metrics into name -> value (unlabelled series).
func scrape(t *testing.T, b *Broker) map[string]int64 {
	t.Helper()
	resp, err := http.Get("http://" + b.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.Contains(line, "{") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			out[name] = n
		}
	}
	return out
}

// TestIsolatedLeaderThatIsController: the partition leader is also the
// active controller and is cut off from both other brokers. The majority
// must elect a new controller, fence the isolated broker when its session
// expires, and elect a new partition leader from the rest of the ISR.
func TestIsolatedLeaderThatIsController(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.SessionTimeout = 3 * time.Second; c.ReplicaLagMax = 3 * time.Second })
	tc.createTopic("iso", 1, 3, nil)
	old := tc.leader("iso", 0)
	tc.placeController(old)
	tc.waitFor("full ISR", 10*time.Second, func() error {
		if isr := tc.isr("iso", 0); len(isr) != 3 {
			return fmt.Errorf("isr %v", isr)
		}
		return nil
	})
	var rest []int
	for id := 1; id <= 3; id++ {
		if id != int(old) {
			rest = append(rest, id)
		}
	}
	tc.block(int(old), rest...)
	tc.waitFor("majority elects a new leader", 25*time.Second, func() error {
		im := tc.brokers[rest[0]-1].Image()
		topic := im.Topics["iso"]
		if topic == nil {
			return fmt.Errorf("node %d does not see the topic yet", rest[0])
		}
		p := topic.Partitions[0]
		if p.Leader == old || p.Leader == meta.NoLeader {
			return fmt.Errorf("leader %d isr %v (controller %d)", p.Leader, p.ISR, tc.brokers[rest[0]-1].q.ctrl.ActiveController())
		}
		return nil
	})
}

// TestPowerCutLeaderRestartLosesNothing: with lazyfs, a power cut of the
// leader loses its unsynced tail — records every ISR member acknowledged.
// Restarted within its session, it must not lead again with that log (the
// followers would truncate the acknowledged records to match it) before the
// controller has seen its new registration and moved leadership.
func TestPowerCutLeaderRestartLosesNothing(t *testing.T) {
	tc := startClusterWith(t, 3, 2, func(c *Config) {
		c.SessionTimeout = 5 * time.Second
		c.Storage = storage.Options{LazyFS: true, WritebackDelay: time.Hour}
	})
	two := "2"
	tc.createTopic("cut", 1, 3, map[string]*string{"min.insync.replicas": &two})
	all := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(20*time.Second))
	var acked []string
	for i := 0; i < 20; i++ {
		v := fmt.Sprint("acked-", i)
		if _, err := produce(all, "cut", v); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, v)
	}
	old := int(tc.leader("cut", 0))
	tc.brokers[old-1].powerCut()
	tc.brokers[old-1] = nil
	tc.start(old) // well within the 5 s session
	tc.waitFor("leadership moves off the restarted broker", 15*time.Second, func() error {
		if l := tc.leader("cut", 0); l == int32(old) || l == meta.NoLeader {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	// The new leader's HW catches up once its followers fetch again: read
	// after the ISR is whole, as the harness's final reads do.
	tc.waitFor("ISR whole again", 20*time.Second, func() error {
		if isr := tc.isr("cut", 0); len(isr) != 3 {
			return fmt.Errorf("isr %v", isr)
		}
		return nil
	})
	got := tc.readAll("cut")
	for _, v := range acked {
		if !slices.Contains(got, v) {
			t.Fatalf("acknowledged %s lost after the leader's power cut: %v", v, got)
		}
	}
}
