package txn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/workloads/kit"
)

// Workload runs the transactional producers and the consumers of one test.
type Workload struct {
	cfg Config
	*kit.Recorder

	// next[p] is the last value handed out for partition p: values of a key
	// are unique across the test (only an atomic Add hands them out).
	next []atomic.Int64

	live *kit.Clients[*client] // for Crash and PauseProducer
}

// client is one process's franz-go client (kit.Client: Crash closes it
// under the running operation).
type client struct {
	kit.Client
	// producer: a transactional producer's client; pause is a
	// pause-producer fault waiting for its next send.
	producer bool
	pause    atomic.Pointer[pauseReq]
}

// pauseReq freezes a producer for hold at its next send, inside the open
// transaction; resumed closes when it runs again.
type pauseReq struct {
	hold    time.Duration
	resumed chan struct{}
	once    sync.Once
}

func (r *pauseReq) done() { r.once.Do(func() { close(r.resumed) }) }

// TransactionalIDs are the transactional ids of n producers (producer i
// uses the i-th), for the nemesis that kills their coordinator.
func TransactionalIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("gregor-txn-%d", i)
	}
	return ids
}

// PauseProducer is the pause-producer nemesis's hook: one transactional
// producer (drawn from the seeded RNG) freezes at its next send, with its
// transaction open, for hold or one and a half transaction timeouts,
// whichever is longer, so the coordinator aborts the transaction and bumps
// the epoch (fencing it) while the producer believes it open; then it goes
// on as if nothing happened, as a paused JVM would.
func (w *Workload) PauseProducer(hold time.Duration) (int, time.Duration, <-chan struct{}, bool) {
	_, c, ok := w.live.Draw(func(c *client) bool { return c.producer && !c.Crashed() && c.pause.Load() == nil })
	if !ok {
		return -1, 0, nil, false
	}
	req := &pauseReq{hold: max(hold, w.cfg.TxnTimeout*3/2), resumed: make(chan struct{})}
	c.pause.Store(req)
	return c.Proc, req.hold, req.resumed, true
}

// New prepares a workload writing to h, with times relative to epoch.
func New(cfg Config, h *history.Writer, epoch time.Time) (*Workload, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("txn: no bootstrap brokers")
	}
	return &Workload{cfg: cfg, Recorder: kit.NewRecorder(h, epoch), next: make([]atomic.Int64, cfg.Partitions),
		live: kit.NewClients[*client](cfg.Seed, 0x74786e)}, nil
}

// Crash is the client-crash nemesis's hook (kit.Clients.Crash): its
// process goes on as a new process on a new client (a producer with the
// same transactional id, which fences the old one, as a restarted
// application would).
func (w *Workload) Crash() (process int, tearDown func(), ok bool) { return w.live.Crash() }

// Run drives producers and consumers until ctx is done, then waits for each
// process's operation in flight (each bounded by the request timeouts).
func (w *Workload) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	tokens := kit.Limiter(ctx, w.cfg.Rate, w.cfg.Producers)
	seeds := rand.New(rand.NewPCG(uint64(w.cfg.Seed), 1))
	for i := range w.cfg.Producers {
		s := seeds.Uint64()
		wg.Go(func() { w.produceLoop(ctx, i, tokens, rand.New(rand.NewPCG(s, 2))) })
	}
	for range w.cfg.Consumers {
		wg.Go(func() { w.consumeLoop(ctx, true) })
	}
	if !w.cfg.NoControl {
		wg.Go(func() { w.consumeLoop(ctx, false) })
	}
	wg.Wait()
	return nil
}

func (w *Workload) baseOpts() []kgo.Opt {
	o := []kgo.Opt{
		kgo.SeedBrokers(w.cfg.Bootstrap...),
		dialer.Opt(time.Second), dialer.Auth(),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
		// A read_committed fetch ends at the last stable offset, never
		// inside a transaction; only a size limit could cut one, so the
		// limits are far above what a test writes (intermediate-read).
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(32 << 20),
	}
	return o
}

// consumeOpts reads every key from pos at the isolation level.
func (w *Workload) consumeOpts(pos []int64, committed bool) []kgo.Opt {
	offs := map[int32]kgo.Offset{}
	for p, o := range pos {
		offs[int32(p)] = kgo.NewOffset().At(o)
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	return []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.cfg.Topic: offs}),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(min(w.cfg.PollTimeout, 500*time.Millisecond))}
}

// keys lists every key.
func (w *Workload) keys() []string {
	ks := make([]string, w.cfg.Partitions)
	for p := range ks {
		ks[p] = kit.Key(w.cfg.Topic, int32(p))
	}
	return ks
}

// assign records that proc's client starts at new positions: the checker
// forgets the process's poll positions there.
func (w *Workload) assign(proc int, ok bool, err error) {
	p := history.Process(proc)
	w.Write(history.Op{Process: p, Type: history.Invoke, F: history.FAssign, Keys: w.keys()})
	if ok {
		w.Write(history.Op{Process: p, Type: history.OK, F: history.FAssign, Keys: w.keys()})
		return
	}
	w.Write(history.Op{Process: p, Type: history.Fail, F: history.FAssign, Keys: w.keys(), Error: kit.ErrorName(err)})
}

