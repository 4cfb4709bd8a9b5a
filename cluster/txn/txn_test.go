package txn

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
	"gregor/cluster/coordinator/coordinatortest"
)

// states lists the states written for id in l, in order.
func states(l *coordinatortest.MemLog, id string) []State {
	var out []State
	for _, r := range l.Records() {
		var k recordKey
		var t Transit
		if json.Unmarshal(r.Key, &k) == nil && k.ID == id && json.Unmarshal(r.Value, &t) == nil {
			out = append(out, t.State)
		}
	}
	return out
}

type memEnv struct {
	mu      sync.Mutex
	log     *coordinatortest.MemLog
	nextPID int64
	markers []Markers
	refuse  map[TopicPartition]error // markers to these partitions fail
}

func (e *memEnv) Partitions() int32 { return 1 }
func (e *memEnv) Log(int32) coordinator.Log {
	return e.log
}
func (e *memEnv) NewProducerID(context.Context) (int64, *kerr.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextPID++
	return e.nextPID, nil
}
func (e *memEnv) OffsetsPartition(g string) (TopicPartition, *kerr.Error) {
	return TopicPartition{"__consumer_offsets", coordinator.PartitionFor(g, 8)}, nil
}
func (e *memEnv) WriteMarkers(_ context.Context, m Markers) map[TopicPartition]error {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[TopicPartition]error{}
	var done []TopicPartition
	for _, tp := range m.Partitions {
		out[tp] = e.refuse[tp]
		if e.refuse[tp] == nil {
			done = append(done, tp)
		}
	}
	if len(done) > 0 {
		m.Partitions = done
		e.markers = append(e.markers, m)
	}
	return out
}

func (e *memEnv) written() []Markers {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.markers)
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
func (c *clock) AfterFunc(d time.Duration, f func()) coordinator.Timer { return time.AfterFunc(d, f) }

type harness struct {
	t     *testing.T
	env   *memEnv
	clock *clock
	c     *Coordinator
}

func newHarness(t *testing.T, version int16, l *coordinatortest.MemLog) *harness {
	if l == nil {
		l = coordinatortest.NewMemLog(1)
	}
	h := &harness{t: t, env: &memEnv{log: l, nextPID: 100, refuse: map[TopicPartition]error{}}, clock: &clock{now: time.Unix(1_000_000, 0)}}
	h.c = New(Config{Partitions: 1, Version: version, MarkerBackoff: time.Millisecond, AbortTimedOutEvery: time.Hour,
		Clock: h.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, h.env)
	t.Cleanup(h.c.Close)
	h.c.Poll()
	h.waitFor("shard loaded", func() bool { _, e := h.c.shardFor("x"); return e == nil })
	return h
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("%s: not within 2s", what)
}

func (h *harness) state(id string) State {
	d, e := h.c.Describe(id)
	if e != nil {
		h.t.Fatalf("describe %s: %v", id, e)
	}
	return d.State
}

func (h *harness) init(id string) (int64, int16) {
	h.t.Helper()
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		pid, epoch, e := h.c.InitProducerID(ctx, id, 60_000, nil)
		if e == kerr.ConcurrentTransactions {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if e != nil {
			h.t.Fatalf("init %s: %v", id, e)
		}
		return pid, epoch
	}
	h.t.Fatalf("init %s: CONCURRENT_TRANSACTIONS for good", id)
	return 0, 0
}

var (
	tpA = TopicPartition{"a", 0}
	tpB = TopicPartition{"b", 1}
)

// The commit path: Ongoing, PrepareCommit written before any marker,
// markers to every partition at the producer's epoch, CompleteCommit.
func TestCommitWritesPrepareThenMarkersThenComplete(t *testing.T) {
	for _, tv := range []int16{1, 2} {
		h := newHarness(t, tv, nil)
		ctx := context.Background()
		pid, epoch := h.init("t")
		if epoch != 0 {
			t.Fatalf("tv%d: first epoch %d", tv, epoch)
		}
		if e := h.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{tpA, tpB}); e != nil {
			t.Fatal(e)
		}
		if h.state("t") != Ongoing {
			t.Fatalf("tv%d: state %s after AddPartitions", tv, h.state("t"))
		}
		gotPid, gotEpoch, e := h.c.EndTxn(ctx, "t", pid, epoch, true, tv)
		if e != nil {
			t.Fatal(e)
		}
		wantEpoch := epoch
		if tv == 2 {
			wantEpoch = epoch + 1 // KIP-890: every end bumps the epoch
		}
		if gotPid != pid || gotEpoch != wantEpoch {
			t.Fatalf("tv%d: EndTxn answered %d/%d, want %d/%d", tv, gotPid, gotEpoch, pid, wantEpoch)
		}
		h.waitFor("CompleteCommit", func() bool { return h.state("t") == CompleteCommit })
		if got := states(h.env.log, "t"); !slices.Equal(got, []State{Empty, Ongoing, PrepareCommit, CompleteCommit}) {
			t.Fatalf("tv%d: states written %v", tv, got)
		}
		ms := h.env.written()
		if len(ms) != 1 || !ms[0].Commit || ms[0].Epoch != wantEpoch || len(ms[0].Partitions) != 2 || ms[0].Version != tv {
			t.Fatalf("tv%d: markers %+v", tv, ms)
		}
		// A retry of the end is answered from the completed state.
		retryEpoch := epoch
		if _, e2, e := h.c.EndTxn(ctx, "t", pid, retryEpoch, true, tv); e != nil || e2 != wantEpoch {
			t.Fatalf("tv%d: retried EndTxn: %v epoch %d", tv, e, e2)
		}
	}
}

