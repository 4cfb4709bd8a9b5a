package group

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
	"gregor/cluster/meta"
)

// Env is what the coordinator needs from its broker: the
// __consumer_offsets topic (its partition count, 0 while it does not exist,
// and this broker's replicas of its partitions).
type Env interface {
	coordinator.Topic
	// Image is the current metadata: a consumer group's assignors read the
	// topics (ids, partition counts) its members subscribe to.
	Image() *meta.Image
}

// Coordinator coordinates the groups of the __consumer_offsets partitions
// this broker leads. The shard set, their loads and unloads are the
// runtime's (coordinator.Runtime, Kafka's CoordinatorRuntime); a shard is
// this package's state machine of one partition (Kafka's
// GroupCoordinatorShard).
type Coordinator struct {
	cfg Config
	env Env
	rt  *coordinator.Runtime[*shard]
}

// New returns a coordinator; Start begins watching leadership.
func New(cfg Config, env Env) *Coordinator {
	cfg.Defaults()
	c := &Coordinator{cfg: cfg, env: env}
	c.rt = coordinator.New(coordinator.Config{Name: "group coordinator", Topic: "__consumer_offsets", PollEvery: cfg.PollEvery, Logger: cfg.Logger, Node: cfg.Node}, env, c.newShard)
	return c
}

// Config is the coordinator's configuration with defaults applied.
func (c *Coordinator) Config() Config { return c.cfg }

// Start polls leadership of the offsets partitions until Close.
func (c *Coordinator) Start() { c.rt.Start() }

// Close unloads every shard (waiting requests get NOT_COORDINATOR) and
// waits for the coordinator's goroutines.
func (c *Coordinator) Close() { c.rt.Close() }

// Poll loads the shards this broker now leads and unloads the others.
func (c *Coordinator) Poll() { c.rt.Poll() }

// Leads reports whether this broker coordinates the group and has loaded it.
func (c *Coordinator) Leads(groupID string) bool {
	s, e := c.shardFor(groupID)
	return s != nil && e == nil
}

// shardFor finds the loaded shard of a group, or the error a client should
// get: INVALID_GROUP_ID, then the runtime's (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, ...).
func (c *Coordinator) shardFor(groupID string) (*shard, *kerr.Error) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	return c.rt.ShardFor(groupID)
}

// loadedShards returns the shards that serve requests.
func (c *Coordinator) loadedShards() ([]*shard, bool) { return c.rt.Loaded() }

// shard is the groups of one __consumer_offsets partition this broker leads
// in one leader epoch.
type shard struct {
	c         *Coordinator
	partition int32
	epoch     int32
	log       coordinator.Log
	ctx       context.Context // ends at unload: loads and writes stop

	mu sync.Mutex
	// loading: the partition is being replayed; requests get
	// COORDINATOR_LOAD_IN_PROGRESS. unloaded: leadership moved; requests get
	// NOT_COORDINATOR. Invariant: once unloaded, groups is empty (checked by
	// shard.invariants) and no timer of this shard acts (after's guard; a
	// timer that fired is gone, so there is no state to check).
	loading, unloaded bool
	groups            map[string]*Group
	// lateMarkers are transaction ends CompleteTxn saw while loading,
	// applied once the replay is done (a replay may or may not have seen
	// their markers: applying one twice is harmless). Invariant (checked by
	// invariants): empty once loaded.
	lateMarkers []txnEnd
	// writeLock orders a consumer group's writes as its state changed: a
	// channel lock (held across an append, so never a sync.Mutex), taken
	// before mu.
	writeLock chan struct{}
}

// newShard is the coordinator.NewShard of this coordinator.
func (c *Coordinator) newShard(ctx context.Context, partition, epoch int32, l coordinator.Log) *shard {
	return &shard{c: c, partition: partition, epoch: epoch, log: l, ctx: ctx, loading: true, groups: map[string]*Group{}, writeLock: make(chan struct{}, 1)}
}

// State implements coordinator.Shard.
func (s *shard) State() coordinator.State {
	s.mu.Lock()
	defer s.unlock()
	return coordinator.StateOf(s.loading, s.unloaded)
}