// pollOnce polls c once and returns the records per partition (advancing
// pos) and whether a fetch error calls for a new client.
func (w *Workload) pollOnce(c *client, pos []int64, timeout time.Duration) (history.Mop, string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	// PollFetches, not PollRecords: a record limit could cut a fetch
	// inside a transaction (intermediate-read).
	fs := c.Cl.PollFetches(ctx)
	cancel()
	byPart := make([][]history.Record, w.cfg.Partitions)
	bad := ""
	fs.EachRecord(func(rec *kgo.Record) {
		v, err := strconv.ParseInt(string(rec.Value), 10, 64)
		if err != nil {
			bad = fmt.Sprintf("%s offset %d: value %q is not an integer", kit.Key(rec.Topic, rec.Partition), rec.Offset, rec.Value)
			return
		}
		if int(rec.Partition) < len(byPart) {
			byPart[rec.Partition] = append(byPart[rec.Partition], history.Record{Offset: rec.Offset, Value: v})
			pos[rec.Partition] = rec.Offset + 1
		}
	})
	m := history.Poll()
	m.Polls = []history.KeyRecords{}
	for p, recs := range byPart {
		if len(recs) > 0 {
			m.Polls = append(m.Polls, history.KeyRecords{Key: kit.Key(w.cfg.Topic, int32(p)), Records: recs})
		}
	}
	errName, reset := bad, bad != ""
	for _, fe := range fs.Errors() {
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue
		}
		errName, reset = kit.ErrorName(fe.Err), true
	}
	return m, errName, reset || c.Crashed()
}

// produceLoop runs producer i's transactions until ctx is done.
func (w *Workload) produceLoop(ctx context.Context, i int, tokens <-chan struct{}, rng *rand.Rand) {
	owned := w.cfg.owned(i)
	pos := make([]int64, w.cfg.Partitions)
	proc := w.NewProcess()
	txnID := TransactionalIDs(w.cfg.Producers)[i]
	for ctx.Err() == nil {
		opts := append(w.baseOpts(), w.consumeOpts(pos, true)...)
		if w.cfg.Dial != nil {
			opts = append(opts, kgo.Dialer(w.cfg.Dial(proc)))
		}
		opts = append(opts, kgo.TransactionalID(txnID), kgo.TransactionTimeout(w.cfg.TxnTimeout),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordDeliveryTimeout(w.cfg.RequestTimeout), kgo.ProduceRequestTimeout(w.cfg.RequestTimeout),
			kgo.ProducerLinger(0))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			w.assign(proc, false, err)
			return
		}
		c := &client{Client: kit.Client{Proc: proc, Cl: cl}, producer: true}
		w.assign(proc, true, nil)
		w.live.Register(c)
		for ctx.Err() == nil {
			if tokens != nil {
				select {
				case <-ctx.Done():
				case <-tokens:
				}
				if ctx.Err() != nil {
					break
				}
			}
			if !w.transact(c, owned, pos, rng) {
				break
			}
		}
		w.live.Unregister(c)
		if req := c.pause.Load(); req != nil {
			req.done() // the client is gone: no pause will come
		}
		if c.Crashed() {
			w.CrashEvent(c.Proc)
			proc = w.NewProcess()
		} else if ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond) // let metadata settle before a new client
		}
	}
}