// No marker is written while the Prepare state cannot be made durable.
func TestNoMarkerBeforePrepareIsDurable(t *testing.T) {
	h := newHarness(t, 1, nil)
	ctx := context.Background()
	pid, epoch := h.init("t")
	if e := h.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{tpA}); e != nil {
		t.Fatal(e)
	}
	h.env.log.FailAppends(kerr.NotEnoughReplicas)
	if _, _, e := h.c.EndTxn(ctx, "t", pid, epoch, true, 1); e != kerr.CoordinatorNotAvailable {
		t.Fatalf("EndTxn with the log unavailable: %v, want COORDINATOR_NOT_AVAILABLE", e)
	}
	if ms := h.env.written(); len(ms) != 0 {
		t.Fatalf("markers written without a durable prepare: %+v", ms)
	}
	if h.state("t") != Ongoing {
		t.Fatalf("state %s, want Ongoing", h.state("t"))
	}
}

// A new producer for the id fences the old: its open transaction is
// aborted at a bumped epoch first (CONCURRENT_TRANSACTIONS meanwhile), and
// the old producer's requests are PRODUCER_FENCED.
func TestInitFencesAndAbortsOngoing(t *testing.T) {
	for _, tv := range []int16{1, 2} {
		h := newHarness(t, tv, nil)
		ctx := context.Background()
		pid, epoch := h.init("t")
		if e := h.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{tpA}); e != nil {
			t.Fatal(e)
		}
		if _, _, e := h.c.InitProducerID(ctx, "t", 60_000, nil); e != kerr.ConcurrentTransactions {
			t.Fatalf("tv%d: init over an open transaction: %v", tv, e)
		}
		pid2, epoch2 := h.init("t")
		ms := h.env.written()
		if len(ms) != 1 || ms[0].Commit || ms[0].Epoch <= epoch {
			t.Fatalf("tv%d: fencing abort markers %+v", tv, ms)
		}
		if pid2 != pid || epoch2 <= ms[0].Epoch {
			t.Fatalf("tv%d: new producer %d/%d after abort at epoch %d", tv, pid2, epoch2, ms[0].Epoch)
		}
		if _, _, e := h.c.EndTxn(ctx, "t", pid, epoch, true, tv); e != kerr.ProducerFenced {
			t.Fatalf("tv%d: zombie EndTxn: %v", tv, e)
		}
		if e := h.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{tpB}); e != kerr.ProducerFenced {
			t.Fatalf("tv%d: zombie AddPartitions: %v", tv, e)
		}
	}
}

// A transaction open past its timeout is aborted and its producer fenced.
func TestTimeoutAbortsAndFences(t *testing.T) {
	for _, tv := range []int16{1, 2} {
		h := newHarness(t, tv, nil)
		ctx := context.Background()
		pid, epoch, e := h.c.InitProducerID(ctx, "t", 1000, nil)
		if e != nil {
			t.Fatal(e)
		}
		if e := h.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{tpA}); e != nil {
			t.Fatal(e)
		}
		h.c.AbortTimedOut()
		if h.state("t") != Ongoing {
			t.Fatalf("tv%d: aborted before its timeout", tv)
		}
		h.clock.advance(1001 * time.Millisecond)
		h.c.AbortTimedOut()
		h.waitFor("CompleteAbort", func() bool { return h.state("t") == CompleteAbort })
		if _, _, e := h.c.EndTxn(ctx, "t", pid, epoch, true, tv); e != kerr.ProducerFenced {
			t.Fatalf("tv%d: EndTxn of the timed-out producer: %v, want PRODUCER_FENCED", tv, e)
		}
	}
}

