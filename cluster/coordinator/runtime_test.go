package coordinator_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
	"gregor/cluster/coordinator/coordinatortest"
	"gregor/cluster/invariant"
)

func TestMain(m *testing.M) {
	invariant.Enable()
	os.Exit(m.Run())
}

// shard is a state machine that only counts: it loads by replaying its log
// (so a test holds a load with BlockReplays) and records its unload.
type shard struct {
	ctx          context.Context
	log          coordinator.Log
	partition    int32
	epoch        int32
	mu           sync.Mutex
	state        coordinator.State
	records      int
	ctxEndedLast bool // at Unload, the context had ended already
}

func (s *shard) Load() {
	n := 0
	err := s.log.Replay(s.ctx, func(int64, coordinator.Record) { n++ })
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.state == coordinator.Loading {
		s.state, s.records = coordinator.Loaded, n
	}
}

func (s *shard) Unload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.ctxEndedLast = coordinator.Unloaded, s.ctx.Err() != nil
}

func (s *shard) State() coordinator.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// topic is an internal topic of in-memory partitions; a nil one is hosted
// elsewhere.
type topic struct {
	mu   sync.Mutex
	logs []*coordinatortest.MemLog
}

func (t *topic) Partitions() int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int32(len(t.logs))
}

func (t *topic) Log(p int32) coordinator.Log {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.logs[p] == nil {
		return nil
	}
	return t.logs[p]
}

// newRuntime is a runtime over logs that records every shard it makes.
func newRuntime(t *testing.T, logs ...*coordinatortest.MemLog) (*coordinator.Runtime[*shard], *topic, func() []*shard) {
	tp := &topic{logs: logs}
	var mu sync.Mutex
	var made []*shard
	rt := coordinator.New(coordinator.Config{Name: "test coordinator", PollEvery: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, tp,
		func(ctx context.Context, partition, epoch int32, l coordinator.Log) *shard {
			s := &shard{ctx: ctx, log: l, partition: partition, epoch: epoch}
			mu.Lock()
			made = append(made, s)
			mu.Unlock()
			return s
		})
	t.Cleanup(rt.Close)
	return rt, tp, func() []*shard {
		mu.Lock()
		defer mu.Unlock()
		return append([]*shard(nil), made...)
	}
}

// keyOn is a key that PartitionFor places on partition p of n.
func keyOn(t *testing.T, p, n int32) string {
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		if coordinator.PartitionFor(k, n) == p {
			return k
		}
	}
	t.Fatalf("no key on partition %d of %d", p, n)
	return ""
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A shard serves once loaded, only for the partitions this broker leads; a
// key elsewhere is NOT_COORDINATOR; a topic not yet created is
// COORDINATOR_NOT_AVAILABLE.
func TestShardForFollowsLoad(t *testing.T) {
	led, other := coordinatortest.NewMemLog(3), coordinatortest.NewMemLog(0)
	other.SetLeader(false, 0)
	release := make(chan struct{})
	led.BlockReplays(release)
	led.Add(coordinator.Record{Key: []byte("k")})
	rt, _, made := newRuntime(t, led, other)
	if _, e := rt.ShardFor("x"); e != kerr.NotCoordinator && e != kerr.CoordinatorNotAvailable {
		t.Fatalf("before any poll: %v", e)
	}
	rt.Poll()
	onLed, onOther := keyOn(t, 0, 2), keyOn(t, 1, 2)
	if _, e := rt.ShardFor(onLed); e != kerr.CoordinatorLoadInProgress {
		t.Fatalf("while loading: %v, want COORDINATOR_LOAD_IN_PROGRESS", e)
	}
	if ss, loading := rt.Loaded(); len(ss) != 0 || !loading {
		t.Fatalf("Loaded while loading = %d shards, loading %v", len(ss), loading)
	}
	close(release)
	waitFor(t, "the load", func() bool { _, e := rt.ShardFor(onLed); return e == nil })
	s, _ := rt.ShardFor(onLed)
	if s.partition != 0 || s.epoch != 3 || s.records != 1 || len(made()) != 1 {
		t.Fatalf("shard of partition %d epoch %d replayed %d records (%d made), want 0, 3, 1 (1)", s.partition, s.epoch, s.records, len(made()))
	}
	if _, e := rt.ShardFor(onOther); e != kerr.NotCoordinator {
		t.Fatalf("key on a partition led elsewhere: %v, want NOT_COORDINATOR", e)
	}
	empty, _, _ := newRuntime(t)
	if _, e := empty.ShardFor("x"); e != kerr.CoordinatorNotAvailable {
		t.Fatalf("no topic: %v, want COORDINATOR_NOT_AVAILABLE", e)
	}
}

// A new leader epoch is a new shard; the old one is unloaded with its
// context ended first, as are shards of a partition that lost leadership
// or of a topic that shrank, and every shard at Close.
func TestUnloadOnLeadershipChange(t *testing.T) {
	a, b := coordinatortest.NewMemLog(1), coordinatortest.NewMemLog(1)
	rt, tp, made := newRuntime(t, a, b)
	rt.Poll()
	waitFor(t, "two loads", func() bool { ss, _ := rt.Loaded(); return len(ss) == 2 })
	a.SetLeader(true, 2)
	rt.Poll()
	ss := made()
	if len(ss) != 3 || ss[0].State() != coordinator.Unloaded || !ss[0].ctxEndedLast || ss[2].epoch != 2 {
		t.Fatalf("after an epoch bump: %d shards made, first %v (context ended first: %v)", len(ss), ss[0].State(), ss[0].ctxEndedLast)
	}
	b.SetLeader(false, 1)
	rt.Poll()
	if ss[1].State() != coordinator.Unloaded {
		t.Fatalf("a shard whose leadership moved is %v", ss[1].State())
	}
	b.SetLeader(true, 1)
	rt.Poll()
	tp.mu.Lock()
	tp.logs = tp.logs[:1]
	tp.mu.Unlock()
	rt.Poll()
	ss = made()
	if len(ss) != 4 || ss[3].State() != coordinator.Unloaded {
		t.Fatalf("after the topic shrank: %d shards made, last %v", len(ss), ss[len(ss)-1].State())
	}
	rt.Close()
	if ss[2].State() != coordinator.Unloaded || !ss[2].ctxEndedLast {
		t.Fatalf("at Close: %v (context ended first: %v)", ss[2].State(), ss[2].ctxEndedLast)
	}
	if _, e := rt.ShardFor(keyOn(t, 0, 1)); e != kerr.CoordinatorNotAvailable {
		t.Fatalf("after Close: %v, want COORDINATOR_NOT_AVAILABLE", e)
	}
}

// Close ends a load blocked in its replay (it waits for it), and nothing
// starts after Close: not a poll's load, not background work.
func TestCloseBoundsLoadsAndBackground(t *testing.T) {
	l := coordinatortest.NewMemLog(1)
	l.BlockReplays(make(chan struct{})) // never released
	rt, _, made := newRuntime(t, l)
	rt.Start()
	waitFor(t, "the poll loop's first load", func() bool { return len(made()) == 1 })
	done := make(chan struct{})
	go func() { rt.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits on a blocked load")
	}
	ran := make(chan struct{}, 1)
	rt.Background(func() { ran <- struct{}{} })
	rt.Poll()
	time.Sleep(10 * time.Millisecond)
	if len(ran) != 0 || len(made()) != 1 {
		t.Fatalf("after Close: background ran %d, shards made %d", len(ran), len(made()))
	}
}
