package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/storage"
)

// testCluster is n brokers in this process, each on its own loopback IP,
// with short timeouts so faults play out in seconds.
type testCluster struct {
	t       *testing.T
	cfgs    []Config
	brokers []*Broker // nil while down; brokers then controller-only nodes
	n       int       // brokers (the rest are controller-only)
}

// Short timings for tests (Kafka's defaults are 9 s session, 30 s lag).
const (
	testSession = 1500 * time.Millisecond
	testLagMax  = 2 * time.Second
)

// startCluster starts n brokers, all controller voters (combined mode).
func startCluster(t *testing.T, n int, mod func(*Config)) *testCluster {
	return startClusterWith(t, n, 0, mod)
}

// startClusterWith starts n brokers plus extra controller-only voters
// (ids n+1..), so the quorum survives losing brokers.
func startClusterWith(t *testing.T, n, controllers int, mod func(*Config)) *testCluster {
	t.Helper()
	block := fmt.Sprintf("127.%d.%d", 1+rand.IntN(254), rand.IntN(255))
	var peers []Peer
	for i := 1; i <= n+controllers; i++ {
		host := block + "." + strconv.Itoa(i)
		peers = append(peers, Peer{ID: int32(i), RaftAddr: net.JoinHostPort(host, "9093"), KafkaAddr: net.JoinHostPort(host, "9092")})
	}
	tc := &testCluster{t: t, brokers: make([]*Broker, n+controllers), n: n}
	for i := 0; i < n+controllers; i++ {
		cfg := Config{NodeID: int32(i + 1), Listen: peers[i].KafkaAddr, DataDir: t.TempDir(), Logger: quietLogger(), ControllerOnly: i >= n,
			Peers: peers, RaftTimeout: 500 * time.Millisecond, SessionTimeout: testSession,
			HeartbeatInterval: 250 * time.Millisecond, ReplicaLagMax: testLagMax, ShutdownTimeout: 5 * time.Second}
		if mod != nil {
			mod(&cfg)
		}
		tc.cfgs = append(tc.cfgs, cfg)
	}
	for i := range tc.cfgs {
		tc.start(i + 1)
	}
	t.Cleanup(func() {
		for _, b := range tc.brokers {
			if b != nil {
				b.crash()
			}
		}
	})
	if controllers > 0 {
		tc.placeController(int32(n + 1))
	}
	tc.waitFor("all brokers registered", 20*time.Second, func() error {
		im := tc.any().Image()
		live := 0
		for _, b := range im.Brokers {
			if !b.Fenced {
				live++
			}
		}
		if live < n {
			return fmt.Errorf("%d of %d brokers live", live, n)
		}
		return nil
	})
	return tc
}

// placeController makes voter id the active controller, so that faults a
// test injects between brokers never cut a broker off from the controller.
func (tc *testCluster) placeController(id int32) {
	tc.t.Helper()
	tc.waitFor(fmt.Sprintf("controller %d active", id), 20*time.Second, func() error {
		active := tc.any().q.ctrl.ActiveController()
		if active == id {
			return nil
		}
		if active < 0 || tc.brokers[active-1] == nil {
			return fmt.Errorf("no active controller yet")
		}
		if err := tc.brokers[active-1].q.ctrl.TransferLeadership(id); err != nil {
			return err
		}
		return fmt.Errorf("transferring from %d", active)
	})
}

func (tc *testCluster) start(id int) {
	tc.t.Helper()
	b, err := Start(tc.cfgs[id-1])
	if err != nil {
		tc.t.Fatalf("start broker %d: %v", id, err)
	}
	tc.brokers[id-1] = b
}

// kill stops a broker as SIGKILL would: no controlled shutdown.
func (tc *testCluster) kill(id int) {
	tc.brokers[id-1].crash()
	tc.brokers[id-1] = nil
}

