package share

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/workloads/queue"
)

// Kafka's defaults the run's brokers keep: the shortest lock a group may
// set (group.share.min.record.lock.duration.ms) and the delivery count
// limit (group.share.delivery.count.limit).
const (
	LockMs        = 15000
	DeliveryLimit = 5
)

// Workload is the producers (a queue workload without readers) and the
// share group's consumers.
type Workload struct {
	prod      queue.Config
	q         *queue.Workload
	group     string
	consumers int
	mu        sync.Mutex // guards rng
	rng       *rand.Rand
	// stalls hands a pause-share-consumer step to the consumer that polls
	// records next; it answers on the channel with its process once it
	// has acknowledged late.
	stalls chan chan int
}

// New prepares a workload of consumers share consumers writing to h.
func New(prod queue.Config, consumers int, h *history.Writer, epoch time.Time) (*Workload, error) {
	if prod.Consumers != 0 {
		return nil, fmt.Errorf("share: the producers' config asks for %d queue readers; the share consumers replace them", prod.Consumers)
	}
	if err := prod.Validate(); err != nil {
		return nil, err
	}
	q, err := queue.New(prod, h, epoch)
	if err != nil {
		return nil, err
	}
	return &Workload{prod: prod, q: q, group: fmt.Sprintf("gregor-share-%d", prod.Seed), consumers: consumers,
		rng: rand.New(rand.NewPCG(uint64(prod.Seed), 0x7368617265)), stalls: make(chan chan int)}, nil // "share"
}

// Ops counts completed operations.
func (w *Workload) Ops() int64 { return w.q.Ops() }

// step runs a pause-share-consumer step (kit.Hooks.Clients): the next
// consumer to poll records stalls past its lock with fetching paused,
// acknowledges them late and goes on; step returns its process then.
// Bounded by ctx (the fault phase).
func (w *Workload) step(ctx context.Context, kind string) ([]int, error) {
	if kind != history.NemesisPauseShareConsumer {
		return nil, fmt.Errorf("nemesis %s is not a share-consumer step", kind)
	}
	done := make(chan int, 1)
	select {
	case w.stalls <- done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case p := <-done:
		return []int{p}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Crash is the client-crash nemesis's hook, on the producers.
func (w *Workload) Crash() (int, func(), bool) { return w.q.Crash() }

// Run sets the group's configs, then drives producers and consumers until
// ctx ends.
func (w *Workload) Run(ctx context.Context) error {
	if err := w.configure(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.q.Run(ctx) })
	for range w.consumers {
		w.mu.Lock()
		seed := w.rng.Uint64()
		w.mu.Unlock()
		wg.Go(func() { w.consumeLoop(ctx, rand.New(rand.NewPCG(seed, 3))) })
	}
	wg.Wait()
	return nil
}

// configure sets share.auto.offset.reset=earliest (so every record is the
// group's) and the lock, and waits until every broker has them: a share
// partition initialized before would start at the log end.
func (w *Workload) configure(ctx context.Context) error {
	cl, err := kgo.NewClient(w.opts(-1)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, w.group
	for k, v := range map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": strconv.Itoa(LockMs)} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Bounded by cctx: each attempt waits 200 ms after a failure.
	for {
		resp, err := req.RequestWith(cctx, cl)
		if err == nil && resp.Resources[0].ErrorCode == 0 && w.applied(cctx, cl) {
			return nil
		}
		if err == nil && resp.Resources[0].ErrorCode != 0 {
			err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		}
		select {
		case <-cctx.Done():
			return fmt.Errorf("share: setting group %s's configs: %v", w.group, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// applied reports whether every broker describes the group's reset
// policy: each answers from its own copy of the metadata, and a share
// partition initialized on one that lags starts at the log end.
func (w *Workload) applied(ctx context.Context, cl *kgo.Client) bool {
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(md.Brokers) == 0 {
		return false
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, w.group
	req.Resources = append(req.Resources, r)
	for _, b := range md.Brokers {
		d, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
		if err != nil || len(d.Resources) == 0 {
			return false
		}
		found := false
		for _, c := range d.Resources[0].Configs {
			found = found || c.Name == "share.auto.offset.reset" && c.Value != nil && *c.Value == "earliest"
		}
		if !found {
			return false
		}
	}
	return true
}

// opts are a client's options; proc is its history process (-1: the
// workload's own requests).
func (w *Workload) opts(proc int) []kgo.Opt {
	o := []kgo.Opt{kgo.SeedBrokers(w.prod.Bootstrap...), dialer.Opt(time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(5 * time.Second)}
	if w.prod.Dial != nil && proc >= 0 {
		o = append(o, kgo.Dialer(w.prod.Dial(proc)))
	}
	return o
}

var errCrash = errors.New("crash mid-batch")
