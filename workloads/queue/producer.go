package queue

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
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
		o = append(o, kgo.DisableIdempotentWrite())
	}
	if w.cfg.Retries >= 0 {
		o = append(o, kgo.RecordRetries(w.cfg.Retries))
	}
	return o
}

// newProducer starts a process on a fresh client; nil when the client
// cannot be made (bad options: nothing to retry).
func (w *Workload) newProducer() (*client, *attempts) {
	a := &attempts{}
	proc := w.newProc()
	cl, err := kgo.NewClient(w.producerOpts(proc, a)...)
	if err != nil {
		return nil, nil
	}
	c := &client{proc: proc, cl: cl}
	w.register(c)
	return c, a
}

// produceLoop sends one record at a time until ctx is done. Each send is
// bounded by the delivery timeout (plus slack), not by ctx: a send in flight
// when the phase ends completes, so few operations stay open.
func (w *Workload) produceLoop(ctx context.Context, tokens <-chan struct{}, rng *rand.Rand) {
	c, a := w.newProducer()
	if c == nil {
		return
	}
	defer func() { w.unregister(c) }()
	for ctx.Err() == nil {
		if tokens != nil {
			select {
			case <-ctx.Done():
				return
			case <-tokens:
			}
		}
		p := int32(rng.IntN(w.cfg.Partitions))
		w.send(c, a, p)
		if c.crashed.Load() {
			w.crashEvent(c)
			w.unregister(c)
			if c, a = w.newProducer(); c == nil {
				return
			}
		}
	}
}

// send writes one record to partition p and records the invoke and the
// completion.
func (w *Workload) send(c *client, a *attempts, p int32) {
	key := Key(w.cfg.Topic, p)
	v := w.next[p].Add(1)
	w.write(history.Op{Process: history.Process(c.proc), Type: history.Invoke, F: history.FSend,
		Mops: []history.Mop{history.Send(key, v)}})
	a.reset()
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.DeliveryTimeout+5*time.Second)
	rec := &kgo.Record{Topic: w.cfg.Topic, Partition: p, Value: strconv.AppendInt(nil, v, 10)}
	err := c.cl.ProduceSync(ctx, rec).FirstErr()
	cancel()
	m := history.Send(key, v)
	typ := Classify(err, a.clean() && !c.crashed.Load())
	if typ == history.OK && w.cfg.Acks != "0" {
		m.Offset = rec.Offset
	}
	op := history.Op{Process: history.Process(c.proc), Type: typ, F: history.FSend, Mops: []history.Mop{m},
		Error: ErrorName(err)}
	if err != nil && c.crashed.Load() {
		op.Error = "CLIENT_CRASH: " + op.Error
	}
	w.write(op)
}
