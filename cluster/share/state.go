package share

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
)

// Record states as Kafka's persister stores them (SharePartition's
// RecordState: AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4). An
// acquired record is persisted as available: its lock is the leader's and
// dies with it.
const (
	stateAvailable    int8 = 0
	stateAcquired     int8 = 1
	stateAcknowledged int8 = 2
	stateArchived     int8 = 4
)

// StateBatch is a run of in-flight offsets with one state and delivery
// count (Kafka's PersisterStateBatch).
type StateBatch struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	State int8  `json:"state"`
	Count int16 `json:"count"`
}

// PartitionState is a share partition's durable state (Kafka's
// ShareSnapshotValue): StartOffset is the share-partition start offset
// (SPSO), -1 while uninitialized; StateEpoch is bumped by every
// (re)initialization (AlterShareGroupOffsets), fencing writers of the old
// state; LeaderEpoch is the partition leader epoch of the last writer or
// reader, fencing older leaders.
type PartitionState struct {
	StateEpoch  int32        `json:"state_epoch"`
	LeaderEpoch int32        `json:"leader_epoch"`
	StartOffset int64        `json:"start"`
	Batches     []StateBatch `json:"batches,omitempty"`
}

// StateKey names a share partition: Kafka's SharePartitionKey, placed on
// __share_group_state by "group:topicId:partition".
type StateKey struct {
	Group     string   `json:"g"`
	TopicID   [16]byte `json:"t"`
	Partition int32    `json:"p"`
}

// CoordinatorKey is the key FindCoordinator (key type SHARE) and the
// partition function take for k (ShareGroupHelper's groupId:topicId:partition).
func (k StateKey) CoordinatorKey() string {
	return fmt.Sprintf("%s:%s:%d", k.Group, uuidString(k.TopicID), k.Partition)
}

// ParseCoordinatorKey is CoordinatorKey's inverse, as Kafka's
// SharePartitionKey.getInstance validates a FindCoordinator key of type
// SHARE: three ':'-separated parts, a topic id (Uuid's base64 form) and a
// partition number.
func ParseCoordinatorKey(s string) (StateKey, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || parts[0] == "" {
		return StateKey{}, fmt.Errorf("share coordinator key %q: want groupId:topicId:partition", s)
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(id) != 16 {
		return StateKey{}, fmt.Errorf("share coordinator key %q: topic id %q is not a Uuid", s, parts[1])
	}
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || p < 0 {
		return StateKey{}, fmt.Errorf("share coordinator key %q: partition %q", s, parts[2])
	}
	k := StateKey{Group: parts[0], Partition: int32(p)}
	copy(k.TopicID[:], id)
	return k, nil
}

// StateCoordinator is the share coordinator: the __share_group_state
// partitions this broker leads, each a shard of the latest state of its
// share partitions (Kafka's ShareCoordinatorShard).
type StateCoordinator struct {
	rt *coordinator.Runtime[*stateShard]
}

// StateConfig configures the share coordinator.
type StateConfig = coordinator.Config

// NewStateCoordinator returns a share coordinator over topic; Start begins
// watching leadership.
func NewStateCoordinator(cfg StateConfig, topic coordinator.Topic) *StateCoordinator {
	if cfg.Name == "" {
		cfg.Name = "share coordinator"
	}
	c := &StateCoordinator{}
	c.rt = coordinator.New(cfg, topic, func(ctx context.Context, partition, epoch int32, l coordinator.Log) *stateShard {
		return &stateShard{ctx: ctx, partition: partition, log: l, epoch: epoch, loading: true, states: map[StateKey]PartitionState{}, wmu: make(chan struct{}, 1)}
	})
	return c
}

// Start polls leadership until Close.
func (c *StateCoordinator) Start() { c.rt.Start() }

// Close unloads every shard and waits for the coordinator's goroutines.
func (c *StateCoordinator) Close() { c.rt.Close() }

// Poll loads the shards this broker now leads and unloads the others.
func (c *StateCoordinator) Poll() { c.rt.Poll() }

type stateShard struct {
	ctx       context.Context
	partition int32
	epoch     int32
	log       coordinator.Log
	// wmu serializes writes (a channel lock: held across the replicated
	// append, which blocks). mu guards the fields below and is never held
	// across a wait.
	wmu               chan struct{}
	mu                sync.Mutex
	loading, unloaded bool
	states            map[StateKey]PartitionState
}

func (s *stateShard) State() coordinator.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return coordinator.StateOf(s.loading, s.unloaded)
}

func (s *stateShard) Unload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unloaded = true
	s.states = map[StateKey]PartitionState{}
}

