package harness

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/storage"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime"
)

// effectEnv is one 3-broker cluster shared by the nemesis effect tests:
// each applies one fault through nemesis.Runner, watches its effect from the
// nodes it did not hit, undoes it and waits for a full ISR again.
type effectEnv struct {
	t     *testing.T
	c     runtime.Cluster
	topic TopicSpec
	boot  []string
	topo  *nemesis.KafkaTopology
	hist  *history.Writer
}

func newEffectEnv(t *testing.T) *effectEnv {
	return effectEnvOn(t, startCluster(t, testSpec("effects", 3, 2)))
}

// effectEnvOn is effectEnv on a cluster of 3 brokers the caller started.
func effectEnvOn(t *testing.T, c runtime.Cluster) *effectEnv {
	e := &effectEnv{t: t, c: c, topic: TopicSpec{Name: "fx", Partitions: 1, RF: 3, MinISR: 2}, boot: c.Bootstrap()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := CreateTopic(ctx, e.boot, e.topic); err != nil {
		t.Fatal(err)
	}
	topo, err := nemesis.NewKafkaTopology(e.boot, "fx", 1, []int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(topo.Close)
	e.topo = topo
	e.hist = history.NewWriter(discard{}, 0)
	return e
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// addrOf is the Kafka listener of node id.
func (e *effectEnv) addrOf(id int32) string {
	for _, n := range e.c.Nodes() {
		if n.ID == id {
			return n.KafkaAddr
		}
	}
	e.t.Fatalf("no node %d", id)
	return ""
}

// partitionState asks the given nodes (not the faulty one) for fx/0.
func (e *effectEnv) partitionState(ctx context.Context, from []int32) (leader int32, isr []int32, err error) {
	var seeds []string
	for _, id := range from {
		seeds = append(seeds, e.addrOf(id))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(time.Second), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		return -1, nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	// Ask one node directly: kadm would follow the metadata to any broker.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("fx")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(from[0])))
	if err != nil {
		return -1, nil, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition == 0 {
				isr := slices.Clone(p.ISR)
				slices.Sort(isr)
				return p.Leader, isr, nil
			}
		}
	}
	return -1, nil, fmt.Errorf("fx/0 not in metadata")
}

// waitFor polls cond every 200 ms until it holds or limit passes.
func (e *effectEnv) waitFor(what string, limit time.Duration, cond func() error) {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		if last = cond(); last == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.dumpLogs(40)
	e.t.Fatalf("%s: not within %v: %v", what, limit, last)
}

// dumpLogs logs the last lines of every broker's output, for a failure.
func (e *effectEnv) dumpLogs(lines int) {
	for _, n := range e.c.Nodes() {
		rc, err := e.c.Logs(context.Background(), n.ID)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(rc, 64<<20))
		rc.Close()
		all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		e.t.Logf("node %d, last %d lines:\n%s", n.ID, lines, strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
}

// inject starts step through a Runner and returns the resolved action and a
// function that ends the fault, waits for the runner and for a healthy topic.
func (e *effectEnv) inject(step nemesis.Step, target nemesis.Target, slow time.Duration) (nemesis.Action, func()) {
	e.t.Helper()
	ctx := context.Background()
	hctx, hcancel := context.WithTimeout(ctx, 60*time.Second)
	defer hcancel()
	if err := WaitHealthy(hctx, e.boot, e.topic); err != nil {
		e.t.Fatalf("before %s: %v", step.Kind, err)
	}
	a, err := nemesis.Resolve(ctx, step, target, e.topo)
	if err != nil {
		e.t.Fatal(err)
	}
	r := &nemesis.Runner{Cluster: e.c, Topo: e.topo, History: e.hist, Epoch: time.Now(), Target: target, SlowDelay: slow}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(rctx, nemesis.Schedule{step}); close(done) }()
	e.waitFor("fault in force", 10*time.Second, func() error {
		if r.Active() != 1 {
			return fmt.Errorf("runner has %d active faults", r.Active())
		}
		return nil
	})
	return a, func() {
		cancel()
		<-done
		hctx, hcancel := context.WithTimeout(ctx, 60*time.Second)
		defer hcancel()
		if err := WaitHealthy(hctx, e.boot, e.topic); err != nil {
			e.dumpLogs(40)
			e.t.Fatalf("after undoing %s: %v", step.Kind, err)
		}
	}
}

func others(id int32) []int32 {
	var out []int32
	for _, x := range []int32{1, 2, 3} {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// rawProduce sends one acks=all record straight to node id (no client-side
// routing) and returns the partition's error code, or the request's error.
func (e *effectEnv) rawProduce(id int32, timeout time.Duration) (int16, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addrOf(id)), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.DialTimeout(time.Second))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "fx"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = storage.NewBatch(0, 0, []byte("isolated"))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+3*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return 0, err
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}

// produceSome keeps acks=1 writes flowing to fx/0 until stop is closed, so a
// slow follower falls behind the leader's log end.
func (e *effectEnv) produceSome(stop <-chan struct{}) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.boot...), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(2*time.Second))
	if err != nil {
		return
	}
	defer cl.Close()
	for i := 0; i < 100000; i++ {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		cl.ProduceSync(ctx, &kgo.Record{Topic: "fx", Partition: 0, Value: []byte("x")})
		cancel()
	}
}

