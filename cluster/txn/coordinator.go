package txn

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
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
	// The __transaction_state topic: its partition count, 0 while it does
	// not exist, and this broker's replicas of its partitions.
	coordinator.Topic
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
// partitions this broker leads. The shard set, their loads and unloads are
// the runtime's (coordinator.Runtime, Kafka's CoordinatorRuntime); a shard
// is this package's state machine of one partition (the part of Kafka's
// TransactionStateManager that holds one partition's metadata).
type Coordinator struct {
	cfg Config
	env Env
	rt  *coordinator.Runtime[*shard]
}

// New returns a coordinator; Start begins watching leadership.
func New(cfg Config, env Env) *Coordinator {
	cfg.Defaults()
	c := &Coordinator{cfg: cfg, env: env}
	c.rt = coordinator.New(coordinator.Config{Name: "transaction coordinator", Topic: "__transaction_state", PollEvery: cfg.PollEvery, Logger: cfg.Logger, Node: cfg.Node}, env, c.newShard)
	return c
}

// Config is the coordinator's configuration with defaults applied.
func (c *Coordinator) Config() Config { return c.cfg }

// Start polls leadership and aborts timed-out transactions until Close.
func (c *Coordinator) Start() {
	c.rt.Start()
	c.rt.Every(c.cfg.AbortTimedOutEvery, c.AbortTimedOut)
}

// Close unloads every shard and waits for the coordinator's goroutines.
func (c *Coordinator) Close() { c.rt.Close() }

// background runs f on its own goroutine unless the coordinator closed.
func (c *Coordinator) background(f func()) { c.rt.Background(f) }

// Poll loads the shards this broker now leads and unloads the others
// (onElection / onResignation).
func (c *Coordinator) Poll() { c.rt.Poll() }

// shardFor finds the loaded shard of a transactional id, or the error a
// client should get.
func (c *Coordinator) shardFor(id string) (*shard, *kerr.Error) { return c.rt.ShardFor(id) }

// loadedShards returns the shards that serve requests.
func (c *Coordinator) loadedShards() ([]*shard, bool) { return c.rt.Loaded() }

// shard is the transactions of one __transaction_state partition this
// broker leads in one leader epoch (the coordinator epoch).
type shard struct {
	c         *Coordinator
	partition int32
	epoch     int32
	log       coordinator.Log
	ctx       context.Context // ends at unload: writes and markers stop

	mu sync.Mutex
	// loading: the partition is being replayed (COORDINATOR_LOAD_IN_PROGRESS);
	// unloaded: leadership moved (NOT_COORDINATOR). Invariant: once
	// unloaded, txns is empty and nothing of this shard writes again.
	loading, unloaded bool
	txns              map[string]*Meta
}

// newShard is the coordinator.NewShard of this coordinator.
func (c *Coordinator) newShard(ctx context.Context, partition, epoch int32, l coordinator.Log) *shard {
	return &shard{c: c, partition: partition, epoch: epoch, log: l, ctx: ctx, loading: true, txns: map[string]*Meta{}}
}

// State implements coordinator.Shard.
func (s *shard) State() coordinator.State {
	s.mu.Lock()
	defer s.unlock()
	return coordinator.StateOf(s.loading, s.unloaded)
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

// Load implements coordinator.Shard: it replays the partition
// (loadTransactionsForTxnTopicPartition): the
// last transit written for each id is its state; transactions found in a
// Prepare state are completed, their markers written anew. Records past
// the HW are replayed too: this broker leads, its log is the one that will
// be committed.
func (s *shard) Load() {
	start := s.c.cfg.Clock.Now()
	last := map[string]*Transit{}
	n := 0
	err := s.log.Replay(s.ctx, func(_ int64, r coordinator.Record) {
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

// Unload implements coordinator.Shard: it drops every transaction; writes
// and markers in flight stop (their context has ended).
func (s *shard) Unload() {
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
	rec := coordinator.Record{Key: mustJSON(recordKey{ID: m.ID}), Value: mustJSON(&t)}
	_, e := s.log.Append(ctx, s.epoch, []coordinator.Record{rec})
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