// Version 2: a late EndTxn of a finished transaction cannot end the next
// one. Version 1 (Kafka 3.x) takes it: the epoch did not move.
func TestLateEndTxn(t *testing.T) {
	for _, tv := range []int16{1, 2} {
		h := newHarness(t, tv, nil)
		ctx := context.Background()
		pid, epoch := h.init("t")
		h.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{tpA})
		_, next, e := h.c.EndTxn(ctx, "t", pid, epoch, false, tv)
		if e != nil {
			t.Fatal(e)
		}
		h.waitFor("CompleteAbort", func() bool { return h.state("t") == CompleteAbort })
		if e := h.c.AddPartitions(ctx, "t", pid, next, []TopicPartition{tpB}); e != nil {
			t.Fatalf("tv%d: next transaction: %v", tv, e)
		}
		_, _, e = h.c.EndTxn(ctx, "t", pid, epoch, true, tv) // the old one's commit, delayed
		switch {
		case tv == 2 && e != kerr.ProducerFenced:
			t.Fatalf("tv2: late EndTxn: %v, want PRODUCER_FENCED", e)
		case tv == 1 && e != nil:
			t.Fatalf("tv1: late EndTxn at the same epoch: %v (Kafka 3.x commits the next transaction)", e)
		}
	}
}

// A coordinator that loads a Prepare state finishes the transaction.
func TestLoadCompletesPrepared(t *testing.T) {
	l := coordinatortest.NewMemLog(7)
	t0 := Transit{ProducerID: 5, PrevProducerID: 5, NextProducerID: -1, Epoch: 3, LastEpoch: -1, TimeoutMs: 60000, State: PrepareCommit,
		Partitions: []TopicPartition{tpA, tpB}, StartMs: 1, UpdateMs: 2}
	l.Add(coordinator.Record{Key: mustJSON(recordKey{ID: "t"}), Value: mustJSON(&t0)})
	h := newHarness(t, 1, l)
	h.waitFor("CompleteCommit", func() bool { return h.state("t") == CompleteCommit })
	ms := h.env.written()
	if len(ms) != 1 || !ms[0].Commit || ms[0].CoordinatorEpoch != 7 || ms[0].Epoch != 3 || len(ms[0].Partitions) != 2 {
		t.Fatalf("markers %+v", ms)
	}
}

// Markers are retried until written; the Complete state waits for them.
func TestMarkersRetried(t *testing.T) {
	h := newHarness(t, 1, nil)
	ctx := context.Background()
	pid, epoch := h.init("t")
	h.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{tpA, tpB})
	h.env.mu.Lock()
	h.env.refuse[tpB] = kerr.NotLeaderForPartition
	h.env.mu.Unlock()
	if _, _, e := h.c.EndTxn(ctx, "t", pid, epoch, true, 1); e != nil {
		t.Fatal(e)
	}
	h.waitFor("marker to a", func() bool { return len(h.env.written()) > 0 })
	time.Sleep(20 * time.Millisecond)
	if h.state("t") != PrepareCommit {
		t.Fatalf("state %s with a marker owed", h.state("t"))
	}
	d, _ := h.c.Describe("t")
	if len(d.Partitions) != 1 || d.Partitions[0] != tpB {
		t.Fatalf("partitions owed %v, want [b-1]", d.Partitions)
	}
	h.env.mu.Lock()
	delete(h.env.refuse, tpB)
	h.env.mu.Unlock()
	h.waitFor("CompleteCommit", func() bool { return h.state("t") == CompleteCommit })
}

func TestVerifyPartitions(t *testing.T) {
	h := newHarness(t, 1, nil)
	ctx := context.Background()
	pid, epoch := h.init("t")
	h.c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{tpA})
	res, e := h.c.VerifyPartitions("t", pid, epoch, []TopicPartition{tpA, tpB})
	if e != nil || res[tpA] != nil || res[tpB] != kerr.TransactionAbortable {
		t.Fatalf("verify: %v %v", res, e)
	}
	if _, e := h.c.VerifyPartitions("t", pid, epoch-1, []TopicPartition{tpA}); e != kerr.ProducerFenced {
		t.Fatalf("verify at an old epoch: %v", e)
	}
	if _, e := h.c.VerifyPartitions("t", pid+1, epoch, []TopicPartition{tpA}); e != kerr.InvalidProducerIDMapping {
		t.Fatalf("verify of another producer: %v", e)
	}
	ds, _, e := h.c.List(Filter{States: []string{"Ongoing"}, MinDurationMs: -1})
	if e != nil || len(ds) != 1 || ds[0].ID != "t" {
		t.Fatalf("list: %+v %v", ds, e)
	}
}
