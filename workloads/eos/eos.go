// Package eos is the exactly-once pipeline workload (DESIGN.md section 4):
// an idempotent producer writes unique values to an input topic; pipeline
// instances in one consumer group consume it read_committed and, in one
// transaction per poll (kgo.GroupTransactSession: the output records and the
// group's offsets together, KIP-98/KIP-447), write each input record to the
// output topic's partition of the same number; at the end the output is
// read read_committed and the group's committed offsets are recorded. The
// checker (checker/eos.go) proves every input record below the committed
// offsets is in the output exactly once, in input order, and nothing past
// them is.
//
// An output value is input value * OutScale + attempt: values stay unique
// per key when a record is processed again after an abort, and the checker
// maps each output record back to its input.
package eos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/workloads/internal/live"
	"gregor/workloads/kit"
)

// OutScale separates an output value's input value from its attempt.
const OutScale = history.EOSOutScale

// Config is the eos workload's configuration.
type Config struct {
	Bootstrap  []string
	Topic      string // the input topic; the output is Topic + "-out"
	Partitions int
	// RF and MinISR of the output topic (the input's are the harness's).
	RF, MinISR int
	// Pipelines are the GroupTransactSession instances (--consumers).
	Pipelines int
	// Rate is input records per second.
	Rate        float64
	TxnTimeout  time.Duration
	PollTimeout time.Duration
	Seed        int64
	// Dial gives a pipeline process its dialer (client links).
	Dial func(proc int) func(ctx context.Context, network, host string) (net.Conn, error)
}

// TransactionalIDs are the n pipelines' transactional ids.
func TransactionalIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("gregor-eos-%d", i)
	}
	return ids
}

// Group is the pipeline's consumer group.
const Group = "gregor-eos"

// Validate checks c and fills defaults.
func (c *Config) Validate() error {
	if c.Topic == "" {
		c.Topic = "eos"
	}
	if c.Partitions < 1 {
		return fmt.Errorf("--partitions %d: give at least 1", c.Partitions)
	}
	if c.Pipelines < 1 || c.Pipelines > kit.MaxClients {
		return fmt.Errorf("--consumers %d: the eos workload needs 1 to %d pipeline instances", c.Pipelines, kit.MaxClients)
	}
	if c.Rate <= 0 || c.Rate > kit.MaxRate {
		return fmt.Errorf("--rate %v: give a positive input rate up to %d", c.Rate, kit.MaxRate)
	}
	if c.TxnTimeout <= 0 {
		c.TxnTimeout = 10 * time.Second
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 500 * time.Millisecond
	}
	return nil
}

// OutTopic is the output topic.
func (c *Config) OutTopic() string { return c.Topic + "-out" }

// Workload runs the input producer and the pipelines.
type Workload struct {
	cfg Config
	*kit.Recorder
	next []atomic.Int64

	mu       sync.Mutex
	attempts map[attemptKey]int64       // input record -> times written to the output
	live     *live.Set[*pipelineClient] // for Crash
	crashes  atomic.Int64               // Crash calls: every other one waits for the crash point
}

// CrashAtOffsetCommit is the crash event's "at" when a pipeline was torn
// down at its crash point.
const CrashAtOffsetCommit = "txn-offset-commit"

// crashPointWait bounds how long an armed crash waits for its pipeline's
// next TxnOffsetCommit: a pipeline with no input commits nothing, and a
// crash the nemesis recorded must happen.
const crashPointWait = 2 * time.Second

// pipelineClient is a running pipeline's client and its crash point. Every
// other crash tears the client down at once, wherever it is in its loop;
// the others arm the crash point, which
// tears it down the moment its next TxnOffsetCommit is written, before its
// EndTxn: the pipeline's offsets sent with the transaction, its outcome not
// yet asked for (KIP-98's sendOffsetsToTransaction, then
// commitTransaction), the moment an exactly-once pipeline is most exposed
// to a broker that applies offsets early or loses the abort. Random crash
// times land there rarely: the window is one request.
type pipelineClient struct {
	cl    *kgo.Client // set before the client joins the live set; never changed
	armed atomic.Bool // tear down at the next TxnOffsetCommit written
	fired atomic.Bool // the crash point was reached: the crash event says so
}

