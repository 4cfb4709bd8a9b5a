package group

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Log is this broker's replica of one __consumer_offsets partition.
type Log interface {
	// LeaderEpoch is the partition's leader epoch while this broker leads it.
	LeaderEpoch() (epoch int32, leader bool)
	// Append writes recs as one batch in the given leader epoch and returns
	// once the batch is committed as acks=all would be, with the offset of
	// its first record.
	Append(ctx context.Context, epoch int32, recs []Record) (base int64, err *kerr.Error)
	// Replay calls fn on every record from the log start to the log end,
	// in offset order.
	Replay(ctx context.Context, fn func(offset int64, r Record)) error
}

// Env is what the coordinator needs from its broker.
type Env interface {
	// OffsetsPartitions is the partition count of __consumer_offsets, 0
	// while the topic does not exist.
	OffsetsPartitions() int32
	// Log is this broker's replica of a partition, nil when it hosts none.
	Log(partition int32) Log
}

// Coordinator coordinates the groups of the __consumer_offsets partitions
// this broker leads.
type Coordinator struct {
	cfg Config
	env Env

	mu sync.Mutex
	// shards are the partitions this broker leads, by partition.
	// Invariant: a shard is present iff its Log reported leadership in the
	// shard's epoch at the last poll. Not checked: leadership is the
	// replica's, it changes between polls, and Poll is the one writer,
	// computing the map from exactly that report.
	shards map[int32]*shard
	closed bool

	// bgMu guards bgClosed; it is taken under a shard lock, so it is not mu
	// (mu is taken before shard locks).
	bgMu     sync.Mutex
	bgClosed bool

	stop chan struct{}
	// wg counts the poll loop, loads and background writes; all end on Close.
	wg sync.WaitGroup
}

// New returns a coordinator; Start begins watching leadership.
func New(cfg Config, env Env) *Coordinator {
	cfg.Defaults()
	return &Coordinator{cfg: cfg, env: env, shards: map[int32]*shard{}, stop: make(chan struct{})}
}

// Config is the coordinator's configuration with defaults applied.
func (c *Coordinator) Config() Config { return c.cfg }

// Start polls leadership of the offsets partitions until Close.
func (c *Coordinator) Start() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(c.cfg.PollEvery)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.Poll()
			}
		}
	}()
}

// Close unloads every shard (waiting requests get NOT_COORDINATOR) and
// waits for the coordinator's goroutines.
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

// Poll loads the shards this broker now leads and unloads the others.
func (c *Coordinator) Poll() {
	n := c.env.OffsetsPartitions()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for i := int32(0); i < n; i++ {
		var epoch int32
		lead := false
		if l := c.env.Log(i); l != nil {
			epoch, lead = l.LeaderEpoch()
		}
		s := c.shards[i]
		if s != nil && (!lead || s.epoch != epoch) {
			s.unload()
			delete(c.shards, i)
			s = nil
		}
		if lead && s == nil {
			s = newShard(c, i, epoch, c.env.Log(i))
			c.shards[i] = s
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				s.load()
			}()
		}
	}
	for i, s := range c.shards {
		if i >= n {
			s.unload()
			delete(c.shards, i)
		}
	}
}

// Leads reports whether this broker coordinates the group and has loaded it.
func (c *Coordinator) Leads(groupID string) bool {
	s, e := c.shardFor(groupID)
	return s != nil && e == nil
}

// shardFor finds the loaded shard of a group, or the error a client should
// get: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...
func (c *Coordinator) shardFor(groupID string) (*shard, *kerr.Error) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	n := c.env.OffsetsPartitions()
	if n <= 0 {
		return nil, kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	s := c.shards[PartitionFor(groupID, n)]
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, kerr.CoordinatorNotAvailable
	}
	if s == nil {
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

// shard is the groups of one __consumer_offsets partition this broker leads
// in one leader epoch.
type shard struct {
	c         *Coordinator
	partition int32
	epoch     int32
	log       Log
	ctx       context.Context // ends at unload: loads and writes stop
	cancel    context.CancelFunc

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
}

func newShard(c *Coordinator, partition, epoch int32, l Log) *shard {
	ctx, cancel := context.WithCancel(context.Background())
	return &shard{c: c, partition: partition, epoch: epoch, log: l, ctx: ctx, cancel: cancel, loading: true, groups: map[string]*Group{}}
}

// load replays the partition. Records past the high watermark are replayed
// too: this broker now leads the partition, so its log is the one that will
// be committed.
func (s *shard) load() {
	start := s.c.cfg.Clock.Now()
	groups := map[string]*Group{}
	get := func(id string) *Group {
		g := groups[id]
		if g == nil {
			g = newGroup(id)
			groups[id] = g
		}
		return g
	}
	n := 0
	err := s.log.Replay(s.ctx, func(off int64, r Record) {
		n++
		if r.Txn != nil && r.Txn.Marker {
			for _, g := range groups {
				g.completeTxn(r.Txn.ProducerID, r.Txn.Commit)
			}
			return
		}
		var k recordKey
		if json.Unmarshal(r.Key, &k) != nil {
			return // not a group record: skipped, as Kafka's loader skips unknown keys
		}
		switch k.Kind {
		case kindOffset:
			g := get(k.Group)
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
		case kindGroup:
			if r.Value == nil {
				if g := groups[k.Group]; g != nil {
					g.clearMembership()
				}
				return
			}
			var v groupValue
			if json.Unmarshal(r.Value, &v) == nil {
				get(k.Group).restore(&v)
			}
		}
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
			g.completeTxn(end.pid, end.commit)
		}
	}
	s.lateMarkers = nil
	for id, g := range groups {
		if len(g.members) == 0 && len(g.offsets) == 0 && len(g.txnOffsets) == 0 && !g.known {
			continue
		}
		g.known = true
		s.groups[id] = g
		for _, m := range g.members {
			s.resetSession(g, m)
		}
	}
	s.loading = false
	s.c.cfg.Logger.Info("loaded group coordinator partition", "partition", s.partition, "epoch", s.epoch,
		"groups", len(s.groups), "records", n, "took", s.c.cfg.Clock.Now().Sub(start))
}

// unload drops every group: parked requests get NOT_COORDINATOR and timers
// go quiet. Caller may hold c.mu.
func (s *shard) unload() {
	s.cancel()
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
func (s *shard) write(ctx context.Context, recs []Record) (int64, *kerr.Error) {
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
func (s *shard) writeBackground(recs []Record) {
	s.c.bgMu.Lock()
	closed := s.c.bgClosed
	if !closed {
		s.c.wg.Add(1)
	}
	s.c.bgMu.Unlock()
	if closed {
		return
	}
	go func() {
		defer s.c.wg.Done()
		if _, e := s.write(s.ctx, recs); e != nil {
			s.c.cfg.Logger.Warn("persisting group metadata", "partition", s.partition, "err", e)
		}
	}()
}

// after runs f under the shard lock after d, unless the shard is unloaded
// by then.
func (s *shard) after(d time.Duration, f func()) Timer {
	return s.c.cfg.Clock.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.unlock()
		if s.unloaded {
			return
		}
		f()
	})
}