// Load implements coordinator.Shard: it replays the partition. Records
// past the high watermark are replayed too: this broker now leads the
// partition, so its log is the one that will be committed.
func (s *shard) Load() {
	start := s.c.cfg.Clock.Now()
	groups := replayed{}
	n := 0
	err := s.log.Replay(s.ctx, func(off int64, r coordinator.Record) {
		n++
		groups.apply(off, r)
	})
	s.mu.Lock()
	defer s.unlock()
	if s.unloaded {
		return
	}
	if err != nil {
		// Leave the shard loading: the next leadership change retries, and
		// clients keep getting COORDINATOR_LOAD_IN_PROGRESS meanwhile.
		s.c.cfg.Logger.Error("loading __consumer_offsets partition", "partition", s.partition, "err", err)
		return
	}
	for _, end := range s.lateMarkers {
		for _, g := range groups {
			g.completeTxn(end)
		}
	}
	s.lateMarkers = nil
	for id, g := range groups {
		if len(g.members) == 0 && len(g.offsets) == 0 && len(g.txnOffsets) == 0 && !g.known && g.cg == nil {
			continue
		}
		g.known = true
		s.groups[id] = g
		for _, m := range g.members {
			s.resetSession(g, m)
		}
		if g.cg != nil {
			s.loadedConsumerGroup(g)
		}
	}
	s.loading = false
	s.c.cfg.Logger.Info("loaded group coordinator partition", "partition", s.partition, "epoch", s.epoch,
		"groups", len(s.groups), "records", n, "took", s.c.cfg.Clock.Now().Sub(start))
}

// replayed is the groups a load rebuilds from the records, by id.
type replayed map[string]*Group

func (rg replayed) get(id string) *Group {
	g := rg[id]
	if g == nil {
		g = newGroup(id)
		rg[id] = g
	}
	return g
}

// apply replays one record at log offset off: a transaction marker ends
// the producer's pending offsets in every group, an offset record commits
// (or, transactional, parks) an offset, a group record restores or clears
// the membership.
func (rg replayed) apply(off int64, r coordinator.Record) {
	if r.Txn != nil && r.Txn.Marker {
		for _, g := range rg {
			g.completeTxn(txnEnd{r.Txn.ProducerID, r.Txn.Commit, off})
		}
		return
	}
	var k recordKey
	if json.Unmarshal(r.Key, &k) != nil {
		return // not a group record: skipped, as Kafka's loader skips unknown keys
	}
	switch k.Kind {
	case kindOffset:
		g := rg.get(k.Group)
		key := TopicPartition{k.Topic, k.Partition}
		if r.Txn != nil {
			// A TxnOffsetCommit: pending until its marker.
			var v offsetValue
			if r.Value != nil && json.Unmarshal(r.Value, &v) == nil {
				g.addTxnOffset(r.Txn.ProducerID, key, committed{offsetValue: v, logOffset: off})
			}
			return
		}
		if r.Value == nil {
			delete(g.offsets, key)
			return
		}
		var v offsetValue
		if json.Unmarshal(r.Value, &v) == nil {
			g.offsets[key] = committed{offsetValue: v, logOffset: off}
		}
	case kindCGMetadata, kindCGMember, kindCGTargetMetadata, kindCGTargetMember, kindCGCurrent:
		rg.applyConsumer(k, r)
	case kindGroup:
		if r.Value == nil {
			if g := rg[k.Group]; g != nil {
				g.clearMembership()
			}
			return
		}
		var v groupValue
		if json.Unmarshal(r.Value, &v) == nil {
			rg.get(k.Group).restore(&v)
		}
	}
}

// Unload implements coordinator.Shard: it drops every group, parked
// requests get NOT_COORDINATOR and timers go quiet.
func (s *shard) Unload() {
	s.mu.Lock()
	defer s.unlock()
	s.unloaded = true
	for id, g := range s.groups {
		g.stopTimers()
		for _, m := range g.members {
			m.fail(kerr.NotCoordinator)
		}
		delete(s.groups, id)
	}
}

// write appends records to the shard's partition (acks=all), bounded by
// WriteTimeout, and maps the outcome to a coordinator error as Kafka does.
func (s *shard) write(ctx context.Context, recs []coordinator.Record) (int64, *kerr.Error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.WriteTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	base, e := s.log.Append(ctx, s.epoch, recs)
	return base, appendError(e)
}

// appendError maps a failed append to the error a coordinator answers
// (GroupMetadataManager.maybeConvertOffsetCommitError).
func appendError(e *kerr.Error) *kerr.Error {
	switch e {
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.FencedLeaderEpoch:
		return kerr.NotCoordinator
	case kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut, kerr.UnknownTopicOrPartition:
		return kerr.CoordinatorNotAvailable
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.InvalidCommitOffsetSize
	}
	return e
}

// writeBackground persists group metadata nobody waits for (an emptied
// group, a replaced static member). Bounded by WriteTimeout.
func (s *shard) writeBackground(recs []coordinator.Record) {
	s.c.rt.Background(func() {
		if _, e := s.write(s.ctx, recs); e != nil {
			s.c.cfg.Logger.Warn("persisting group metadata", "partition", s.partition, "err", e)
		}
	})
}

// after runs f under the shard lock after d, unless the shard is unloaded
// by then.
func (s *shard) after(d time.Duration, f func()) coordinator.Timer {
	return s.c.cfg.Clock.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.unlock()
		if s.unloaded {
			return
		}
		f()
	})
}