// OnBrokerWrite implements kgo.HookBrokerWrite: the crash point.
func (p *pipelineClient) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key == kmsg.TxnOffsetCommit.Int16() && p.armed.CompareAndSwap(true, false) {
		p.fired.Store(true)
		go p.cl.Close()
	}
}

// crash tears the client down now, or arms the crash point with a bounded
// wait.
func (p *pipelineClient) crash(atCommit bool) {
	if !atCommit {
		go p.cl.Close()
		return
	}
	p.armed.Store(true)
	time.AfterFunc(crashPointWait, func() {
		if p.armed.CompareAndSwap(true, false) {
			p.cl.Close()
		}
	})
}

// attemptKey is one input record: values are unique per partition.
type attemptKey struct {
	partition int32
	value     int64
}

// New prepares the workload.
func New(cfg Config, h *history.Writer, epoch time.Time) (*Workload, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("eos: no bootstrap brokers")
	}
	return &Workload{cfg: cfg, Recorder: kit.NewRecorder(h, epoch), next: make([]atomic.Int64, cfg.Partitions),
		attempts: map[attemptKey]int64{}, live: live.New[*pipelineClient](rand.New(rand.NewPCG(uint64(cfg.Seed), 0x656f73)))}, nil
}

// Crash tears down one running pipeline (seeded draw): at once, or at its
// crash point (pipelineClient).
func (w *Workload) Crash() (int, func(), bool) {
	p, pc, ok := w.live.Draw(nil)
	if !ok {
		return -1, nil, false
	}
	atCommit := w.crashes.Add(1)%2 == 0
	return p, func() { pc.crash(atCommit) }, true
}

func (w *Workload) baseOpts() []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(w.cfg.Bootstrap...), dialer.Opt(time.Second), dialer.Auth(),
		kgo.RequestTimeoutOverhead(2 * time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(5 * time.Second)}
}

// Run creates the output topic, then drives the input producer and the
// pipelines until ctx is done.
func (w *Workload) Run(ctx context.Context) error {
	if err := w.createOutput(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { w.produceInput(ctx) })
	for i := range w.cfg.Pipelines {
		wg.Go(func() { w.pipeline(ctx, i) })
	}
	wg.Wait()
	return nil
}

