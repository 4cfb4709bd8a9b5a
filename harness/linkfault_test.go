package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime/clientlink"
	"gregor/runtime/docker"
)

// syncBuf is a history sink the test reads back.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// nemesisOps are the nemesis operations written so far.
func (s *syncBuf) nemesisOps(t *testing.T, w *history.Writer) []map[string]any {
	t.Helper()
	w.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	ops, _, _, err := history.ReadAll(bytes.NewReader(s.b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, op := range ops {
		if op.Process != history.Nemesis {
			continue
		}
		v := map[string]any{}
		if err := json.Unmarshal(op.Raw, &v); err != nil {
			t.Fatal(err)
		}
		v["f"], v["error"] = op.F, op.Error
		out = append(out, v)
	}
	return out
}

// linkEnv is effectEnv with a client-link network and a readable history.
type linkEnv struct {
	*effectEnv
	links *clientlink.Links
	buf   *syncBuf
}

func newLinkEnv(t *testing.T) *linkEnv { return linkEnvOn(newEffectEnv(t)) }

func linkEnvOn(e *effectEnv) *linkEnv {
	buf := &syncBuf{}
	e.hist = history.NewWriter(buf, 0)
	return &linkEnv{effectEnv: e, links: clientlink.New(), buf: buf}
}

// run runs one step on the leader of fx/0 in the background; wait waits
// for its end.
func (l *linkEnv) run(st nemesis.Step) (wait func()) {
	r := &nemesis.Runner{Cluster: l.c, Topo: l.topo, History: l.hist, Epoch: time.Now(), Target: nemesis.TargetLeader, Links: l.links}
	done := make(chan struct{})
	go func() { r.Run(context.Background(), nemesis.Schedule{st}); close(done) }()
	l.waitFor(string(st.Kind)+" in force", 10*time.Second, func() error {
		if r.Done() != 1 {
			return fmt.Errorf("not started")
		}
		return nil
	})
	return func() { <-done }
}

// copies counts the records of fx/0 with value v, read directly (not
// through the links), and returns their offsets.
func (l *linkEnv) copies(v string) []int64 {
	l.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.boot...), kgo.DialTimeout(time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fx": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		l.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "fx")
	if err != nil {
		l.t.Fatal(err)
	}
	end, _ := ends.Lookup("fx", 0)
	var offs []int64
	for next := int64(0); next < end.Offset && ctx.Err() == nil; {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == v {
				offs = append(offs, r.Offset)
			}
			next = r.Offset + 1
		})
	}
	if ctx.Err() != nil {
		l.t.Fatalf("reading fx/0 to %d: %v", end.Offset, ctx.Err())
	}
	return offs
}

// writes counts the produce requests a client wrote, per broker.
type writes struct {
	mu sync.Mutex
	n  map[int32]int
}

func (w *writes) OnBrokerWrite(m kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil { // Produce
		w.mu.Lock()
		w.n[m.NodeID]++
		w.mu.Unlock()
	}
}

func (w *writes) to(id int32) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[id]
}