// stop is SIGTERM: a controlled shutdown.
func (tc *testCluster) stop(id int) {
	tc.brokers[id-1].Close()
	tc.brokers[id-1] = nil
}

func (tc *testCluster) any() *Broker {
	for _, b := range tc.brokers {
		if b != nil {
			return b
		}
	}
	tc.t.Fatal("no broker is up")
	return nil
}

func (tc *testCluster) bootstrap() []string {
	var out []string
	for _, c := range tc.cfgs[:tc.n] {
		out = append(out, c.Listen)
	}
	return out
}

// waitFor polls cond until it returns nil, failing the test after limit.
func (tc *testCluster) waitFor(what string, limit time.Duration, cond func() error) time.Duration {
	tc.t.Helper()
	start := time.Now()
	var last error
	for time.Since(start) < limit {
		if last = cond(); last == nil {
			return time.Since(start)
		}
		time.Sleep(25 * time.Millisecond)
	}
	tc.t.Fatalf("%s: not within %v: %v", what, limit, last)
	return 0
}

func (tc *testCluster) client(opts ...kgo.Opt) *kgo.Client {
	tc.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tc.bootstrap()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MetadataMinAge(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(cl.Close)
	return cl
}

func (tc *testCluster) createTopic(name string, partitions int32, rf int16, configs map[string]*string) {
	tc.t.Helper()
	cl := tc.client()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, rf, configs, name)
	if err != nil {
		tc.t.Fatal(err)
	}
	if e := resp[name].Err; e != nil && !(errors.Is(e, kerr.TopicAlreadyExists) && tc.shaped(name, partitions, rf)) {
		tc.t.Fatalf("create %s: %v (%s)", name, e, resp[name].ErrMessage)
	}
	tc.waitFor("leaders elected", 10*time.Second, func() error { return tc.led(name) })
}

// shaped reports whether topic name exists with the given partitions and
// RF. Every test cluster is fresh and names its own topics, so an existing
// topic of the requested shape is the test's own create: on a loaded
// machine the first CreateTopics can outlast its request timeout (Kafka
// answers REQUEST_TIMED_OUT and creates the topic anyway), and franz-go's
// retry then meets TOPIC_ALREADY_EXISTS.
func (tc *testCluster) shaped(name string, partitions int32, rf int16) bool {
	t := tc.any().Image().Topics[name]
	if t == nil || int32(len(t.Partitions)) != partitions {
		return false
	}
	for _, p := range t.Partitions {
		if len(p.Replicas) != int(rf) {
			return false
		}
	}
	return true
}

// led reports why topic is not (yet) led on every partition, nil once it is.
func (tc *testCluster) led(name string) error {
	t := tc.any().Image().Topics[name]
	if t == nil {
		return errors.New("topic not visible")
	}
	for _, p := range t.Partitions {
		if p.Leader < 0 {
			return fmt.Errorf("partition %d has no leader", p.Index)
		}
	}
	return nil
}

// isr is the published ISR of topic/partition, sorted.
func (tc *testCluster) isr(topic string, p int32) []int32 {
	t := tc.any().Image().Topics[topic]
	if t == nil {
		return nil
	}
	isr := slices.Clone(t.Partitions[p].ISR)
	slices.Sort(isr)
	return isr
}

func (tc *testCluster) leader(topic string, p int32) int32 {
	t := tc.any().Image().Topics[topic]
	if t == nil {
		return -1
	}
	return t.Partitions[p].Leader
}

// produce sends one record synchronously and returns its error.
func produce(cl *kgo.Client, topic string, v string) (*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &kgo.Record{Topic: topic, Value: []byte(v)}
	return r, cl.ProduceSync(ctx, r).FirstErr()
}

