package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/workloads/kit"
)

func (w *Workload) producerOpts(proc int, a *attempts) []kgo.Opt {
	request, overhead := w.cfg.produceTimeouts()
	o := append(w.baseOpts(proc), a.opts()...)
	o = append(o, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(w.cfg.DeliveryTimeout),
		kgo.ProduceRequestTimeout(request), kgo.RequestTimeoutOverhead(overhead),
		kgo.ProducerLinger(0))
	switch w.cfg.Acks {
	case "0":
		o = append(o, kgo.RequiredAcks(kgo.NoAck()))
	case "1":
		o = append(o, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		o = append(o, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !w.cfg.Idempotence {
		// franz-go keeps one request in flight without idempotence unless
		// told otherwise; with it, five (Kafka's bound), so MaxInFlight
		// then only sets how many records a process pipelines.
		o = append(o, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(w.cfg.MaxInFlight))
	}
	if w.cfg.Retries >= 0 {
		o = append(o, kgo.RecordRetries(w.cfg.Retries))
	}
	return o
}

// newProducer starts a process on a fresh client; nil when the client
// cannot be made (bad options: nothing to retry).
func (w *Workload) newProducer() (*client, *attempts) {
	a := newAttempts()
	proc := w.NewProcess()
	cl, err := kgo.NewClient(w.producerOpts(proc, a)...)
	if err != nil {
		return nil, nil
	}
	c := &client{Proc: proc, Cl: cl}
	w.live.Register(c)
	return c, a
}

// produceLoop runs send operations until ctx is done, each of MaxInFlight
// records to drawn partitions (one may repeat: several batches of one
// partition in flight is the case that matters). Each send is bounded by
// the delivery timeout (plus slack), not by ctx: a send in flight when the
// phase ends completes, so few operations stay open.
func (w *Workload) produceLoop(ctx context.Context, tokens <-chan struct{}, rng *rand.Rand) {
	c, a := w.newProducer()
	if c == nil {
		return
	}
	defer func() { w.live.Unregister(c) }()
	for ctx.Err() == nil {
		if !take(ctx, tokens) {
			return
		}
		parts := make([]int32, w.cfg.MaxInFlight)
		for i := range parts {
			parts[i] = int32(rng.IntN(w.cfg.Partitions))
		}
		w.send(ctx, c, a, parts, tokens)
		storeMax(&w.peakInFlight, int64(a.peakOpen()))
		if c.Crashed() {
			w.CrashEvent(c.Proc)
			w.live.Unregister(c)
			if c, a = w.newProducer(); c == nil {
				return
			}
		}
	}
}

// send writes one operation: a record to each partition of parts, in order,
// and records the invoke and the completion. A record after the first
// waits for a rate token (ctx ending stops the wait: the operation is
// invoked whole) and for the request carrying the record before it to be
// written, so up to len(parts) produce requests are in flight: records
// buffered together would share one batch, and neither Kafka's idempotent
// dedupe window (the last five batches per producer and partition) nor the
// order of in-flight batches would be exercised.
func (w *Workload) send(ctx context.Context, c *client, a *attempts, parts []int32, tokens <-chan struct{}) {
	mops := make([]history.Mop, len(parts))
	for i, p := range parts {
		mops[i] = history.Send(kit.Key(w.cfg.Topic, p), w.next[p].Add(1))
	}
	// The writer encodes the invoke at once: filling in offsets below leaves it as sent.
	w.Write(history.Op{Process: history.Process(c.Proc), Type: history.Invoke, F: history.FSend, Mops: mops})
	a.reset()
	sctx, cancel := context.WithTimeout(context.Background(), w.cfg.DeliveryTimeout+5*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, len(parts))
	errs := make([]error, len(parts))
	dones := make([]chan struct{}, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		if i > 0 {
			take(ctx, tokens) // ctx ending: produce on, the operation is invoked whole
		}
		recs[i] = &kgo.Record{Topic: w.cfg.Topic, Partition: p, Value: strconv.AppendInt(nil, mops[i].Value, 10)}
		before := a.writes()
		done := make(chan struct{})
		dones[i] = done
		wg.Add(1)
		c.Cl.Produce(sctx, recs[i], func(_ *kgo.Record, err error) {
			errs[i] = err
			close(done)
			wg.Done()
		})
		if i < len(parts)-1 {
			a.awaitWriteAfter(sctx, before, done)
		}
	}
	errs = awaitPromises(sctx, &wg, dones, errs, promiseGrace)
	op := history.Op{Process: history.Process(c.Proc), Type: kit.ClassifyOp(errs, a.clean() && !c.Crashed()), F: history.FSend, Mops: mops}
	for i, err := range errs {
		if err == nil && w.cfg.Acks != "0" {
			mops[i].Offset = recs[i].Offset
			storeMax(&w.acked[parts[i]], recs[i].Offset+1)
		}
		if err != nil && op.Error == "" {
			op.Error = kit.ErrorName(err)
		}
	}
	if op.Error != "" && c.Crashed() {
		op.Error = "CLIENT_CRASH: " + op.Error
	}
	w.Write(op)
}

// promiseGrace is how long a send waits for franz-go's promises once its
// own bound (the delivery timeout plus 5 s) has passed.
const promiseGrace = time.Second

// errStillInFlight is a record whose promise had not fired when its
// send's bound passed: franz-go may hold a record past its delivery
// timeout (seen against a cluster whose every broker died: the promises
// never fired), and a send that waited on it held the run past SIGTERM.
// It is indeterminate, as a timeout is.
var errStillInFlight = fmt.Errorf("record still in flight past the delivery timeout: %w", context.DeadlineExceeded)

// awaitPromises waits for every record's promise, at most grace past
// ctx's end, and returns the errors: a record whose promise has not fired
// by then is errStillInFlight. The callbacks that fire later write only
// into errs, which the caller no longer reads.
func awaitPromises(ctx context.Context, wg *sync.WaitGroup, dones []chan struct{}, errs []error, grace time.Duration) []error {
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
		return errs
	case <-ctx.Done():
	}
	select {
	case <-all:
		return errs
	case <-time.After(grace):
	}
	out := make([]error, len(errs))
	for i, d := range dones {
		select {
		case <-d:
			out[i] = errs[i]
		default:
			out[i] = errStillInFlight
		}
	}
	return out
}

// take waits for a rate token (none needed when tokens is nil); false
// when ctx ended first.
func take(ctx context.Context, tokens <-chan struct{}) bool {
	if tokens == nil {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-tokens:
		return true
	}
}

// storeMax raises a to v if v is larger. Bounded: each failed swap means
// another caller raised a, and a only grows.
func storeMax(a *atomic.Int64, v int64) {
	for cur := a.Load(); cur < v && !a.CompareAndSwap(cur, v); cur = a.Load() {
	}
}