// producer is a workload-like producer of process proc dialing through the
// links, with a 2 s response timeout (below the faults' holds).
func (l *linkEnv) producer(proc int, idempotent bool, hooks ...kgo.Hook) *kgo.Client {
	l.t.Helper()
	o := []kgo.Opt{kgo.SeedBrokers(l.boot...), kgo.Dialer(l.links.Dialer(proc)),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(time.Second), kgo.RequestTimeoutOverhead(time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.RecordDeliveryTimeout(30 * time.Second), kgo.ProducerLinger(0), kgo.WithHooks(hooks...)}
	if !idempotent {
		o = append(o, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(o...)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(cl.Close)
	return cl
}

func produce(t *testing.T, cl *kgo.Client, v string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	r := &kgo.Record{Topic: "fx", Partition: 0, Value: []byte(v)}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", v, err)
	}
	return r.Offset
}

func TestLinkFaultEffects(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	newLinkEnv(t).effects(t)
}

// The same effects on the docker runtime: the clients run in the harness
// process and reach the containers by the addresses the brokers advertise.
func TestLinkFaultEffectsDocker(t *testing.T) {
	linkEnvOn(dockerEffectEnv(t, "dklinks")).effects(t)
}

func (l *linkEnv) effects(t *testing.T) {
	leader := func() int32 {
		var id int32
		l.waitFor("a leader", 20*time.Second, func() error {
			var err error
			id, err = l.topo.Leader(context.Background(), 0)
			return err
		})
		return id
	}

	// lose-responses: the request is applied, its answer lost; the
	// idempotent producer retries to the same leader, which recognises the
	// sequence and answers with the first append's offset (Kafka's
	// ProducerStateManager duplicate check). One copy, two writes.
	t.Run("lose-responses", func(t *testing.T) {
		l.t = t
		w := &writes{n: map[int32]int{}}
		cl := l.producer(100, true, w)
		produce(t, cl, "warm") // connections and producer id in place
		ld := leader()
		before := w.to(ld)
		wait := l.run(nemesis.Step{Kind: nemesis.LoseResponses, Hold: 4 * time.Second})
		got := make(chan int64, 1)
		go func() { got <- produce(t, cl, "lost-answer") }()
		// Applied while its answer is lost: the log holds it before the
		// producer hears anything.
		var first []int64
		l.waitFor("the request applied during the loss", 10*time.Second, func() error {
			if first = l.copies("lost-answer"); len(first) == 0 {
				return fmt.Errorf("not in the log yet")
			}
			return nil
		})
		select {
		case off := <-got:
			t.Fatalf("the producer heard its answer (offset %d) during the loss", off)
		default:
		}
		off := <-got
		wait()
		if c := l.copies("lost-answer"); len(c) != 1 || off != first[0] {
			t.Fatalf("after the retry: copies at %v, acknowledged at %d, first appended at %v: want one copy, acknowledged at its first offset", c, off, first)
		}
		if n := w.to(ld) - before; n < 2 {
			t.Fatalf("%d produce requests to leader %d: the producer did not retry to the same leader", n, ld)
		}
		ops := l.buf.nemesisOps(t, l.hist)
		last := ops[len(ops)-1]
		if last["f"] != history.EndVerb(history.NemesisLoseResponses) || last["broker"] != l.addrOf(ld) {
			t.Fatalf("nemesis ops %v: want the end of lose-responses on %s", ops, l.addrOf(ld))
		}
	})

	// delay-client: the request is held; the producer gives up on the
	// connection, retries on a new one (which goes through) and is
	// acknowledged; the held request arrives after the hold. Without
	// idempotence that is a second copy, appended after the acknowledgement.
	t.Run("delay-client", func(t *testing.T) {
		l.t = t
		cl := l.producer(101, false)
		produce(t, cl, "warm2")
		ld := leader()
		wait := l.run(nemesis.Step{Kind: nemesis.DelayClient, Hold: 6 * time.Second})
		off := produce(t, cl, "held")
		if c := l.copies("held"); len(c) != 1 || c[0] != off {
			t.Fatalf("at the acknowledgement: copies at %v, acknowledged at %d: want the retry's copy only", c, off)
		}
		wait()
		l.waitFor("the held request delivered late", 15*time.Second, func() error {
			if c := l.copies("held"); len(c) != 2 || c[1] <= off {
				return fmt.Errorf("copies at %v", c)
			}
			return nil
		})
		ops := l.buf.nemesisOps(t, l.hist)
		last := ops[len(ops)-1]
		if last["f"] != history.EndVerb(history.NemesisDelayClient) || last["broker"] != l.addrOf(ld) {
			t.Fatalf("nemesis ops %v: want the end of delay-client on %s", ops, l.addrOf(ld))
		}
		if b, _ := last["late_bytes"].(float64); b <= 0 {
			t.Fatalf("delay-client's end %v: no late bytes", last)
		}
	})

	// client-reset: the client's connections to the leader are closed under
	// it, so its next request to the leader goes out on a new connection.
	t.Run("client-reset", func(t *testing.T) {
		l.t = t
		c := &connects{n: map[int32]int{}}
		cl := l.producer(102, true, c)
		produce(t, cl, "warm3")
		ld := leader()
		before := c.to(ld)
		l.run(nemesis.Step{Kind: nemesis.ClientReset})()
		ops := l.buf.nemesisOps(t, l.hist)
		last := ops[len(ops)-1]
		if last["f"] != history.NemesisClientReset || last["broker"] != l.addrOf(ld) {
			t.Fatalf("nemesis ops %v: want client-reset on %s", ops, l.addrOf(ld))
		}
		if n, _ := last["conns"].(float64); n < 1 {
			t.Fatalf("client-reset %v found no connection", last)
		}
		produce(t, cl, "after-reset")
		if c.to(ld) <= before {
			t.Fatalf("no new connection to leader %d after the reset (%d connects before, %d after)", ld, before, c.to(ld))
		}
	})
}

// connects counts a client's connections, per broker.
type connects struct {
	mu sync.Mutex
	n  map[int32]int
}

func (c *connects) OnBrokerConnect(m kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.mu.Lock()
		c.n[m.NodeID]++
		c.mu.Unlock()
	}
}

func (c *connects) to(id int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// --nemesis-target coordinator resolves to the broker FindCoordinator names
// for the group (as a client's own lookup does), and a fault there moves
// the group's coordination to another broker.
func TestCoordinatorTarget(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	e := newEffectEnv(t)
	e.topo.Group = "coord-g"
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.boot...), kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var coord int32
	e.waitFor("the group's coordinator", 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res := kadm.NewClient(cl).FindGroupCoordinators(ctx, "coord-g")
		r, ok := res["coord-g"]
		if !ok || r.Err != nil {
			return fmt.Errorf("kadm: %v", r.Err)
		}
		id, err := e.topo.Coordinator(ctx)
		if err != nil {
			return err
		}
		if id != r.NodeID {
			return fmt.Errorf("topology says %d, a client's lookup %d", id, r.NodeID)
		}
		coord = id
		return nil
	})
	a, end := e.inject(nemesis.Step{Kind: nemesis.Kill, Hold: time.Minute}, nemesis.TargetCoordinator, 0)
	defer end()
	if len(a.Nodes) != 1 || a.Nodes[0] != coord || a.Note != "" {
		t.Fatalf("coordinator target resolved to %v (%s), want [%d]", a.Nodes, a.Note, coord)
	}
	e.waitFor("coordination moves off the killed broker", 30*time.Second, func() error {
		id, err := e.topo.Coordinator(context.Background())
		if err != nil || id == coord || id < 0 {
			return fmt.Errorf("coordinator %d (%v)", id, err)
		}
		return nil
	})
}

