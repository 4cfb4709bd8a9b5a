package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/workloads/kit"
)

// Workload runs the producers and consumers of one test.
type Workload struct {
	cfg Config
	*kit.Recorder

	// next[p] is the last value handed out for partition p. Invariant:
	// values of a key are unique across the test (only an atomic Add hands
	// them out; the checker reports a repeated value as a duplicate send).
	next []atomic.Int64
	// acked[p] is one past the highest offset acknowledged for partition
	// p: the final read reads at least that far, or shows it gone.
	acked []atomic.Int64
	// peakInFlight is the most produce requests one producer client had in
	// flight at once: evidence that MaxInFlight pipelines (see send).
	peakInFlight atomic.Int64

	live *kit.Clients[*client] // for Crash
}

// PeakInFlight is the most produce requests one producer client had
// written and not yet answered at once, over the run so far.
func (w *Workload) PeakInFlight() int { return int(w.peakInFlight.Load()) }

// client is one process's franz-go client.
type client = kit.Client

// New prepares a workload writing to h, with times relative to epoch.
func New(cfg Config, h *history.Writer, epoch time.Time) (*Workload, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("queue: no bootstrap brokers")
	}
	return &Workload{cfg: cfg, Recorder: kit.NewRecorder(h, epoch), next: make([]atomic.Int64, cfg.Partitions),
		acked: make([]atomic.Int64, cfg.Partitions),
		live:  kit.NewClients[*client](cfg.Seed, 0x717565756)}, nil
}

// Crash is the client-crash nemesis's hook (kit.Clients.Crash): one
// running client, drawn from the workload's seeded RNG, is closed under its
// current operation.
func (w *Workload) Crash() (process int, tearDown func(), ok bool) { return w.live.Crash() }

// Run drives producers and consumers until ctx is done, then waits for each
// process's operation in flight (bounded by the delivery timeout).
func (w *Workload) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	tokens := kit.Limiter(ctx, w.cfg.Rate, w.cfg.Producers)
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

// baseOpts are every client's options; proc is its history process, or -1
// for the harness's own requests (end offsets), which dial directly.
func (w *Workload) baseOpts(proc int) []kgo.Opt {
	o := []kgo.Opt{
		kgo.SeedBrokers(w.cfg.Bootstrap...),
		dialer.Opt(time.Second), dialer.Auth(),
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
