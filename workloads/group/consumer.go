package group

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/workloads/kit"
)

// endReason is why a consumer's run ended.
type endReason int

const (
	endDone    endReason = iota // the workload's context ended
	endCrash                    // the client-crash nemesis asked
	endRestart                  // a rolling restart asked
	endExpired                  // a batch took longer than max.poll.interval
)

// consumer is one incarnation of a slot: one process, one franz-go client.
type consumer struct {
	w    *Workload
	s    *slot
	proc int
	cl   *kgo.Client
	dial *killDialer
	// cancel ends the client's own context: a crash aborts everything in
	// flight at once.
	cancel context.CancelFunc
	rng    *rand.Rand // the consumer goroutine's only

	crashReq   atomic.Bool
	crashReqAt atomic.Int64 // unix nanoseconds of the request
	restartReq atomic.Bool
	noCommit   atomic.Bool // a crashed or expired consumer commits nothing more
	assigned   atomic.Bool // an assignment arrived (a rolling restart waits for it)

	// mu orders events against death. Invariant: once dead is set (under
	// mu), the process writes no event except its crash or leave line. Not
	// checked as state (a line not written leaves no state): event and the
	// commit writer test dead under mu before writing.
	mu   sync.Mutex
	dead atomic.Bool

	// pos is the processed position (next offset) per partition, for
	// CommitOnRevoked. Guarded by posMu.
	posMu sync.Mutex
	pos   map[int32]kgo.EpochOffset
}

// start makes slot s's next consumer and records its join.
func (w *Workload) start(s *slot) (*consumer, error) {
	proc := w.q.NewProcess()
	c := &consumer{w: w, s: s, proc: proc, dial: newKillDialer(w.prod.Dial, proc), pos: map[int32]kgo.EpochOffset{}}
	c.rng = rand.New(rand.NewPCG(uint64(w.prod.Seed), uint64(c.proc)+1))
	c.event(history.RebalanceJoin, nil, -1)
	ctx, cancel := context.WithCancel(context.Background())
	cl, err := kgo.NewClient(c.opts(ctx)...)
	if err != nil {
		cancel()
		c.mu.Lock()
		c.dead.Store(true)
		c.mu.Unlock()
		c.leaveEvent()
		return nil, err
	}
	c.cl, c.cancel = cl, cancel
	w.mu.Lock()
	s.cur = c
	w.mu.Unlock()
	return c, nil
}

func (c *consumer) opts(ctx context.Context) []kgo.Opt {
	cfg := &c.w.cfg
	var bal kgo.GroupBalancer
	switch cfg.Assignor {
	case Sticky:
		bal = kgo.StickyBalancer()
	case CooperativeSticky:
		bal = kgo.CooperativeStickyBalancer()
	default:
		bal = kgo.RangeBalancer()
	}
	o := []kgo.Opt{
		kgo.WithContext(ctx),
		kgo.SeedBrokers(c.w.prod.Bootstrap...),
		kgo.Dialer(c.dial.dial), dialer.Auth(),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(c.w.prod.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(min(c.w.prod.PollTimeout, 500*time.Millisecond)),
		kgo.Balancers(bal),
		kgo.SessionTimeout(cfg.SessionTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, cfg.SessionTimeout/3)),
		kgo.RebalanceTimeout(cfg.MaxPollInterval),
		// Callbacks run between batches, as the Java consumer's do inside
		// poll(): a revoke never races the processing of a batch.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
	}
	if c.s.instance != "" {
		o = append(o, kgo.InstanceID(c.s.instance))
	}
	switch cfg.CommitMode {
	case CommitAuto, CommitAutoGreedy:
		o = append(o, kgo.AutoCommitInterval(cfg.AutoCommitInterval),
			kgo.AutoCommitCallback(func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				c.recordCommit(req, resp, err)
			}))
		if cfg.CommitMode == CommitAutoGreedy {
			// Seed 002's mechanism: the position after the last record
			// poll returned, processed or not. Without it franz-go holds
			// back the latest poll's records until the next poll, as the
			// Java consumer commits at the next poll (CommitAuto).
			o = append(o, kgo.GreedyAutoCommit())
		}
	default:
		o = append(o, kgo.DisableAutoCommit())
	}
	return o
}