// transact runs one transaction on c and records it; false when the client
// must be replaced (an error left its producer state unknown, or a crash).
func (w *Workload) transact(c *client, owned []int32, pos []int64, rng *rand.Rand) bool {
	n := 1 + rng.IntN(w.cfg.MaxMops)
	mops := make([]history.Mop, n)
	parts := make([]int32, n)
	for j := range mops {
		if rng.IntN(3) == 0 {
			mops[j] = history.Poll()
			continue
		}
		p := owned[rng.IntN(len(owned))]
		parts[j] = p
		mops[j] = history.Send(kit.Key(w.cfg.Topic, p), w.next[p].Add(1))
	}
	abort := rng.Float64() < w.cfg.AbortRate
	proc := history.Process(c.Proc)
	w.Write(history.Op{Process: proc, Type: history.Invoke, F: history.FTxn, Mops: slices.Clone(mops)})
	done := slices.Clone(mops)
	for j := range done {
		if done[j].Kind == history.MopPoll {
			done[j].Polls = nil
		}
	}
	finish := func(typ history.Type, errName string) {
		if c.Crashed() && errName != "" {
			errName = "CLIENT_CRASH: " + errName
		}
		w.Write(history.Op{Process: proc, Type: typ, F: history.FTxn, Mops: done, Error: errName})
	}
	if err := c.Cl.BeginTransaction(); err != nil {
		finish(history.Fail, kit.ErrorName(err))
		return false
	}
	// Run the micro-ops; the first failure stops the rest and aborts.
	var failure string
	for j, m := range mops {
		if j > 0 && w.cfg.Think > 0 {
			time.Sleep(w.cfg.Think)
		}
		if m.Kind == history.MopPoll {
			pm, errName, reset := w.pollOnce(c, pos, w.cfg.PollTimeout)
			done[j] = pm
			if reset {
				failure = "poll: " + errName
				break
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.RequestTimeout+time.Second)
		rec := &kgo.Record{Topic: w.cfg.Topic, Partition: parts[j], Value: strconv.AppendInt(nil, m.Value, 10)}
		err := kit.ProduceSync(ctx, c.Cl, rec).FirstErr()
		cancel()
		if err != nil {
			failure = kit.ErrorName(err)
			break
		}
		done[j].Offset = rec.Offset
		if req := c.pause.Swap(nil); req != nil {
			time.Sleep(req.hold) // the fault: frozen with the transaction open
			req.done()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*w.cfg.RequestTimeout)
	defer cancel()
	if failure != "" || abort || c.Crashed() {
		// The commit is never asked for: a correct coordinator can only
		// abort this transaction (by this EndTxn, the next InitProducerId
		// or its timeout), so it failed for certain whatever the abort
		// answers.
		err := abortTxn(ctx, c.Cl)
		if failure == "" {
			failure = kit.ErrorName(err)
		}
		finish(history.Fail, failure)
		return err == nil && !c.Crashed() && !isReset(failure)
	}
	err := c.Cl.EndTransaction(ctx, kgo.TryCommit)
	switch {
	case err == nil && !c.Crashed():
		finish(history.OK, "")
		return true
	case errors.Is(err, kerr.OperationNotAttempted):
		// franz-go did not send the EndTxn (no producer id): not committed.
		abortTxn(ctx, c.Cl)
		finish(history.Fail, kit.ErrorName(err))
		return false
	case err == nil:
		// Committed, but the crash may have been first: franz-go answered
		// before Close took effect. The EndTxn was answered without error.
		finish(history.OK, "")
		return false
	}
	// The commit was sent and its outcome is unknown: the coordinator may
	// have written PrepareCommit before the answer was lost.
	abortTxn(ctx, c.Cl)
	finish(history.Info, kit.ErrorName(err))
	return false
}

// ender is what abortTxn needs of a transactional client (*kgo.Client).
type ender interface {
	AbortBufferedRecords(context.Context) error
	EndTransaction(context.Context, kgo.TransactionEndTry) error
}

// abortTxn aborts the open transaction with its buffered records failed
// first. franz-go's EndTransaction neither flushes nor drops them (its doc:
// call AbortBufferedRecords before aborting; GroupTransactSession.End does),
// so a send the workload gave up on (its promise not back by the bound)
// went out after the abort, in the next transaction, and committed with it
// while the history said it failed: a false aborted-read (MEASUREMENTS 4.5).
// AbortBufferedRecords waits for the requests in flight, whose batches can
// only land in this transaction, before the abort marker or fenced after
// it. If ctx ends first the client is replaced (transact returns false), and
// the next InitProducerId fences what it still holds.
func abortTxn(ctx context.Context, cl ender) error {
	if err := cl.AbortBufferedRecords(ctx); err != nil {
		return err
	}
	return cl.EndTransaction(ctx, kgo.TryAbort)
}

// isReset says whether a failure recorded by transact came from a poll
// that calls for a new client.
func isReset(failure string) bool { return len(failure) > 6 && failure[:6] == "poll: " }

// consumeLoop polls every key from offset 0 until ctx is done, read
// committed or (the control process) read uncommitted; a new client at the
// same positions after errors and crashes.
func (w *Workload) consumeLoop(ctx context.Context, committed bool) {
	pos := make([]int64, w.cfg.Partitions)
	proc := w.NewProcess()
	f := history.FPoll
	if !committed {
		f = history.FPollUncommitted
	}
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(append(w.baseOpts(), w.consumeOpts(pos, committed)...)...)
		if err != nil {
			w.assign(proc, false, err)
			return
		}
		w.assign(proc, true, nil)
		c := &client{Client: kit.Client{Proc: proc, Cl: cl}}
		w.live.Register(c)
		for ctx.Err() == nil {
			p := history.Process(c.Proc)
			w.Write(history.Op{Process: p, Type: history.Invoke, F: f, Mops: []history.Mop{history.Poll()}})
			m, errName, reset := w.pollOnce(c, pos, w.cfg.PollTimeout)
			// Records returned are facts whatever else went wrong: ok.
			w.Write(history.Op{Process: p, Type: history.OK, F: f, Mops: []history.Mop{m}, Error: errName})
			if reset {
				break
			}
		}
		w.live.Unregister(c)
		if c.Crashed() {
			w.CrashEvent(c.Proc)
			proc = w.NewProcess()
		} else if ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
}
