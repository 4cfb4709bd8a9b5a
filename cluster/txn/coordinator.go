package txn

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/group"
)

// Markers is one WriteTxnMarkers entry: a producer's COMMIT or ABORT for the
// partitions still owed one.
type Markers struct {
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
	Version          int16
	Partitions       []TopicPartition
}

// ErrPartitionGone is a marker result for a partition metadata no longer
// has (its topic was deleted): nothing is owed there any more.
var ErrPartitionGone = errors.New("partition no longer exists")

// Env is what the coordinator needs from its broker.
type Env interface {
	// Partitions is the partition count of __transaction_state, 0 while the
	// topic does not exist.
	Partitions() int32
	// Log is this broker's replica of a partition, nil when it hosts none.
	Log(partition int32) group.Log
	// NewProducerID allocates a producer id unique across the cluster.
	NewProducerID(ctx context.Context) (int64, *kerr.Error)
	// OffsetsPartition is the __consumer_offsets partition of a group.
	OffsetsPartition(groupID string) (TopicPartition, *kerr.Error)
	// WriteMarkers writes the markers on the partitions' leaders and
	// reports, per partition, nil once written and replicated,
	// ErrPartitionGone, or why not.
	WriteMarkers(ctx context.Context, m Markers) map[TopicPartition]error
}

// Coordinator coordinates the transactional ids of the __transaction_state
// partitions this broker leads.
type Coordinator struct {
	cfg Config
	env Env

	mu sync.Mutex
	// Invariant: a shard is present iff its Log reported leadership in the
	// shard's epoch at the last poll.
	shards map[int32]*shard
	closed bool

	stop chan struct{}
	// wg counts the loops, loads and background work; all end on Close.
	wg sync.WaitGroup
	// bgMu guards bgClosed: no background work starts after Close.
	bgMu     sync.Mutex
	bgClosed bool
}

// New returns a coordinator; Start begins watching leadership.
func New(cfg Config, env Env) *Coordinator {
	cfg.Defaults()
	return &Coordinator{cfg: cfg, env: env, shards: map[int32]*shard{}, stop: make(chan struct{})}
}

// Config is the coordinator's configuration with defaults applied.
func (c *Coordinator) Config() Config { return c.cfg }

// Start polls leadership and aborts timed-out transactions until Close.
func (c *Coordinator) Start() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		poll := time.NewTicker(c.cfg.PollEvery)
		defer poll.Stop()
		abort := time.NewTicker(c.cfg.AbortTimedOutEvery)
		defer abort.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-poll.C:
				c.Poll()
			case <-abort.C:
				c.AbortTimedOut()
			}
		}
	}()
}

// Close unloads every shard and waits for the coordinator's goroutines.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.stop)
	for i, s := range c.shards {
		s.unload()
		delete(c.shards, i)
	}
	c.mu.Unlock()
	c.bgMu.Lock()
	c.bgClosed = true
	c.bgMu.Unlock()
	c.wg.Wait()
}

// background runs f on its own goroutine unless the coordinator closed.
func (c *Coordinator) background(f func()) {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.bgClosed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// Poll loads the shards this broker now leads and unloads the others
// (onElection / onResignation).
func (c *Coordinator) Poll() {
	n := c.env.Partitions()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for i := int32(0); i < n; i++ {
		var epoch int32
		lead := false
		l := c.env.Log(i)
		if l != nil {
			epoch, lead = l.LeaderEpoch()
		}
		s := c.shards[i]
		if s != nil && (!lead || s.epoch != epoch) {
			c.cfg.Logger.Info("resigned as transaction coordinator", "partition", i, "coordinator_epoch", s.epoch)
			s.unload()
			delete(c.shards, i)
			s = nil
		}
		if lead && s == nil {
			s = newShard(c, i, epoch, l)
			c.shards[i] = s
			c.cfg.Logger.Info("elected transaction coordinator", "partition", i, "coordinator_epoch", epoch)
			c.background(s.load)
		}
	}
	for i, s := range c.shards {
		if i >= n {
			s.unload()
			delete(c.shards, i)
		}
	}
}

// PartitionFor is the __transaction_state partition of a transactional id:
// Kafka's Utils.abs(transactionalId.hashCode) % partitions.
func PartitionFor(id string, partitions int32) int32 { return group.PartitionFor(id, partitions) }

// shardFor finds the loaded shard of a transactional id, or the error a
// client should get.
func (c *Coordinator) shardFor(id string) (*shard, *kerr.Error) {
	n := c.env.Partitions()
	if n <= 0 {
		return nil, kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	s := c.shards[PartitionFor(id, n)]
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return nil, kerr.CoordinatorNotAvailable
	case s == nil:
		return nil, kerr.NotCoordinator
	}
	s.mu.Lock()
	defer s.unlock()
	switch {
	case s.unloaded:
		return nil, kerr.NotCoordinator
	case s.loading:
		return nil, kerr.CoordinatorLoadInProgress
	}
	return s, nil
}

// loadedShards returns the shards that serve requests.
func (c *Coordinator) loadedShards() (out []*shard, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		s.mu.Lock()
		if s.loading {
			loading = true
		} else if !s.unloaded {
			out = append(out, s)
		}
		s.unlock()
	}
	return out, loading
}

