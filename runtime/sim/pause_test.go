//go:build synctests

package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster"
	"gregor/cluster/faultnet"
	"gregor/cluster/meta"
)

// pauseLeader pauses the leader (SIGSTOP) and resumes it after the second
// round of records.
var pauseLeader = fault{"pause leader",
	func(c *Cluster, leader int32) error { return c.Pause(leader) },
	func(c *Cluster, leader int32) error { c.Resume(leader); return nil }}

// TestSimPauseLeaderScenario: acks=all records survive a paused leader:
// another broker leads while it is paused, and after the resume the ISR is
// full again (the scenario's checks).
func TestSimPauseLeaderScenario(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) { scenario(t, Options{}, pauseLeader) })
}

// TestSimPausedLeaderIsFencedAndTruncates is the sim's pause seen from
// outside and from the paused node, as a SIGSTOP on the process runtime
// (harness TestNemesisEffects/pause-leader): the leader L of an RF 2
// partition holds acks=1 records its follower F has not fetched (the L-F
// link cut for the time of those writes), then is paused. While it is
// paused it answers nothing (F still does), its own metadata view does
// not move, and the controller fences it (its heartbeats stop): F leads at
// a higher epoch with L out of the ISR, and takes writes. On resume L acts
// on what fell due: it learns it is a follower, truncates the acks=1
// records no one else has (KIP-101, the leader epoch's end offset) and
// catches up, until its log is F's byte for byte and the ISR is both again.
func TestSimPausedLeaderIsFencedAndTruncates(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, err := Start(Options{Brokers: 3, Configure: func(cfg *cluster.Config) {
			cfg.RaftTimeout = 500 * time.Millisecond
			cfg.SessionTimeout = 1500 * time.Millisecond
			cfg.HeartbeatInterval = 250 * time.Millisecond
			cfg.ReplicaLagMax = 10 * time.Second // no ISR shrink by lag: fencing does it
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const topic = "pz"
		base := []kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...), kgo.Dialer(c.Dial),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MetadataMinAge(50 * time.Millisecond)}
		adm := newTestClient(t, base)
		defer adm.Close()
		if err := WaitFor(30*time.Second, func() error {
			_, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 2, nil, topic)
			return err
		}); err != nil {
			t.Fatalf("create topic: %v", err)
		}
		var st meta.Partition
		if err := WaitFor(30*time.Second, func() (err error) {
			st, err = agreedState(c, topic, 0)
			if err == nil && len(st.ISR) != 2 {
				err = fmt.Errorf("ISR %v", st.ISR)
			}
			return err
		}); err != nil {
			t.Fatalf("initial leader: %v", err)
		}
		l := st.Leader
		f := st.ISR[0]
		if f == l {
			f = st.ISR[1]
		}

		produce := func(cl *kgo.Client, from, n int) {
			t.Helper()
			for i := from; i < from+n; i++ {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
					t.Fatalf("produce %d: %v", i, err)
				}
			}
		}
		all := newTestClient(t, append(base, kgo.RequiredAcks(kgo.AllISRAcks())))
		defer all.Close()
		one := newTestClient(t, append(base, kgo.RequiredAcks(kgo.LeaderAck())))
		defer one.Close()
		produce(all, 0, 20)
		c.Faults(l).Set(faultnet.Rules{Drop: []string{Host(f)}})
		c.Faults(f).Set(faultnet.Rules{Drop: []string{Host(l)}})
		produce(one, 20, 10) // on L only
		if got := leo(c, l, topic); got != 30 {
			t.Fatalf("leader's log end %d after 30 records, want 30", got)
		}
		if got := leo(c, f, topic); got != 20 {
			t.Fatalf("follower's log end %d across the cut, want 20", got)
		}

		if err := c.Pause(l); err != nil {
			t.Fatal(err)
		}
		c.Faults(l).Set(faultnet.Rules{})
		c.Faults(f).Set(faultnet.Rules{})
		if err := askApiVersions(c, l); err == nil {
			t.Fatalf("the paused node %d answered", l)
		}
		if err := askApiVersions(c, f); err != nil {
			t.Fatalf("node %d, not paused, did not answer: %v", f, err)
		}
		var moved meta.Partition
		if err := WaitFor(30*time.Second, func() (err error) {
			moved, err = agreedState(c, topic, 0, l)
			if err == nil && (moved.Leader != f || slices.Contains(moved.ISR, l) || moved.LeaderEpoch <= st.LeaderEpoch) {
				err = fmt.Errorf("state %+v", moved)
			}
			if err == nil && !c.Broker(f).Image().Brokers[l].Fenced {
				err = fmt.Errorf("node %d not fenced", l)
			}
			return err
		}); err != nil {
			t.Fatalf("the others' reaction to the paused leader %d: %v", l, err)
		}
		produce(one, 30, 10) // to F
		// Nothing of L ran: its metadata view is where the pause found it.
		if own := c.Broker(l).Image().Topics[topic].Partitions[0]; own.Leader != l || own.LeaderEpoch != st.LeaderEpoch {
			t.Fatalf("the paused node's own view moved: %+v, was %+v", own, st)
		}
		if got := leo(c, l, topic); got != 30 {
			t.Fatalf("the paused node's log end moved to %d", got)
		}

		c.Resume(l)
		if err := WaitFor(30*time.Second, func() error {
			now, err := agreedState(c, topic, 0)
			if err != nil {
				return err
			}
			if now.Leader != f || len(now.ISR) != 2 {
				return fmt.Errorf("state %+v", now)
			}
			if a, b := leo(c, l, topic), leo(c, f, topic); a != b || a < 30 {
				return fmt.Errorf("log ends: %d on %d, %d on %d, want equal, at least 30 (20 + 10 after the move)", a, l, b, f)
			}
			return nil
		}); err != nil {
			t.Fatalf("after resuming %d: %v", l, err)
		}
		end := leo(c, f, topic)
		vals := readValues(t, ctx, base, topic, end)
		t.Logf("paused %d; %d led; log end %d: %v", l, f, end, vals)
		want, err := c.Broker(f).Partition(topic, 0).Log().Read(0, 1<<20, end)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Broker(l).Partition(topic, 0).Log().Read(0, 1<<20, end)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the resumed node's log (%d bytes) differs from the leader's (%d bytes): it did not truncate its acks=1 tail", len(got), len(want))
		}
		for i := 20; i < 30; i++ {
			if vals[strconv.Itoa(i)] > 0 {
				t.Fatalf("record %d, written to the paused leader only, is in the partition: %v", i, vals)
			}
		}
		for _, i := range []int{0, 19, 30, 39} {
			if vals[strconv.Itoa(i)] == 0 {
				t.Fatalf("record %d, acknowledged by the leader of its time, is not in the partition: %v", i, vals)
			}
		}
	})
}

