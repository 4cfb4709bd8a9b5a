package group

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"gregor/history"
	"gregor/internal/sleep"
	"gregor/workloads/queue"
)

// Workload runs the producers (a queue workload without consumers) and the
// group's consumers of one test.
type Workload struct {
	cfg Config
	// prod is the producers' config, validated: the consumers read its
	// Bootstrap, Topic, PollTimeout and Seed.
	prod queue.Config
	// q is the producers; its recorder writes the consumers' operations
	// too, so processes and the progress count are one run's.
	q *queue.Workload

	mu sync.Mutex
	// slots[i] is consumer slot i; a slot's consumer is replaced on crash,
	// restart and poll-interval expiry. Invariant: len(slots) <=
	// MaxConsumers (Config.validate bounds the start, Join refuses past
	// it); guarded by mu, like rng and run.
	slots []*slot
	rng   *rand.Rand
	// run is the context and wait group of Run, so Join can add a slot;
	// nil before Run.
	run *runState
}

type runState struct {
	ctx context.Context
	wg  *sync.WaitGroup
}

// slot is one consumer position in the group, kept across restarts.
type slot struct {
	id       int
	instance string // group.instance.id when static
	// cur is the running consumer; nil between incarnations. Guarded by
	// Workload.mu.
	cur *consumer
}

// New prepares a workload writing to h, with times relative to epoch:
// producers is the queue workload the group's consumers read from (its
// cluster, topic and seed); its Consumers must be 0, the group's consumers
// take their place.
func New(producers queue.Config, cfg Config, h *history.Writer, epoch time.Time) (*Workload, error) {
	if producers.Consumers != 0 {
		return nil, fmt.Errorf("group: the producers' config asks for %d queue consumers; the group workload's consumers replace them (set Consumers on the group config)", producers.Consumers)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := producers.Validate(); err != nil { // fills what the consumers read (Topic, PollTimeout)
		return nil, err
	}
	q, err := queue.New(producers, h, epoch)
	if err != nil {
		return nil, err
	}
	w := &Workload{cfg: cfg, prod: producers, q: q,
		rng: rand.New(rand.NewPCG(uint64(producers.Seed), 0x67726f7570))} // "group"
	for range cfg.Consumers {
		w.addSlot()
	}
	return w, nil
}

// addSlot adds a consumer slot; the caller starts it.
func (w *Workload) addSlot() *slot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.newSlotLocked()
}

func (w *Workload) newSlotLocked() *slot {
	s := &slot{id: len(w.slots)}
	if w.cfg.Static {
		s.instance = fmt.Sprintf("%s-%d", w.cfg.Group, s.id)
	}
	w.slots = append(w.slots, s)
	return s
}

// Ops is the number of operations completed so far, producers included.
func (w *Workload) Ops() int64 { return w.q.Ops() }

func (w *Workload) write(op history.Op) { w.q.Write(op) }

// Run drives the producers and the consumer slots until ctx is done, then
// waits for every consumer to close.
func (w *Workload) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	w.mu.Lock()
	if w.run != nil {
		w.mu.Unlock()
		return errors.New("group workload: Run called twice")
	}
	w.run = &runState{ctx: ctx, wg: &wg}
	slots := slices.Clone(w.slots)
	w.mu.Unlock()
	wg.Go(func() { w.q.Run(ctx) })
	for _, s := range slots {
		wg.Go(func() { w.slotLoop(ctx, s) })
	}
	<-ctx.Done()
	// Join may add slots until ctx ends; after that the wait group only
	// shrinks (Join checks ctx under mu).
	w.mu.Lock()
	w.mu.Unlock()
	wg.Wait()
	return nil
}

// FinalRead reads every key from offset 0 to its high watermark with a
// fresh assign-based reader (the queue workload's), so the checker knows
// every record that exists.
func (w *Workload) FinalRead(ctx context.Context) error { return w.q.FinalRead(ctx) }

