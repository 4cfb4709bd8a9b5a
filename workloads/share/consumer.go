package share

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/internal/sleep"
	"gregor/workloads/kit"
)

// Per record and per poll draws (from the consumer's seeded RNG).
const (
	pAccept  = 0.75 // else release below pRelease, else reject
	pRelease = 0.92
	pCrash   = 0.02 // per poll: crash mid-batch (close with half the batch unacknowledged)
	pStall   = 0.02 // per poll: stall past the lock before acknowledging
	// pollWait bounds one poll; flushWait one flush of acknowledgements.
	pollWait  = 2 * time.Second
	flushWait = 10 * time.Second
	// drainIdle is how long the final drain must see nothing: longer than
	// a lock, so every record a stalled or crashed consumer held is
	// available again and acquired by then.
	drainIdle = LockMs*time.Millisecond + 3*time.Second
	// drainMax bounds the final drain.
	drainMax = 4 * drainIdle
)

type topicPartition struct {
	Topic     string
	Partition int32
}

// consumer is one share consumer incarnation (one history process).
type consumer struct {
	w      *Workload
	proc   int
	cl     *kgo.Client
	member memberLog
	mu     sync.Mutex // guards results
	// results are the broker's answers to acknowledgements since the last
	// flush began, by topic and partition.
	results map[topicPartition]error
}

// memberLog is a consumer's kgo logger, there only to learn the member id
// the client heartbeats with (kgo does not export a share member's id):
// the history's share lines carry it, the node logs' traces name it.
type memberLog struct{ id atomic.Pointer[string] }

func (*memberLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l *memberLog) Log(_ kgo.LogLevel, msg string, kv ...any) {
	if msg != "share group heartbeating" {
		return
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if id, ok := kv[i+1].(string); ok && kv[i] == "member_id" {
			l.id.Store(&id)
		}
	}
}

func (l *memberLog) get() string {
	if id := l.id.Load(); id != nil {
		return *id
	}
	return ""
}

func (w *Workload) newConsumer() (*consumer, error) {
	c := &consumer{w: w, proc: w.q.NewProcess(), results: map[topicPartition]error{}}
	cl, err := kgo.NewClient(append(w.opts(c.proc), kgo.ConsumeTopics(w.prod.Topic), kgo.ShareGroup(w.group),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.ShareAckCallback(c.onAcks), kgo.WithLogger(&c.member))...)
	if err != nil {
		return nil, err
	}
	c.cl = cl
	return c, nil
}

func (c *consumer) onAcks(_ *kgo.Client, rs kgo.ShareAckResults) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rs {
		tp := topicPartition{Topic: r.Topic, Partition: r.Partition}
		if prev, seen := c.results[tp]; !seen || prev == nil {
			c.results[tp] = r.Err
		}
	}
}

// consumeLoop runs consumer incarnations until ctx ends: a crash closes
// one and starts the next as a new process.
func (w *Workload) consumeLoop(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		c, err := w.newConsumer()
		if err != nil {
			return
		}
		err = c.run(ctx, rng, false)
		c.cl.Close()
		if errors.Is(err, errCrash) {
			w.q.CrashEvent(c.proc)
		}
	}
}

// run polls, acknowledges and (drawn) crashes or stalls until ctx ends.
// With drain it accepts everything and ends after drainIdle without a
// record, reporting whether it got there.
func (c *consumer) run(ctx context.Context, rng *rand.Rand, drain bool) error {
	idleSince := time.Now()
	// Bounded by ctx (and, draining, by drainIdle without records).
	for ctx.Err() == nil {
		recs := c.poll(ctx)
		if len(recs) == 0 {
			if drain && time.Since(idleSince) > drainIdle {
				return nil
			}
			continue
		}
		idleSince = time.Now()
		if !drain && c.stallAsked(ctx, rng, recs) {
			continue
		}
		crash := !drain && rng.Float64() < pCrash
		if !drain && rng.Float64() < pStall {
			sleep.For(ctx, LockMs*time.Millisecond+2*time.Second)
		}
		if crash {
			recs = recs[:len(recs)/2] // the rest are released at close
		}
		c.ack(ctx, rng, recs, drain)
		if crash {
			return errCrash
		}
	}
	return ctx.Err()
}

// stallAsked carries out a pause-share-consumer step if one is waiting:
// fetching paused (kgo stops asking the brokers for the topic, so its
// client cannot acquire the records again while they wait), no processing
// for longer than the lock, then recs acknowledged late (the lock lapsed
// with no one else fetching: a correct broker refuses them,
// INVALID_RECORD_STATE), and fetching resumed. The drawn stall (pStall)
// keeps fetching, as an application stalled in its processing does.
func (c *consumer) stallAsked(ctx context.Context, rng *rand.Rand, recs []*kgo.Record) bool {
	var done chan int
	select {
	case done = <-c.w.stalls:
	default:
		return false
	}
	c.cl.PauseFetchTopics(c.w.prod.Topic)
	sleep.For(ctx, LockMs*time.Millisecond+2*time.Second)
	c.ack(ctx, rng, recs, false)
	c.cl.ResumeFetchTopics(c.w.prod.Topic)
	done <- c.proc
	return true
}