// endOffset is partition p's end offset (its HW) as its leader lists it.
// A listing can fail for a moment the way a client retries (a metadata
// answer without the topic, a leader moving), so it is asked again within a
// bound; a partition the answer left out is never read as offset 0 (the
// zero value of kadm's Lookup miss, which once failed
// TestPlantedHWPastLaggingISR with "HW 0").
func (tc *testCluster) endOffset(topic string, p int32) int64 {
	tc.t.Helper()
	cl := tc.client()
	var end int64
	tc.waitFor(fmt.Sprintf("the end offset of %s/%d", topic, p), 10*time.Second, func() (err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		end, err = listEnd(ctx, cl, topic, p)
		return err
	})
	return end
}

// listEnd lists partition p's end offset once, naming why when it is not
// listed.
func listEnd(ctx context.Context, cl *kgo.Client, topic string, p int32) (int64, error) {
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(topic, p)
	if !ok {
		// Not listed: the metadata answer had the topic with an error
		// (kadm files it under partition -1), or not the partition.
		return 0, fmt.Errorf("end offset %s/%d: not listed (topic error: %v)", topic, p, offs[topic][-1].Err)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("end offset %s/%d: %v", topic, p, o.Err)
	}
	return o.Offset, nil
}

// readAll reads partition 0 of topic from offset 0 up to its end offset.
func (tc *testCluster) readAll(topic string) []string {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	end := tc.endOffset(topic, 0)
	cons := tc.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	var out []string
	for int64(len(out)) < end {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			tc.t.Fatalf("read %d of %d records of %s", len(out), end, topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(out)) {
				tc.t.Fatalf("%s: offset %d after %d records", topic, r.Offset, len(out))
			}
			out = append(out, string(r.Value))
		})
	}
	return out
}

// rawProduce sends one record in a Produce request straight to partition 0's
// leader and returns the partition's error code.
func (tc *testCluster) rawProduce(topic string, acks int16, value string) int16 {
	tc.t.Helper()
	return tc.rawProduceWith(topic, acks, value, 5000)
}

func (tc *testCluster) rawProduceWith(topic string, acks int16, value string, timeoutMs int32) int16 {
	tc.t.Helper()
	// franz-go stamps its own RequiredAcks on produce requests it carries,
	// so the client must be configured with the acks under test.
	opt := kgo.RequiredAcks(kgo.AllISRAcks())
	switch acks {
	case 0:
		opt = kgo.RequiredAcks(kgo.NoAck())
	case 1:
		opt = kgo.RequiredAcks(kgo.LeaderAck())
	}
	cl := tc.client(opt, kgo.DisableIdempotentWrite())
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = storage.NewBatch(0, 0, []byte(value))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(tc.leader(topic, 0))))
	if err != nil {
		tc.t.Fatalf("raw produce: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// With dedicated controllers (Config.Quorum) brokers replicate the metadata
// log as raft non-voters: the controller-only node is the active controller,
// a broker can never take the role, and elections still work when a
// broker dies.
func TestDedicatedControllers(t *testing.T) {
	tc := startClusterWith(t, 3, 1, func(c *Config) { c.Quorum = []int32{4} })
	for id := 1; id <= 4; id++ {
		if a := tc.brokers[id-1].q.ctrl.ActiveController(); a != 4 {
			t.Fatalf("node %d sees active controller %d, want the dedicated controller 4", id, a)
		}
	}
	if err := tc.brokers[3].q.ctrl.TransferLeadership(1); err == nil || !strings.Contains(err.Error(), "does not vote") {
		t.Fatalf("moving the controller to broker 1, a non-voter: %v", err)
	}
	tc.createTopic("ded", 1, 3, nil)
	old := tc.leader("ded", 0)
	tc.kill(int(old))
	tc.waitFor("a new leader without the old one", 15*time.Second, func() error {
		if l := tc.leader("ded", 0); l < 0 || l == old {
			return fmt.Errorf("leader %d (%+v)", l, tc.brokers[3].Image().Topics["ded"].Partitions[0])
		}
		return nil
	})
	if a := tc.any().q.ctrl.ActiveController(); a != 4 {
		t.Fatalf("active controller %d after a broker died, want 4", a)
	}
}