// readValues reads topic-0 from offset 0 to end and counts each value.
func readValues(t *testing.T, ctx context.Context, base []kgo.Opt, topic string, end int64) map[string]int {
	t.Helper()
	cons := newTestClient(t, append(base, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})))
	defer cons.Close()
	vals := map[string]int{}
	for next := int64(0); next < end; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading back: at offset %d of %d: %v", next, end, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			vals[string(r.Value)]++
			next = r.Offset + 1
		})
	}
	return vals
}

func newTestClient(t *testing.T, opts []kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// agreedState is partition topic/index as every running broker but skip
// sees it, when they agree.
func agreedState(c *Cluster, topic string, index int32, skip ...int32) (meta.Partition, error) {
	var st meta.Partition
	seen := false
	for id := int32(1); id <= int32(len(c.brokers)); id++ {
		b := c.Broker(id)
		if b == nil || slices.Contains(skip, id) {
			continue
		}
		tp := b.Image().Topics[topic]
		if tp == nil || int(index) >= len(tp.Partitions) {
			return st, fmt.Errorf("node %d does not see %s-%d", id, topic, index)
		}
		p := tp.Partitions[index]
		if seen && (p.Leader != st.Leader || p.LeaderEpoch != st.LeaderEpoch || !slices.Equal(p.ISR, st.ISR)) {
			return st, fmt.Errorf("node %d sees %+v, another %+v", id, p, st)
		}
		st, seen = p, true
	}
	if !seen || st.Leader < 0 {
		return st, errors.New("no leader")
	}
	return st, nil
}

// leo is node id's log end offset of topic-0 (-1 without the replica).
func leo(c *Cluster, id int32, topic string) int64 {
	p := c.Broker(id).Partition(topic, 0)
	if p == nil {
		return -1
	}
	return p.Log().LEO()
}

// askApiVersions sends one ApiVersions request to node id alone, bounded
// by 3 s.
func askApiVersions(c *Cluster, id int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()[id-1]), kgo.Dialer(c.Dial))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl.Broker(int(id)))
	return err
}