// poll is one share-fetch line: the records returned, with the delivery
// count the broker gave each.
func (c *consumer) poll(ctx context.Context) []*kgo.Record {
	c.w.q.Write(history.Op{Process: history.Process(c.proc), Type: history.Invoke, F: history.FShareFetch, Group: c.w.group, Raw: []byte("{}")})
	pctx, cancel := context.WithTimeout(ctx, pollWait)
	fs := c.cl.PollRecords(pctx, 100)
	cancel()
	recs := fs.Records()
	v := history.ShareFetch{LockMs: LockMs, Limit: DeliveryLimit, Acquired: []history.ShareRecord{}, Member: c.member.get()}
	for _, r := range recs {
		val, _ := strconv.ParseInt(string(r.Value), 10, 64)
		v.Acquired = append(v.Acquired, history.ShareRecord{Key: kit.Key(r.Topic, r.Partition), Offset: r.Offset, Value: val,
			Count: int16(r.DeliveryCount()), Fetched: c.fetched(r)})
	}
	typ := history.OK
	if len(recs) == 0 && fs.Err() != nil && !errors.Is(fs.Err(), context.DeadlineExceeded) {
		typ = history.Info
	}
	c.w.q.Write(history.ShareOp(history.Process(c.proc), typ, history.FShareFetch, c.w.group, v))
	return recs
}

// fetched is when the client got the answer that acquired r, on the
// history's clock: kgo stamps the lock's deadline as that answer's
// arrival plus the lock the broker named (the group's LockMs).
func (c *consumer) fetched(r *kgo.Record) int64 {
	d := r.AcquisitionDeadline()
	if d.IsZero() {
		return 0
	}
	return c.w.q.Now() - int64(time.Since(d.Add(-LockMs*time.Millisecond)))
}

// ack draws each record's acknowledgement, flushes them and writes the
// share-ack line: taken where the partition's answer was no error.
func (c *consumer) ack(ctx context.Context, rng *rand.Rand, recs []*kgo.Record, drain bool) {
	sent := history.ShareAck{Member: c.member.get()}
	for _, r := range recs {
		st, name := kgo.AckAccept, history.ShareAccept
		if u := rng.Float64(); !drain && u >= pAccept {
			st, name = kgo.AckRelease, history.ShareRelease
			if u >= pRelease {
				st, name = kgo.AckReject, history.ShareReject
			}
		}
		r.Ack(st)
		sent.Acks = append(sent.Acks, history.ShareAckItem{Key: kit.Key(r.Topic, r.Partition), Offset: r.Offset, Type: name, Count: int16(r.DeliveryCount())})
	}
	c.mu.Lock()
	clear(c.results)
	c.mu.Unlock()
	c.w.q.Write(history.ShareOp(history.Process(c.proc), history.Invoke, history.FShareAck, c.w.group, sent))
	fctx, cancel := context.WithTimeout(ctx, flushWait)
	err := c.cl.FlushAcks(fctx)
	cancel()
	done := history.ShareAck{Acks: []history.ShareAckItem{}, Member: sent.Member}
	c.mu.Lock()
	for i, r := range recs {
		res, answered := c.results[topicPartition{Topic: r.Topic, Partition: r.Partition}]
		if err == nil && answered && res == nil {
			done.Acks = append(done.Acks, sent.Acks[i])
			continue
		}
		done.Unknown = append(done.Unknown, sent.Acks[i])
		why := "no answer"
		switch {
		case err != nil:
			why = kit.ErrorName(err)
		case answered:
			why = kit.ErrorName(res)
		}
		if done.Errors == nil {
			done.Errors = map[string]string{}
		}
		done.Errors[sent.Acks[i].Key] = why
	}
	c.mu.Unlock()
	c.w.q.Write(history.ShareOp(history.Process(c.proc), history.OK, history.FShareAck, c.w.group, done))
}

// FinalRead drains the share group (accepting everything until nothing
// came for longer than a lock), writes the share-drain line, then reads
// every key as the queue workload does.
func (w *Workload) FinalRead(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, drainMax)
	defer cancel()
	c, err := w.newConsumer()
	if err != nil {
		return err
	}
	err = c.run(dctx, rand.New(rand.NewPCG(1, 1)), true)
	c.cl.Close()
	w.q.Write(history.ShareOp(history.Process(c.proc), history.OK, history.FShareDrain, w.group, history.ShareDrain{Complete: err == nil}))
	return w.q.FinalRead(ctx)
}
