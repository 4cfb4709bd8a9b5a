package queue

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/workloads/internal/live"
)

// Workload runs the producers and consumers of one test.
type Workload struct {
	cfg   Config
	h     *history.Writer
	epoch time.Time

	// next[p] is the last value handed out for partition p. Invariant:
	// values of a key are unique across the test (only an atomic Add hands
	// them out; the checker reports a repeated value as a duplicate send).
	next []atomic.Int64
	// acked[p] is one past the highest offset acknowledged for partition
	// p: the final read reads at least that far, or shows it gone.
	acked    []atomic.Int64
	nextProc atomic.Int64
	ops      atomic.Int64
	// peakInFlight is the most produce requests one producer client had in
	// flight at once: evidence that MaxInFlight pipelines (see send).
	peakInFlight atomic.Int64

	live *live.Set[*client] // for Crash
}

// PeakInFlight is the most produce requests one producer client had
// written and not yet answered at once, over the run so far.
func (w *Workload) PeakInFlight() int { return int(w.peakInFlight.Load()) }

// client is one process's franz-go client. crashed is set by Crash, which
// closes cl under the running operation.
type client struct {
	proc    int
	cl      *kgo.Client
	crashed atomic.Bool
}

// New prepares a workload writing to h, with times relative to epoch.
func New(cfg Config, h *history.Writer, epoch time.Time) (*Workload, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("queue: no bootstrap brokers")
	}
	return &Workload{cfg: cfg, h: h, epoch: epoch, next: make([]atomic.Int64, cfg.Partitions),
		acked: make([]atomic.Int64, cfg.Partitions),
		live:  live.New[*client](rand.New(rand.NewPCG(uint64(cfg.Seed), 0x717565756)))}, nil
}

// Ops is the number of operations completed so far.
func (w *Workload) Ops() int64 { return w.ops.Load() }

func (w *Workload) now() int64 { return int64(time.Since(w.epoch)) }

func (w *Workload) write(op history.Op) {
	op.Time = w.now()
	if op.Type != history.Invoke {
		w.ops.Add(1)
	}
	w.h.Write(op)
}

func (w *Workload) newProc() int { return int(w.nextProc.Add(1) - 1) }

// NewProcess hands out a process id that no client of w uses, for a
// workload that runs its own clients beside w's producers (workloads/group).
func (w *Workload) NewProcess() int { return w.newProc() }

func (w *Workload) register(c *client) { w.live.Add(c.proc, c) }

func (w *Workload) unregister(c *client) {
	w.live.Remove(c.proc)
	c.cl.Close()
}

// Crash is the client-crash nemesis's hook. It picks one running client
// (drawn from the workload's seeded RNG) and returns its process and
// tearDown, which closes the client under its current operation; that
// operation completes as info unless it already succeeded. The caller
// records the crash before calling tearDown, so the history shows the cause
// before the effect. The process is retired: its goroutine writes a crash
// event and continues as a new process on a new client. ok is false when no
// client runs.
func (w *Workload) Crash() (process int, tearDown func(), ok bool) {
	_, c, ok := w.live.Draw(func(c *client) bool { return !c.crashed.Load() })
	if !ok {
		return -1, nil, false
	}
	return c.proc, func() {
		c.crashed.Store(true)
		go c.cl.Close() // Close waits for in-flight requests; the crash must not
	}, true
}

// crashed writes the crash event of a retired process.
func (w *Workload) crashEvent(c *client) {
	raw, _ := json.Marshal(map[string]any{"process": c.proc})
	w.write(history.Op{Process: history.Process(c.proc), Type: history.Info, F: history.FCrash, Raw: raw})
}

// Run drives producers and consumers until ctx is done, then waits for each
// process's operation in flight (bounded by the delivery timeout).
func (w *Workload) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	tokens := w.limiter(ctx)
	rngMu := sync.Mutex{}
	seedRNG := rand.New(rand.NewPCG(uint64(w.cfg.Seed), 1))
	for range w.cfg.Producers {
		rngMu.Lock()
		s := seedRNG.Uint64()
		rngMu.Unlock()
		wg.Go(func() { w.produceLoop(ctx, tokens, rand.New(rand.NewPCG(s, 2))) })
	}
	for range w.cfg.Consumers {
		wg.Go(func() { w.consumeLoop(ctx) })
	}
	wg.Wait()
	return nil
}

// limiter hands out one token per send at cfg.Rate; nil means unlimited.
func (w *Workload) limiter(ctx context.Context) <-chan struct{} {
	if w.cfg.Rate <= 0 {
		return nil
	}
	ch := make(chan struct{}, max(1, w.cfg.Producers)) // bounded burst
	every := time.Duration(float64(time.Second) / w.cfg.Rate)
	go func() {
		t := time.NewTicker(max(every, time.Microsecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return ch
}

// baseOpts are every client's options; proc is its history process, or -1
// for the harness's own requests (end offsets), which dial directly.
func (w *Workload) baseOpts(proc int) []kgo.Opt {
	o := []kgo.Opt{
		kgo.SeedBrokers(w.cfg.Bootstrap...),
		kgo.DialTimeout(time.Second),
		kgo.RequestTimeoutOverhead(requestOverhead),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
	}
	if w.cfg.Dial != nil && proc >= 0 {
		o = append(o, kgo.Dialer(w.cfg.Dial(proc)))
	}
	return o
}