// run polls and processes until something ends this consumer.
func (c *consumer) run(ctx context.Context) endReason {
	cfg := &c.w.cfg
	for {
		switch {
		case ctx.Err() != nil:
			return endDone
		case c.restartReq.Load():
			return endRestart
		case c.crashReq.Load() && time.Since(time.Unix(0, c.crashReqAt.Load())) >= cfg.CrashWait:
			return endCrash // no batch came to crash in the middle of
		}
		batch := c.poll()
		if len(batch) == 0 {
			c.cl.AllowRebalance()
			continue
		}
		began := time.Now()
		// committed: with commit-before, the keys whose commit the
		// coordinator accepted. The application commits with commitSync,
		// which returns only once the commit succeeded and throws otherwise
		// (seed 002: "先提交后处理"), so it processes nothing of a key
		// whose commit failed or is unknown: processing it anyway would
		// hand the records to whoever consumes from the committed offset
		// next, a redelivery that at-most-once forbids. Those records are
		// skipped; the next commit passes them (committed-skip, allowed).
		var committed map[string]bool
		if cfg.CommitMode == CommitBefore {
			committed = c.commit(batchEnds(batch))
		}
		for i, r := range batch {
			// Mid-batch: at least one record and half the batch
			// processed, at least one not.
			if c.crashReq.Load() && i >= 1 && i >= len(batch)/2 {
				return endCrash
			}
			if cfg.CommitMode == CommitBefore && !committed[kit.Key(r.Topic, r.Partition)] {
				continue
			}
			c.process(r)
		}
		if c.crashReq.Load() {
			// A batch of one: processed, not committed (seed 002: "处理完、
			// 提交前进程崩溃").
			return endCrash
		}
		if time.Since(began) > cfg.MaxPollInterval {
			// The Java consumer left the group when max.poll.interval
			// passed; its commit of this batch would fail.
			return endExpired
		}
		if cfg.CommitMode == CommitAfter {
			c.commit(batchEnds(batch))
		}
		c.cl.AllowRebalance()
	}
}