func (w *Workload) createOutput(ctx context.Context) error {
	cl, err := kgo.NewClient(w.baseOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	minISR := strconv.Itoa(w.cfg.MinISR)
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = kadm.NewClient(cl).CreateTopic(cctx, int32(w.cfg.Partitions), int16(w.cfg.RF), map[string]*string{"min.insync.replicas": &minISR}, w.cfg.OutTopic())
		cancel()
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("eos: create %s: %w", w.cfg.OutTopic(), err)
}

// produceInput sends unique values round-robin to the input partitions.
func (w *Workload) produceInput(ctx context.Context) {
	proc := w.NewProcess()
	cl, err := kgo.NewClient(append(w.baseOpts(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(5*time.Second), kgo.ProducerLinger(0))...)
	if err != nil {
		return
	}
	defer cl.Close()
	t := time.NewTicker(time.Duration(float64(time.Second) / w.cfg.Rate))
	defer t.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p := int32(i % w.cfg.Partitions)
		v := w.next[p].Add(1)
		key := kit.Key(w.cfg.Topic, p)
		w.Write(history.Op{Process: history.Process(proc), Type: history.Invoke, F: history.FSend, Mops: []history.Mop{history.Send(key, v)}})
		rec := &kgo.Record{Topic: w.cfg.Topic, Partition: p, Value: strconv.AppendInt(nil, v, 10)}
		sctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		err := kit.ProduceSync(sctx, cl, rec).FirstErr()
		cancel()
		m := history.Send(key, v)
		typ := kit.Classify(err, true)
		if typ == history.OK {
			m.Offset = rec.Offset
		}
		w.Write(history.Op{Process: history.Process(proc), Type: typ, F: history.FSend, Mops: []history.Mop{m}, Error: kit.ErrorName(err)})
	}
}

// pipeline is one consume-transform-produce instance.
func (w *Workload) pipeline(ctx context.Context, i int) {
	proc := w.NewProcess()
	for ctx.Err() == nil {
		opts := append(w.baseOpts(), kgo.TransactionalID(TransactionalIDs(w.cfg.Pipelines)[i]), kgo.TransactionTimeout(w.cfg.TxnTimeout),
			kgo.ConsumerGroup(Group), kgo.ConsumeTopics(w.cfg.Topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0), kgo.SessionTimeout(6*time.Second), kgo.RebalanceTimeout(10*time.Second))
		if w.cfg.Dial != nil {
			opts = append(opts, kgo.Dialer(w.cfg.Dial(proc)))
		}
		pc := &pipelineClient{}
		sess, err := kgo.NewGroupTransactSession(append(opts, kgo.WithHooks(pc))...)
		if err != nil {
			return
		}
		pc.cl = sess.Client()
		w.live.Add(proc, pc)
		for ctx.Err() == nil {
			if !w.step(sess, proc) {
				break
			}
		}
		w.live.Remove(proc)
		sess.Close()
		if ctx.Err() == nil {
			crash := map[string]any{"process": proc}
			if pc.fired.Load() {
				crash["at"] = CrashAtOffsetCommit
			}
			raw, _ := json.Marshal(crash)
			w.Write(history.Op{Process: history.Process(proc), Type: history.Info, F: history.FCrash, Raw: raw})
			proc = w.NewProcess()
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// step polls once and, if records came, writes them to the output in one
// transaction with the group's offsets; false when the session must be
// replaced.
func (w *Workload) step(sess *kgo.GroupTransactSession, proc int) bool {
	pctx, cancel := context.WithTimeout(context.Background(), w.cfg.PollTimeout)
	fs := sess.PollFetches(pctx)
	cancel()
	var bad bool
	for _, fe := range fs.Errors() {
		if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
			bad = true
		}
	}
	if fs.NumRecords() == 0 {
		return !bad
	}
	byPart := map[int32][]history.Record{}
	var out []*kgo.Record
	poll := history.Poll()
	var sends []history.Mop
	fs.EachRecord(func(r *kgo.Record) {
		v, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil {
			return
		}
		byPart[r.Partition] = append(byPart[r.Partition], history.Record{Offset: r.Offset, Value: v})
		w.mu.Lock()
		k := attemptKey{r.Partition, v}
		w.attempts[k]++
		ov := v*OutScale + w.attempts[k]
		w.mu.Unlock()
		out = append(out, &kgo.Record{Topic: w.cfg.OutTopic(), Partition: r.Partition, Value: strconv.AppendInt(nil, ov, 10)})
		sends = append(sends, history.Send(kit.Key(w.cfg.OutTopic(), r.Partition), ov))
	})
	for _, p := range slices.Sorted(mapKeys(byPart)) {
		poll.Polls = append(poll.Polls, history.KeyRecords{Key: kit.Key(w.cfg.Topic, p), Records: byPart[p]})
	}
	inv := append([]history.Mop{history.Poll()}, sends...)
	w.Write(history.Op{Process: history.Process(proc), Type: history.Invoke, F: history.FTxn, Mops: inv})
	done := append([]history.Mop{poll}, slices.Clone(sends)...)
	finish := func(typ history.Type, e error) bool {
		w.Write(history.Op{Process: history.Process(proc), Type: typ, F: history.FTxn, Mops: done, Error: kit.ErrorName(e)})
		return e == nil
	}
	if err := sess.Begin(); err != nil {
		return finish(history.Fail, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results := kit.ProduceSync(ctx, sess, out...)
	for _, r := range results {
		// Results come in completion order: match each to its record.
		if j := slices.Index(out, r.Record); r.Err == nil && j >= 0 {
			done[1+j].Offset = r.Record.Offset
		}
	}
	if perr := results.FirstErr(); perr != nil {
		// GroupTransactSession.End commits whatever was flushed: a
		// pipeline must abort itself when an output record failed (as
		// franz-go's EOS example does), or the group's offsets pass input
		// whose output is not there. Never asked to commit: aborted.
		sess.End(ctx, kgo.TryAbort)
		return finish(history.Fail, perr)
	}
	committed, err := sess.End(ctx, kgo.TryCommit)
	switch {
	case committed && err == nil:
		return finish(history.OK, nil)
	case !committed && err == nil:
		// Aborted (a rebalance, an abortable offset commit): the offsets
		// were not committed; the records come again.
		return finish(history.Fail, errors.New("aborted"))
	}
	return finish(history.Info, err)
}

func mapKeys[V any](m map[int32]V) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