// shard is the transactions of one __transaction_state partition this
// broker leads in one leader epoch (the coordinator epoch).
type shard struct {
	c         *Coordinator
	partition int32
	epoch     int32
	log       group.Log
	ctx       context.Context // ends at unload: writes and markers stop
	cancel    context.CancelFunc

	mu sync.Mutex
	// loading: the partition is being replayed (COORDINATOR_LOAD_IN_PROGRESS);
	// unloaded: leadership moved (NOT_COORDINATOR). Invariant: once
	// unloaded, txns is empty and nothing of this shard writes again.
	loading, unloaded bool
	txns              map[string]*Meta
}

func newShard(c *Coordinator, partition, epoch int32, l group.Log) *shard {
	ctx, cancel := context.WithCancel(context.Background())
	return &shard{c: c, partition: partition, epoch: epoch, log: l, ctx: ctx, cancel: cancel, loading: true, txns: map[string]*Meta{}}
}

func (s *shard) nowMs() int64 { return s.c.cfg.Clock.Now().UnixMilli() }

// recordKey is a transaction log record's key: gregor's own JSON, not
// Kafka's binary schema (only this coordinator reads it back).
type recordKey struct {
	ID string `json:"txn"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs only
	}
	return b
}

// load replays the partition (loadTransactionsForTxnTopicPartition): the
// last transit written for each id is its state; transactions found in a
// Prepare state are completed, their markers written anew. Records past
// the HW are replayed too: this broker leads, its log is the one that will
// be committed.
func (s *shard) load() {
	start := s.c.cfg.Clock.Now()
	last := map[string]*Transit{}
	n := 0
	err := s.log.Replay(s.ctx, func(_ int64, r group.Record) {
		n++
		var k recordKey
		if r.Txn != nil || json.Unmarshal(r.Key, &k) != nil || k.ID == "" {
			return // not ours
		}
		if r.Value == nil {
			delete(last, k.ID)
			return
		}
		var t Transit
		if json.Unmarshal(r.Value, &t) == nil {
			last[k.ID] = &t
		}
	})
	s.mu.Lock()
	defer s.unlock()
	if s.unloaded {
		return
	}
	if err != nil {
		// Stay loading: the next leadership change retries.
		s.c.cfg.Logger.Error("loading "+Topic+" partition", "partition", s.partition, "err", err)
		return
	}
	var resume []*Meta
	for id, t := range last {
		m := metaOf(id, t)
		s.txns[id] = m
		if m.State == PrepareCommit || m.State == PrepareAbort {
			resume = append(resume, m)
		}
	}
	s.loading = false
	s.c.cfg.Logger.Info("loaded transaction coordinator partition", "partition", s.partition, "coordinator_epoch", s.epoch,
		"transactions", len(s.txns), "records", n, "completing", len(resume), "took", s.c.cfg.Clock.Now().Sub(start))
	for _, m := range resume {
		s.c.cfg.Logger.Info("completing transaction found in a prepare state", "txn", m.ID, "state", m.State, "producer", m.ProducerID, "epoch", m.Epoch)
		s.startCompletionLocked(m)
	}
}

// unload drops every transaction: writes and markers in flight stop.
func (s *shard) unload() {
	s.cancel()
	s.mu.Lock()
	defer s.unlock()
	s.unloaded = true
	clear(s.txns)
}

// write appends t, the transit prepared on m, acks=all, bounded by
// WriteTimeout, then completes the transition if the shard still holds m
// (appendTransactionToLog). Errors are mapped as Kafka maps them; keep: a
// failure leaves the pending transition for the caller to retry.
func (s *shard) write(ctx context.Context, m *Meta, t Transit, keep bool) *kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.WriteTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	rec := group.Record{Key: mustJSON(recordKey{ID: m.ID}), Value: mustJSON(&t)}
	_, e := s.log.Append(ctx, s.epoch, []group.Record{rec})
	switch e {
	case nil:
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		e = kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.FencedLeaderEpoch:
		e = kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		e = kerr.UnknownServerError
	}
	s.mu.Lock()
	defer s.unlock()
	if s.unloaded || s.txns[m.ID] != m {
		return kerr.NotCoordinator
	}
	if e != nil {
		if !keep {
			m.abandon()
		}
		s.c.cfg.Logger.Info("transaction state write failed", "txn", m.ID, "to", t.State, "err", e)
		return e
	}
	from := m.State
	if err := m.complete(t); err != nil {
		// The state machine disagrees with what was just written: a bug
		// here, never a client's doing.
		panic(err)
	}
	s.c.cfg.Logger.Info("transaction state", "txn", m.ID, "from", from, "to", m.State, "producer", m.ProducerID,
		"epoch", m.Epoch, "partitions", len(t.Partitions), "coordinator_epoch", s.epoch)
	return nil
}