// poll runs one poll operation and returns its records.
func (c *consumer) poll() []*kgo.Record {
	cfg := &c.w.cfg
	proc := history.Process(c.proc)
	c.w.write(history.Op{Process: proc, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
	pctx, cancel := context.WithTimeout(context.Background(), c.w.prod.PollTimeout)
	fs := c.cl.PollRecords(pctx, cfg.MaxPollRecords)
	cancel()
	byPart := map[int32][]history.Record{}
	var batch []*kgo.Record
	var parseErr error
	fs.EachRecord(func(r *kgo.Record) {
		v, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil {
			parseErr = fmt.Errorf("%s offset %d: value %q is not an integer", kit.Key(r.Topic, r.Partition), r.Offset, r.Value)
			return
		}
		byPart[r.Partition] = append(byPart[r.Partition], history.Record{Offset: r.Offset, Value: v})
		batch = append(batch, r)
	})
	m := history.Poll()
	m.Polls = []history.KeyRecords{}
	for _, p := range slices.Sorted(maps.Keys(byPart)) {
		m.Polls = append(m.Polls, history.KeyRecords{Key: kit.Key(c.w.prod.Topic, p), Records: byPart[p]})
	}
	op := history.Op{Process: proc, Type: history.OK, F: history.FPoll, Mops: []history.Mop{m}}
	for _, fe := range fs.Errors() {
		if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
			op.Error = kit.ErrorName(fe.Err)
		}
	}
	if parseErr != nil {
		op.Error = parseErr.Error()
	}
	c.w.write(op)
	return batch
}

// process "processes" one record: ProcessingTime per attempt, each attempt
// failing with FailureRate. A swallowed failure (or a retried one out of
// attempts) is recorded as a failed process event, and the application
// moves past the record all the same.
func (c *consumer) process(r *kgo.Record) {
	cfg := &c.w.cfg
	v, _ := strconv.ParseInt(string(r.Value), 10, 64) // poll checked it
	recs := []history.KeyRecords{{Key: kit.Key(r.Topic, r.Partition), Records: []history.Record{{Offset: r.Offset, Value: v}}}}
	for attempt := 1; ; attempt++ {
		if cfg.ProcessingTime > 0 {
			time.Sleep(cfg.ProcessingTime)
		}
		failed := cfg.FailureRate > 0 && c.rng.Float64() < cfg.FailureRate
		if !failed {
			c.w.write(history.Op{Process: history.Process(c.proc), Type: history.OK, F: history.FProcess, Records: recs, Group: cfg.Group})
			break
		}
		if cfg.FailureHandling == Swallow || attempt >= cfg.MaxAttempts {
			msg := "processing failed: swallowed"
			if cfg.FailureHandling == Retry {
				msg = fmt.Sprintf("processing failed %d times: given up", attempt)
			}
			c.w.write(history.Op{Process: history.Process(c.proc), Type: history.Fail, F: history.FProcess, Records: recs, Group: cfg.Group, Error: msg})
			break
		}
	}
	c.posMu.Lock()
	c.pos[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
	c.posMu.Unlock()
}

// batchEnds is, per partition of batch, the offset after its last record.
func batchEnds(batch []*kgo.Record) map[string]map[int32]kgo.EpochOffset {
	out := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range batch {
		if out[r.Topic] == nil {
			out[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		out[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
	}
	return out
}

// commitTimeout bounds one synchronous commit.
const commitTimeout = 10 * time.Second

// commit commits offsets synchronously and records the answer; it returns
// the keys whose commit the coordinator accepted.
func (c *consumer) commit(offsets map[string]map[int32]kgo.EpochOffset) map[string]bool {
	if len(offsets) == 0 || c.noCommit.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	var accepted map[string]bool
	c.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		accepted = c.recordCommit(req, resp, err)
	})
	return accepted
}

// recordCommit writes what a commit's answer says: an ok commit line with
// the offsets the coordinator accepted, an info line with the rest. It
// returns the accepted keys.
func (c *consumer) recordCommit(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) map[string]bool {
	if req == nil {
		return nil
	}
	sent := map[string]int64{}
	var order []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := kit.Key(t.Topic, p.Partition)
			if _, dup := sent[k]; !dup {
				order = append(order, k)
			}
			sent[k] = p.Offset
		}
	}
	if len(order) == 0 {
		return nil
	}
	var okOffs, badOffs []history.KeyOffset
	errName := ""
	accepted := map[string]bool{}
	if err != nil {
		errName = kit.ErrorName(err)
		for _, k := range order {
			badOffs = append(badOffs, history.KeyOffset{Key: k, Offset: sent[k]})
		}
	} else if resp != nil {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				k := kit.Key(t.Topic, p.Partition)
				if p.ErrorCode == 0 {
					accepted[k] = true
				} else if errName == "" {
					errName = kit.ErrorName(kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
		for _, k := range order {
			if accepted[k] {
				okOffs = append(okOffs, history.KeyOffset{Key: k, Offset: sent[k]})
			} else {
				badOffs = append(badOffs, history.KeyOffset{Key: k, Offset: sent[k]})
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead.Load() {
		return nil // a dead consumer's application acts on nothing
	}
	g := c.w.cfg.Group
	if len(okOffs) > 0 {
		c.w.write(history.Op{Process: history.Process(c.proc), Type: history.OK, F: history.FCommit, Offsets: okOffs, Group: g})
	}
	if len(badOffs) > 0 {
		c.w.write(history.Op{Process: history.Process(c.proc), Type: history.Info, F: history.FCommit, Offsets: badOffs, Group: g, Error: errName})
	}
	return accepted
}

// event writes one rebalance line unless the consumer is dead.
func (c *consumer) event(kind string, keys []string, gen int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead.Load() {
		return
	}
	c.writeEvent(kind, keys, gen)
}

func (c *consumer) writeEvent(kind string, keys []string, gen int32) {
	op := history.RebalanceOp(history.Process(c.proc), c.w.cfg.Group,
		history.Rebalance{Event: kind, Keys: keys, Generation: gen, Instance: c.s.instance, Slot: c.s.id})
	c.w.write(op)
}

func (c *consumer) keys(m map[string][]int32) []string {
	keys := []string{}
	for t, ps := range m {
		for _, p := range ps {
			keys = append(keys, kit.Key(t, p))
		}
	}
	slices.Sort(keys)
	return keys
}

func (c *consumer) onAssigned(_ context.Context, cl *kgo.Client, m map[string][]int32) {
	_, gen := cl.GroupMetadata()
	c.event(history.RebalanceAssigned, c.keys(m), gen)
	c.assigned.Store(true)
}

func (c *consumer) onRevoked(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
	_, gen := cl.GroupMetadata()
	c.event(history.RebalanceRevoked, c.keys(m), gen)
	if c.dead.Load() || c.noCommit.Load() {
		return
	}
	switch c.w.cfg.CommitMode {
	case CommitAuto, CommitAutoGreedy:
		// enable.auto.commit also commits when partitions are revoked
		// (ConsumerCoordinator.onJoinPrepare). Revokes run between batches
		// (BlockRebalanceOnPoll), so every polled record was processed.
		c.commit(cl.UncommittedOffsets())
	case CommitOnRevoked:
		offs := map[string]map[int32]kgo.EpochOffset{}
		c.posMu.Lock()
		for t, ps := range m {
			for _, p := range ps {
				if eo, ok := c.pos[p]; ok {
					if offs[t] == nil {
						offs[t] = map[int32]kgo.EpochOffset{}
					}
					offs[t][p] = eo
					delete(c.pos, p)
				}
			}
		}
		c.posMu.Unlock()
		c.commit(offs)
	}
}

func (c *consumer) onLost(_ context.Context, cl *kgo.Client, m map[string][]int32) {
	_, gen := cl.GroupMetadata()
	c.event(history.RebalanceLost, c.keys(m), gen)
	c.posMu.Lock()
	for _, ps := range m {
		for _, p := range ps {
			delete(c.pos, p)
		}
	}
	c.posMu.Unlock()
}

func (c *consumer) requestCrash() {
	c.crashReqAt.Store(time.Now().UnixNano())
	c.crashReq.Store(true)
}

// crash kills the consumer as kill -9 would: its connections drop, it
// sends nothing more (no commit, no LeaveGroup), and it records the crash.
func (c *consumer) crash() {
	c.dial.kill()
	c.cancel()
	c.noCommit.Store(true)
	c.mu.Lock()
	c.dead.Store(true)
	raw, _ := json.Marshal(map[string]any{"process": c.proc, "slot": c.s.id})
	c.w.write(history.Op{Process: history.Process(c.proc), Type: history.Info, F: history.FCrash, Raw: raw})
	c.mu.Unlock()
	// Reap the client's goroutines; it can reach nobody any more.
	go c.cl.CloseAllowingRebalance()
}

// closeGrace bounds a clean close (a final commit and LeaveGroup).
const closeGrace = 15 * time.Second

// closeClean closes the client as an application would: a final revoke
// (and commit, unless expired), LeaveGroup for a dynamic member. A restart
// or expiry then records the process's leave.
func (c *consumer) closeClean(end endReason) {
	if end == endExpired {
		c.noCommit.Store(true)
	}
	done := make(chan struct{})
	go func() { c.cl.CloseAllowingRebalance(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
		c.dial.kill() // a close that hangs is cut short like a crash
		c.cancel()
		<-done
	}
	c.cancel()
	c.mu.Lock()
	c.dead.Store(true)
	c.mu.Unlock()
	if end != endDone {
		c.leaveEvent()
	}
}

func (c *consumer) leaveEvent() { c.writeEvent(history.RebalanceLeave, nil, -1) }

// killDialer dials brokers and can cut every connection it made at once and
// refuse new ones: a consumer crash without the client's cooperation.
type killDialer struct {
	// dialFn dials one connection: the harness's client-link dialer for
	// this process (queue.Config.Dial), or a plain dialer.
	dialFn func(ctx context.Context, network, host string) (net.Conn, error)
	mu     sync.Mutex
	// conns are the open connections; dead refuses dials. Guarded by mu.
	conns map[net.Conn]struct{}
	dead  bool
}

// newKillDialer dials through links(proc) when links is set.
func newKillDialer(links func(int) func(context.Context, string, string) (net.Conn, error), proc int) *killDialer {
	k := &killDialer{conns: map[net.Conn]struct{}{}}
	if links != nil {
		k.dialFn = links(proc)
	} else {
		k.dialFn = dialer.Secure(dialer.Dial(time.Second))
	}
	return k
}

var errCrashed = errors.New("consumer crashed")

func (k *killDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	k.mu.Lock()
	dead := k.dead
	k.mu.Unlock()
	if dead {
		return nil, errCrashed
	}
	conn, err := k.dialFn(ctx, network, host)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		conn.Close()
		return nil, errCrashed
	}
	tc := &trackedConn{Conn: conn, k: k}
	k.conns[tc] = struct{}{}
	return tc, nil
}

func (k *killDialer) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	for c := range k.conns {
		c.(*trackedConn).Conn.Close()
	}
	clear(k.conns)
}

type trackedConn struct {
	net.Conn
	k *killDialer
}

func (t *trackedConn) Close() error {
	t.k.mu.Lock()
	delete(t.k.conns, t)
	t.k.mu.Unlock()
	return t.Conn.Close()
}
