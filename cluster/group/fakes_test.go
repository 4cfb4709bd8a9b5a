package group

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
	"gregor/cluster/coordinator/coordinatortest"
	"gregor/cluster/meta"
)

// fakeClock fires timers only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
	c       *fakeClock
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) coordinator.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f, c: c}
	c.timers = append(c.timers, t)
	return t
}

// advance moves time forward, firing due timers in deadline order (timers
// they arm fire too if due).
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for i := 0; i < 10_000; i++ {
		c.mu.Lock()
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool { return t.stopped })
			c.mu.Unlock()
			return
		}
		next.stopped = true
		c.now = next.at
		c.mu.Unlock()
		next.f()
	}
	panic("fakeClock: timers keep re-arming")
}

// memLog is an in-memory __consumer_offsets partition that also takes
// transactional writes.
type memLog struct {
	*coordinatortest.MemLog
	gate *txnGate
}

// txnGate holds transactional writes while armed: each one tells entered,
// then waits for release, before its records are appended or, with after,
// once they are (the answer still out).
type txnGate struct {
	mu       sync.Mutex
	armed    bool
	after    bool
	entered  chan struct{}
	released chan struct{}
}

// arm makes the next transactional writes wait; the returned channels say
// when one waits and let it go (close release).
func (g *txnGate) arm(after bool) (entered <-chan struct{}, release chan<- struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.after = true, after
	g.entered, g.released = make(chan struct{}, 16), make(chan struct{})
	return g.entered, g.released
}

func (g *txnGate) wait(after bool) {
	g.mu.Lock()
	armed, entered, released := g.armed && g.after == after, g.entered, g.released
	g.mu.Unlock()
	if armed {
		entered <- struct{}{}
		<-released
	}
}

// AppendTxn makes memLog a TxnLog: a transactional batch is its records
// tagged with the producer (FailAppends applies as to Append).
func (l memLog) AppendTxn(ctx context.Context, epoch int32, w TxnWrite, recs []coordinator.Record) (int64, *kerr.Error) {
	tagged := make([]coordinator.Record, len(recs))
	for i, r := range recs {
		r.Txn = &coordinator.TxnInfo{ProducerID: w.ProducerID}
		tagged[i] = r
	}
	l.gate.wait(false)
	base, e := l.Append(ctx, epoch, tagged)
	l.gate.wait(true)
	return base, e
}

type memEnv struct {
	logs []memLog
	// image is the metadata consumer groups assign from (nil: none).
	image atomic.Pointer[meta.Image]
}

func (e *memEnv) Image() *meta.Image {
	if im := e.image.Load(); im != nil {
		return im
	}
	return meta.Empty()
}

func (e *memEnv) Partitions() int32 { return int32(len(e.logs)) }
func (e *memEnv) Log(p int32) coordinator.Log {
	if e.logs[p].MemLog == nil {
		return nil
	}
	return e.logs[p]
}

// harness is one coordinator over in-memory logs that it leads.
type harness struct {
	t     *testing.T
	clock *fakeClock
	env   *memEnv
	c     *Coordinator
}

func newHarness(t *testing.T, partitions int) *harness {
	h := &harness{t: t, clock: newFakeClock(), env: &memEnv{}}
	for i := 0; i < partitions; i++ {
		h.env.logs = append(h.env.logs, memLog{coordinatortest.NewMemLog(0), &txnGate{}})
	}
	h.c = New(Config{OffsetsPartitions: int32(partitions), InitialRebalanceDelay: 300 * time.Millisecond, Clock: h.clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, h.env)
	t.Cleanup(h.c.Close)
	h.c.Poll()
	h.waitLoaded("g")
	return h
}

// waitLoaded waits (bounded) until the group's shard has loaded.
func (h *harness) waitLoaded(group string) {
	h.t.Helper()
	for i := 0; i < 400; i++ {
		if h.c.Leads(group) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("shard of %s did not load", group)
}