// Load replays the partition: the last record of a key is its state, a
// tombstone deletes it (Kafka's ShareCoordinatorShard.replay of
// ShareSnapshot records).
func (s *stateShard) Load() {
	states := map[StateKey]PartitionState{}
	err := s.log.Replay(s.ctx, func(_ int64, r coordinator.Record) {
		var k StateKey
		if r.Txn != nil || json.Unmarshal(r.Key, &k) != nil {
			return
		}
		if r.Value == nil {
			delete(states, k)
			return
		}
		var v PartitionState
		if json.Unmarshal(r.Value, &v) == nil {
			states[k] = v
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unloaded || err != nil {
		return
	}
	s.states, s.loading = states, false
}

// shardFor is the loaded shard of k, or the error the caller gets.
func (c *StateCoordinator) shardFor(k StateKey) (*stateShard, *kerr.Error) {
	s, e := c.rt.ShardFor(k.CoordinatorKey())
	if e != nil {
		return nil, e
	}
	return s, nil
}

// Read answers ReadShareGroupState: the state of k, StartOffset -1 when
// uninitialized. A reader with a newer leader epoch records it first, so a
// deposed leader's later writes are fenced (Kafka's
// ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch).
func (c *StateCoordinator) Read(ctx context.Context, k StateKey, leaderEpoch int32) (PartitionState, *kerr.Error) {
	s, e := c.shardFor(k)
	if e != nil {
		return PartitionState{}, e
	}
	return s.update(ctx, k, func(cur PartitionState, ok bool) (PartitionState, bool, *kerr.Error) {
		if !ok {
			return PartitionState{StartOffset: -1, LeaderEpoch: -1}, false, nil
		}
		if leaderEpoch < cur.LeaderEpoch {
			return cur, false, kerr.FencedLeaderEpoch
		}
		if leaderEpoch == cur.LeaderEpoch {
			return cur, false, nil
		}
		cur.LeaderEpoch = leaderEpoch
		return cur, true, nil
	})
}

// Write answers WriteShareGroupState: the partition leader's whole
// in-flight state, fenced by state epoch (an initialization since) and
// leader epoch (a newer leader), written to the log before it is answered.
func (c *StateCoordinator) Write(ctx context.Context, k StateKey, v PartitionState) *kerr.Error {
	s, e := c.shardFor(k)
	if e != nil {
		return e
	}
	_, e = s.update(ctx, k, func(cur PartitionState, ok bool) (PartitionState, bool, *kerr.Error) {
		if ok && v.StateEpoch < cur.StateEpoch {
			return cur, false, kerr.FencedStateEpoch
		}
		if ok && v.LeaderEpoch < cur.LeaderEpoch {
			return cur, false, kerr.FencedLeaderEpoch
		}
		return v, true, nil
	})
	return e
}

// Initialize answers InitializeShareGroupState (AlterShareGroupOffsets'
// path): the state restarts at start with a new state epoch, no in-flight
// records, fencing the leader's cached state.
func (c *StateCoordinator) Initialize(ctx context.Context, k StateKey, start int64) *kerr.Error {
	s, e := c.shardFor(k)
	if e != nil {
		return e
	}
	_, e = s.update(ctx, k, func(cur PartitionState, ok bool) (PartitionState, bool, *kerr.Error) {
		next := PartitionState{StateEpoch: cur.StateEpoch + 1, LeaderEpoch: cur.LeaderEpoch, StartOffset: start}
		if !ok {
			next.StateEpoch, next.LeaderEpoch = 1, -1
		}
		return next, true, nil
	})
	return e
}

// Delete answers DeleteShareGroupState: a tombstone for k.
func (c *StateCoordinator) Delete(ctx context.Context, k StateKey) *kerr.Error {
	s, e := c.shardFor(k)
	if e != nil {
		return e
	}
	if err := s.lockWrite(ctx); err != nil {
		return err
	}
	defer s.unlockWrite()
	if _, err := s.log.Append(ctx, s.epoch, []coordinator.Record{{Key: mustJSON(k)}}); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.states, k)
	s.mu.Unlock()
	return nil
}

func (s *stateShard) lockWrite(ctx context.Context) *kerr.Error {
	select {
	case s.wmu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return kerr.RequestTimedOut
	case <-s.ctx.Done():
		return kerr.NotCoordinator
	}
}

func (s *stateShard) unlockWrite() { <-s.wmu }

// update applies f to k's state under the shard's write lock; when f says
// so, the new state is appended (acks=all) before it is kept or answered.
func (s *stateShard) update(ctx context.Context, k StateKey, f func(PartitionState, bool) (PartitionState, bool, *kerr.Error)) (PartitionState, *kerr.Error) {
	if err := s.lockWrite(ctx); err != nil {
		return PartitionState{}, err
	}
	defer s.unlockWrite()
	s.mu.Lock()
	if s.unloaded {
		s.mu.Unlock()
		return PartitionState{}, kerr.NotCoordinator
	}
	cur, ok := s.states[k]
	s.mu.Unlock()
	next, write, e := f(cur, ok)
	if e != nil || !write {
		return next, e
	}
	if _, err := s.log.Append(ctx, s.epoch, []coordinator.Record{{Key: mustJSON(k), Value: mustJSON(next)}}); err != nil {
		return PartitionState{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unloaded {
		return PartitionState{}, kerr.NotCoordinator
	}
	s.states[k] = next
	return next, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("share: encoding %T: %v", v, err)) // plain structs only
	}
	return b
}

// uuidString is a topic id as Kafka prints it (Uuid.toString: URL-safe
// base64 without padding).
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
