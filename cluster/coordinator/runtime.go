// Package coordinator is the runtime the embedded cluster's coordinators of
// internal topics share: the group coordinator (__consumer_offsets), the
// transaction coordinator (__transaction_state), and the share-group
// coordinator to come (KIP-932, __share_group_state).
//
// It follows the split of Kafka's group-coordinator module (Kafka 3.6+):
// CoordinatorRuntime owns the partitions of the internal topic this broker
// leads and their lifecycle, and a CoordinatorShard is one partition's state
// machine. Here Runtime is the first: it watches leadership of the topic's
// partitions, makes a Shard when this broker becomes a partition's leader
// (one per leader epoch), loads it on its own goroutine, unloads it when the
// leadership moves, and routes a key to its shard by Kafka's partition
// function. A coordinator package (group, txn) keeps only its Shard: its
// state, its records, its requests. In Kafka the group and share
// coordinators run on that runtime (GroupCoordinatorShard,
// ShareCoordinatorShard) while the transaction coordinator keeps its
// partitions in TransactionStateManager; here the transaction coordinator
// shares the runtime too, its shard set being the same. Unlike Kafka's
// runtime this one does not serialize a shard's operations on an event loop:
// a shard guards its state with its own lock, and the runtime only asks it
// for its State.
//
// The package also owns what every coordinator needs of its topic: Log (this
// broker's replica of one partition), Record, Clock, PartitionFor.
package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/faultpoint"
	"gregor/cluster/invariant"
)

// Topic is a coordinator's internal topic as this broker sees it.
type Topic interface {
	// Partitions is the topic's partition count, 0 while the topic does not
	// exist.
	Partitions() int32
	// Log is this broker's replica of a partition, nil when it hosts none.
	Log(partition int32) Log
}

// Shard is one partition's state machine in one leader epoch (Kafka's
// CoordinatorShard). It starts Loading.
type Shard interface {
	// Load replays the shard's log, then serves (State becomes Loaded). It
	// runs once, on its own goroutine; it ends when the shard's context
	// ends (an unload, Close), so Close never waits on a replay. A load that
	// fails stays Loading: clients keep getting COORDINATOR_LOAD_IN_PROGRESS
	// until the next leadership change makes a new shard.
	Load()
	// Unload drops the shard's state (parked requests fail, timers go
	// quiet); the shard's context has ended already. The runtime holds its
	// lock: Unload takes only the shard's own lock.
	Unload()
	// State is where the shard is in its life, read under the shard's lock.
	State() State
}

// State is a shard's place in its life.
type State int8

const (
	// Loading: the partition is being replayed; requests get
	// COORDINATOR_LOAD_IN_PROGRESS.
	Loading State = iota
	// Loaded: the shard serves.
	Loaded
	// Unloaded: the leadership moved; requests get NOT_COORDINATOR.
	Unloaded
)

// StateOf is the State of a shard that keeps the two flags Kafka's
// coordinators keep: loading (set from creation until its load succeeds)
// and unloaded (set once, at Unload; it wins over loading, as a load that
// an unload interrupted never serves).
func StateOf(loading, unloaded bool) State {
	switch {
	case unloaded:
		return Unloaded
	case loading:
		return Loading
	}
	return Loaded
}

// NewShard makes the shard of a partition this broker leads in epoch.
// ctx ends when the shard is unloaded: its load and writes stop then.
type NewShard[S Shard] func(ctx context.Context, partition, epoch int32, log Log) S

// Config tunes the runtime.
type Config struct {
	// Name says which coordinator this is in logs ("group coordinator").
	Name string
	// Topic is the internal topic's name, for the fault points' attributes.
	Topic string
	// PollEvery is how often Start's loop looks for leadership changes.
	PollEvery time.Duration
	Logger    *slog.Logger
	// Node is this broker's id, for the fault points' attributes (a
	// simulation holds several brokers in one process).
	Node int32
}

// Runtime is the shard set of one internal topic on one broker (Kafka's
// CoordinatorRuntime).
type Runtime[S Shard] struct {
	cfg      Config
	topic    Topic
	newShard NewShard[S]

	// mu is taken before any shard's lock (Poll unloads under it, Loaded
	// reads states under it), never after.
	mu sync.Mutex
	// shards are the partitions this broker leads, by partition.
	// Invariant: a shard is present iff its Log reported leadership in the
	// shard's epoch at the last poll. Checked in part (invariants: none past
	// the partition count, none after Close); the rest is not:
	// leadership is the replica's, it changes between polls, and Poll is the
	// one writer, computing the map from exactly that report.
	shards map[int32]*held[S]
	closed bool

	stop chan struct{}
	// bgMu guards bgClosed. It is not mu: shards start background work
	// under their own lock, which is taken after mu.
	bgMu sync.Mutex
	// bgClosed: Close has begun; no goroutine starts after it, so wg.Wait
	// ends. Invariant: closed before bgClosed (Close's order), so Poll,
	// which runs only while !closed under mu, always gets its load started
	// (checked there).
	bgClosed bool
	// wg counts the loops, the loads and the shards' background work; all
	// end on Close.
	wg sync.WaitGroup
}

// held is a shard with what the runtime keeps of it.
type held[S Shard] struct {
	shard  S
	epoch  int32              // the leader epoch it was made for
	cancel context.CancelFunc // ends the shard's context
}

// New returns the runtime of topic; Start begins watching leadership.
func New[S Shard](cfg Config, topic Topic, newShard NewShard[S]) *Runtime[S] {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runtime[S]{cfg: cfg, topic: topic, newShard: newShard, shards: map[int32]*held[S]{}, stop: make(chan struct{})}
}