func TestNemesisEffects(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	e := newEffectEnv(t)
	leaderMoves := func(kind nemesis.Kind) func(t *testing.T) {
		return func(t *testing.T) {
			e.t = t
			a, end := e.inject(nemesis.Step{Kind: kind, Hold: time.Minute}, nemesis.TargetLeader, 0)
			defer end()
			if len(a.Nodes) != 1 {
				t.Fatalf("leader target resolved to %v", a.Nodes)
			}
			old := a.Nodes[0]
			e.waitFor("leadership moves off "+fmt.Sprint(old), 25*time.Second, func() error {
				l, _, err := e.partitionState(context.Background(), others(old))
				if err != nil || l == old || l < 0 {
					return fmt.Errorf("leader %d (%v)", l, err)
				}
				return nil
			})
		}
	}
	t.Run("kill-leader", leaderMoves(nemesis.Kill))
	t.Run("pause-leader", leaderMoves(nemesis.Pause))
	// A controlled shutdown (SIGTERM) moves the broker's leaderships away
	// before it exits (Kafka's BrokerLifecycleManager / ControlledShutdown).
	t.Run("stop-leader", leaderMoves(nemesis.Stop))

	t.Run("isolate-leader", func(t *testing.T) {
		e.t = t
		a, end := e.inject(nemesis.Step{Kind: nemesis.Partition, Shape: nemesis.IsolateLeader, Hold: time.Minute}, nemesis.TargetRandom, 0)
		defer end()
		old := e.mustLeaderOf(a)
		maj := others(old)
		e.waitFor("majority elects a new leader", 25*time.Second, func() error {
			l, _, err := e.partitionState(context.Background(), maj)
			if err != nil || l == old || l < 0 {
				return fmt.Errorf("leader seen by %v: %d (%v)", maj, l, err)
			}
			return nil
		})
		// The old leader is cut from its followers: it must not commit an
		// acks=all write (min ISR 2), whatever its stale view says.
		for range 2 {
			code, err := e.rawProduce(old, 3*time.Second)
			if err == nil && code == 0 {
				t.Fatalf("isolated old leader %d committed an acks=all write", old)
			}
			t.Logf("acks=all to isolated %d: code %d err %v", old, code, err)
		}
	})

	t.Run("slow-follower", func(t *testing.T) {
		e.t = t
		// Every node's metadata must show the full ISR first: the previous
		// fault's recovery may still be propagating.
		var leader int32
		e.waitFor("full ISR seen by every node", 30*time.Second, func() error {
			for _, id := range []int32{1, 2, 3} {
				l, isr, err := e.partitionState(context.Background(), []int32{id})
				if err != nil || len(isr) != 3 || l < 0 {
					return fmt.Errorf("node %d: leader %d isr %v (%v)", id, l, isr, err)
				}
				leader = l
			}
			return nil
		})
		// A random target that is not the leader: pick a follower by hand.
		follower := others(leader)[0]
		topo := nemesis.StaticTopology{IDs: []int32{follower}, Leaders: []int32{leader}}
		r := &nemesis.Runner{Cluster: e.c, Topo: topo, History: e.hist, Epoch: time.Now(), Target: nemesis.TargetRandom, SlowDelay: 6 * time.Second}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.Run(ctx, nemesis.Schedule{{Kind: nemesis.Slow, Hold: time.Minute}}); close(done) }()
		stop := make(chan struct{})
		go e.produceSome(stop)
		start := time.Now()
		e.waitFor(fmt.Sprintf("ISR drops slow follower %d", follower), 30*time.Second, func() error {
			_, isr, err := e.partitionState(context.Background(), []int32{leader})
			if err != nil || slices.Contains(isr, follower) {
				return fmt.Errorf("isr %v (%v)", isr, err)
			}
			return nil
		})
		shrunk := time.Since(start)
		close(stop)
		cancel()
		<-done
		// Ratio, not an absolute bound: the shrink waits for the lag limit.
		if shrunk < 3*time.Second/2 {
			t.Errorf("ISR shrank after %v, before replica.lag.time.max.ms (3s) could pass", shrunk)
		}
		hctx, hcancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer hcancel()
		if err := WaitHealthy(hctx, e.boot, e.topic); err != nil {
			t.Fatalf("follower did not rejoin: %v", err)
		}
	})
}

func (e *effectEnv) mustLeaderOf(a nemesis.Action) int32 {
	e.t.Helper()
	if len(a.Groups) != 2 || len(a.Groups[0]) != 1 {
		e.t.Fatalf("isolate-leader groups %v", a.Groups)
	}
	return a.Groups[0][0]
}