// slotLoop runs one slot's consumers one after the other until ctx ends.
func (w *Workload) slotLoop(ctx context.Context, s *slot) {
	for range MaxIncarnations {
		if ctx.Err() != nil {
			return
		}
		c, err := w.start(s)
		if err != nil {
			sleep.For(ctx, 200*time.Millisecond)
			continue
		}
		end := c.run(ctx)
		switch end {
		case endCrash:
			c.crash()
		default:
			c.closeClean(end)
		}
		w.mu.Lock()
		if s.cur == c {
			s.cur = nil
		}
		w.mu.Unlock()
		if end == endDone {
			return
		}
	}
}

// Crash is the client-crash nemesis's hook: it picks a running consumer
// (from the workload's seeded RNG) and returns its process and tearDown,
// which makes it crash in the middle of its current or next batch (within
// CrashWait): its connections die at once, it neither commits nor leaves
// the group, and a fresh consumer of the same slot (same group.instance.id
// when static) joins in its place.
func (w *Workload) Crash() (process int, tearDown func(), ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var live []*consumer
	for _, s := range w.slots {
		if c := s.cur; c != nil && !c.crashReq.Load() && !c.dead.Load() {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return -1, nil, false
	}
	c := live[w.rng.IntN(len(live))]
	return c.proc, func() { c.requestCrash() }, true
}

// ErrNotRunning is returned by Join and RollingRestart outside Run.
var ErrNotRunning = errors.New("group workload: not running")

// Join adds a consumer to the group (seed 000's experiment B: "启动第 3 个
// consumer，触发 rebalance") and returns its process once it started.
func (w *Workload) Join(ctx context.Context) (int, error) {
	w.mu.Lock()
	run := w.run
	if run == nil || run.ctx.Err() != nil {
		w.mu.Unlock()
		return -1, ErrNotRunning
	}
	if len(w.slots) >= MaxConsumers {
		w.mu.Unlock()
		return -1, fmt.Errorf("group workload: %d consumers already (at most %d)", len(w.slots), MaxConsumers)
	}
	s := w.newSlotLocked()
	// Under mu: Run's wait starts only after it took mu once ctx ended.
	run.wg.Go(func() { w.slotLoop(run.ctx, s) })
	w.mu.Unlock()
	c, err := w.waitStarted(ctx, s, nil, 10*time.Second)
	if err != nil {
		return -1, err
	}
	return c.proc, nil
}

// RollingRestart restarts every consumer in slot order, each one cleanly
// (close, then a fresh consumer of the same slot and instance id), waiting
// for the new one to be assigned partitions before the next (seed 000's
// experiment B step 4). It returns the new consumers' processes.
func (w *Workload) RollingRestart(ctx context.Context) ([]int, error) {
	w.mu.Lock()
	if w.run == nil {
		w.mu.Unlock()
		return nil, ErrNotRunning
	}
	slots := slices.Clone(w.slots)
	w.mu.Unlock()
	var procs []int
	var errs []error
	for _, s := range slots {
		w.mu.Lock()
		old := s.cur
		w.mu.Unlock()
		if old == nil || old.dead.Load() || old.crashReq.Load() {
			continue
		}
		old.restartReq.Store(true)
		c, err := w.waitStarted(ctx, s, old, w.cfg.RestartSettle)
		if err != nil {
			errs = append(errs, fmt.Errorf("slot %d: %w", s.id, err))
			continue
		}
		procs = append(procs, c.proc)
		// Kafka's rolling restart waits for the restarted instance to
		// consume again: an assignment.
		deadline := time.Now().Add(w.cfg.RestartSettle)
		for !c.assigned.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
			sleep.For(ctx, 20*time.Millisecond)
		}
	}
	return procs, errors.Join(errs...)
}

// waitStarted waits until s runs a consumer other than old.
func (w *Workload) waitStarted(ctx context.Context, s *slot, old *consumer, limit time.Duration) (*consumer, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		w.mu.Lock()
		c := s.cur
		w.mu.Unlock()
		if c != nil && c != old {
			return c, nil
		}
		sleep.For(ctx, 10*time.Millisecond)
	}
	return nil, fmt.Errorf("no new consumer within %v", limit)
}