// A restart storm kills and restarts the partition's leader in several
// rounds within one step, each restart without error, and leaves a healthy
// topic with a full ISR.
func TestRestartStormEffect(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	l := newLinkEnv(t)
	r := &nemesis.Runner{Cluster: l.c, Topo: l.topo, History: l.hist, Epoch: time.Now(), Target: nemesis.TargetLeader,
		SessionTimeout: DefaultConfig().Cluster.SessionTimeout, PhaseWait: 20 * time.Second}
	r.Run(context.Background(), nemesis.Schedule{{Kind: nemesis.RestartStorm, Hold: 4 * time.Second, Pick: 5}})
	ops := l.buf.nemesisOps(t, l.hist)
	kills, starts := 0, 0
	for _, op := range ops {
		if e, _ := op["error"].(string); e != "" {
			t.Fatalf("storm op failed: %v", op)
		}
		switch op["phase"] {
		case "kill":
			kills++
		case "start":
			starts++
		}
	}
	last := ops[len(ops)-1]
	if kills < 2 || kills != starts || last["f"] != history.EndVerb(history.NemesisRestartStorm) || last["round"] != float64(kills) {
		t.Fatalf("storm: %d kills, %d starts, end %v", kills, starts, last)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := WaitHealthy(ctx, l.boot, l.topic); err != nil {
		t.Fatalf("after the storm: %v", err)
	}
}

// A run with a client-link fault gives its producers a response timeout
// below the faults' holds and its delay-client steps holds beyond the
// delivery timeout; a run without one keeps the producers' defaults.
func TestLinkFaultSettings(t *testing.T) {
	c := DefaultConfig()
	c.Nemeses = []string{"kill"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if q := c.queueConfig(nil); q.ResponseTimeout != 0 {
		t.Fatalf("no link fault, response timeout %v", q.ResponseTimeout)
	}
	c.Nemeses = []string{"kill", "lose-responses"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	q := c.queueConfig(nil)
	if q.ResponseTimeout != linkResponseTimeout || q.ResponseTimeout >= c.Hold {
		t.Fatalf("link fault: response timeout %v, hold %v", q.ResponseTimeout, c.Hold)
	}
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	if o := c.planOptions(); o.MinDelayHold != c.DeliveryTimeout+delayBeyondDelivery {
		t.Fatalf("delay-client holds at least %v", o.MinDelayHold)
	}
	c.DeliveryTimeout = 500 * time.Millisecond // a response timeout cannot exceed what the delivery allows
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if q := c.queueConfig(nil); q.Validate() != nil {
		t.Fatalf("short delivery timeout: %v", q.Validate())
	}
}

// dockerEffectEnv is effectEnv on 3 docker nodes (min ISR 2) named
// after name, removed when the test ends; skipped without docker.
func dockerEffectEnv(t *testing.T, name string) *effectEnv {
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := testSpec(fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000), 3, 2)
	c, err := docker.New(docker.Options{}).Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.Close(ctx)
	})
	return effectEnvOn(t, c)
}