// Start polls leadership every PollEvery until Close.
func (r *Runtime[S]) Start() { r.Every(r.cfg.PollEvery, r.Poll) }

// Every runs f every d on its own goroutine until Close (a coordinator's
// periodic work beside the poll, such as aborting timed-out transactions).
func (r *Runtime[S]) Every(d time.Duration, f func()) {
	r.Background(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				f()
			}
		}
	})
}

// Background runs f on its own goroutine, counted for Close, unless Close
// has begun (then f never runs). f must end once its shard's context or
// the runtime stops.
func (r *Runtime[S]) Background(f func()) { r.goCounted(f) }

// goCounted is Background reporting whether f was started.
func (r *Runtime[S]) goCounted(f func()) bool {
	r.bgMu.Lock()
	defer r.bgMu.Unlock()
	if r.bgClosed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
	return true
}

// Close unloads every shard (waiting requests get NOT_COORDINATOR) and
// waits for the runtime's goroutines.
func (r *Runtime[S]) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.stop)
	for i := range r.shards {
		r.unloadLocked(i)
	}
	r.check(0)
	r.mu.Unlock()
	r.bgMu.Lock()
	r.bgClosed = true
	r.bgMu.Unlock()
	r.wg.Wait()
}

// Poll loads the shards this broker now leads and unloads the others
// (Kafka's onElection / onResignation).
func (r *Runtime[S]) Poll() {
	n := r.topic.Partitions()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for i := int32(0); i < n; i++ {
		var epoch int32
		lead := false
		l := r.topic.Log(i)
		if l != nil {
			epoch, lead = l.LeaderEpoch()
		}
		h := r.shards[i]
		if h != nil && (!lead || h.epoch != epoch) {
			r.cfg.Logger.Info("resigned as "+r.cfg.Name, "partition", i, "coordinator_epoch", h.epoch)
			r.unloadLocked(i)
			h = nil
		}
		if lead && h == nil {
			r.cfg.Logger.Info("elected "+r.cfg.Name, "partition", i, "coordinator_epoch", epoch)
			ctx, cancel := context.WithCancel(context.Background())
			s := r.newShard(ctx, i, epoch, l)
			r.shards[i] = &held[S]{shard: s, epoch: epoch, cancel: cancel}
			faultpoint.Hit(faultpoint.CoordinatorLoadStart, faultpoint.Attrs{Node: r.cfg.Node, Topic: r.cfg.Topic, Partition: i})
			if !r.goCounted(func() {
				s.Load()
				faultpoint.Hit(faultpoint.CoordinatorLoadDone, faultpoint.Attrs{Node: r.cfg.Node, Topic: r.cfg.Topic, Partition: i})
			}) {
				// bgClosed before closed: a shard held, never loaded, that
				// Close will not wait for.
				invariant.Must(r.cfg.Name+" runtime", fmt.Errorf("partition %d: load refused while open", i))
			}
		}
	}
	for i := range r.shards {
		if i >= n {
			r.unloadLocked(i) // the topic was deleted (or recreated smaller)
		}
	}
	r.check(n)
}

// unloadLocked ends a shard's context, then unloads it, and forgets it.
// Context first: a load or write in flight stops before the state goes.
// Caller holds mu.
func (r *Runtime[S]) unloadLocked(partition int32) {
	h := r.shards[partition]
	h.cancel()
	h.shard.Unload()
	delete(r.shards, partition)
}

// ShardFor finds the loaded shard of a key, or the error a client should
// get: COORDINATOR_NOT_AVAILABLE (no topic yet, or closing), NOT_COORDINATOR
// (another broker leads its partition), COORDINATOR_LOAD_IN_PROGRESS.
func (r *Runtime[S]) ShardFor(key string) (S, *kerr.Error) {
	var none S
	n := r.topic.Partitions()
	if n <= 0 {
		return none, kerr.CoordinatorNotAvailable
	}
	r.mu.Lock()
	h := r.shards[PartitionFor(key, n)]
	closed := r.closed
	r.mu.Unlock()
	switch {
	case closed:
		return none, kerr.CoordinatorNotAvailable
	case h == nil:
		return none, kerr.NotCoordinator
	}
	switch h.shard.State() {
	case Unloaded:
		return none, kerr.NotCoordinator
	case Loading:
		return none, kerr.CoordinatorLoadInProgress
	}
	return h.shard, nil
}

// Shard is the shard of a partition whatever its state, if this broker
// leads the partition.
func (r *Runtime[S]) Shard(partition int32) (S, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.shards[partition]
	if h == nil {
		var none S
		return none, false
	}
	return h.shard, true
}

// Loaded returns the shards that serve requests, and whether any is still
// loading.
func (r *Runtime[S]) Loaded() (out []S, loading bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.shards {
		switch h.shard.State() {
		case Loading:
			loading = true
		case Loaded:
			out = append(out, h.shard)
		}
	}
	return out, loading
}

// check panics on a broken invariant of the shard set. It is cheap (a walk
// of at most the partitions' keys), so it runs always, as the invariant
// package asks of cheap checks. partitions is the count the caller just
// polled. Caller holds mu.
func (r *Runtime[S]) check(partitions int32) {
	if err := r.invariants(partitions); err != nil {
		invariant.Must(r.cfg.Name+" runtime", err) // the name is built only for a failure
	}
}

// invariants returns the first broken invariant of the shard set: none
// held after Close, none past the partition count. Caller holds mu.
func (r *Runtime[S]) invariants(partitions int32) error {
	if r.closed && len(r.shards) > 0 {
		return fmt.Errorf("closed, yet holding %d shards", len(r.shards))
	}
	for i := range r.shards {
		if i < 0 || i >= partitions {
			return fmt.Errorf("holding partition %d of %d", i, partitions)
		}
	}
	return nil
}
