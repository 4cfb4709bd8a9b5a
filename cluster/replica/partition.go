// Package replica holds the state of one partition replica on one broker:
// its log, its role (leader or follower) under a leader epoch, the ISR as the
// controller last published it, the high watermark, and on a leader each
// follower's fetch progress. It decides when an acks=all produce is
// acknowledged, what a consumer may read, and when the ISR must shrink or
// grow; the controller carries out ISR changes (AlterPartition).
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/faultpoint"
	"gregor/cluster/invariant"
	"gregor/cluster/meta"
	"gregor/cluster/producer"
	"gregor/cluster/storage"
)

// Bugs are planted bugs (DESIGN section 6), each off by default. The harness
// must catch each one as a failed run.
type Bugs struct {
	// AckBeforeISR answers acks=all once the leader has appended, before the
	// ISR has the batch.
	AckBeforeISR bool
	// HWPastLaggingISR advances the HW to the leader's LEO, ignoring ISR
	// members that have not fetched that far.
	HWPastLaggingISR bool
	// TruncateToHW makes a follower truncate to its own HW when it starts
	// following, instead of asking the leader by leader epoch (pre-KIP-101).
	TruncateToHW bool
	// SkipMinISR accepts acks=all writes whatever the ISR size.
	SkipMinISR bool
	// LSOPastOpenTxn answers read_committed up to the HW, past the first
	// offset of open transactions: their records are read before the commit
	// (or abort) is known.
	LSOPastOpenTxn bool
	// NoZombieFencing accepts a batch of a producer epoch older than the
	// partition has seen: a fenced producer keeps writing.
	NoZombieFencing bool
}

// Config is what every partition on a broker shares.
type Config struct {
	NodeID int32
	// ReplicaLagMax is replica.lag.time.max.ms: a follower that has not been
	// caught up to the leader's LEO for this long leaves the ISR.
	ReplicaLagMax time.Duration
	Bugs          Bugs
	Logger        *slog.Logger
	// AlterISR asks the controller to set the ISR; the result comes back as a
	// metadata update (Update). Called without the partition lock held, on
	// its own goroutine. Nil on a single broker.
	AlterISR func(ctx context.Context, p meta.Partition, newISR []int32)
	// IsrEligible says whether a replica's broker may join the ISR: it is
	// registered, unfenced and not shutting down (Kafka's
	// isReplicaIsrEligible, KIP-841). The HW waits for a caught-up follower
	// outside the ISR only if so. Called with the partition lock held: it
	// must not block or take a lock held across partition calls. Nil: every
	// replica is eligible.
	IsrEligible func(id int32) bool
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// Stats counts ISR changes seen by leaders (IsrShrinksPerSec,
	// IsrExpandsPerSec). May be nil.
	Stats *Stats
	// LogDirFailure is told of an error of the log that means its disk
	// failed (storage.IsLogDirFailure): Kafka's
	// LogDirFailureChannel.maybeAddOfflineLogDir. Called without the
	// partition lock's release, so it must not block. May be nil.
	LogDirFailure func(err error)
}

// Stats are broker-wide replication counters.
type Stats struct {
	ISRShrinks atomic.Int64
	ISRExpands atomic.Int64
}

type follower struct {
	// leo is the follower's log end offset: the offset it last fetched from.
	leo int64
	// lastFetch is when it last fetched; leaderLEOAtLastFetch the leader's
	// LEO then. A follower is caught up at a fetch if it fetched from the
	// leader's LEO of that moment, or of its previous fetch (Kafka's rule:
	// a follower that keeps up with a moving LEO is never "behind").
	lastFetch            time.Time
	leaderLEOAtLastFetch int64
	lastCaughtUp         time.Time
}

// Partition is one replica of one partition.
type Partition struct {
	Topic string
	Index int32
	cfg   *Config

	mu  sync.Mutex
	log *storage.Log
	// state is the partition as the controller last published it.
	state meta.Partition
	// minISR is the topic's min.insync.replicas. Invariant: >= 1 (Update
	// asserts it).
	minISR int
	// Invariant: 0 <= hw <= log.LEO(). On the leader hw never decreases
	// while it stays leader in one epoch (hwMark is what checks it).
	hw     int64
	hwMark hwMark
	// followers is the leader's view of each other replica (nil on followers).
	// Invariant: on the leader, one entry per other replica.
	followers map[int32]*follower
	// pendingISR is an ISR the leader has asked for and not yet seen
	// published. Invariant: nil off the leader; it keeps the leader and
	// stays within the replicas. While an expansion is pending the HW counts the new member
	// too (Kafka's "maximal ISR"), so it can only be more conservative.
	pendingISR []int32
	// epochStart is the leader's LEO when it took its current leader epoch
	// (Kafka's leaderEpochStartOffsetOpt): until the HW reaches it, the HW
	// is the one this replica learned as a follower and may trail records
	// the previous leader acknowledged (KIP-207). Invariant: -1 off the
	// leader.
	epochStart int64
	producers  *producer.State
	// changed is closed (and replaced) whenever LEO, HW or the role changes:
	// one channel shared by every waiter, so waiting allocates nothing per
	// waiter and nothing piles up while no change happens.
	changed chan struct{}
	closed  bool
}

// Open opens the partition's log and rebuilds its derived state.
func Open(cfg *Config, topic string, index int32, log *storage.Log) (*Partition, error) {
	p := &Partition{Topic: topic, Index: index, cfg: cfg, log: log, minISR: 1, epochStart: -1, changed: make(chan struct{})}
	p.state = meta.Partition{Topic: topic, Index: index, Leader: meta.NoLeader, LeaderEpoch: -1}
	p.hw = log.RecoveredHW()
	if err := p.rebuildProducers(); err != nil {
		return nil, err
	}
	return p, nil
}

// rebuildProducers derives the producer table from the log, as Kafka's
// ProducerStateManager does when it has no snapshot: every data batch and
// every marker, in offset order. Caller holds mu (or is opening).
func (p *Partition) rebuildProducers() error {
	p.producers = producer.New()
	return p.log.ScanProducerBatches(p.log.StartOffset(), func(h storage.BatchHeader, m *storage.Marker) bool {
		p.recordBatch(h, m)
		return true
	})
}

// recordBatch notes an appended batch in the producer table: a marker
// completes its producer's transaction here, a data batch with a producer
// id extends its producer's state. Caller holds mu.
func (p *Partition) recordBatch(h storage.BatchHeader, m *storage.Marker) {
	switch {
	case m != nil:
		if t := p.producers.RecordMarker(h.ProducerID, h.ProducerEpoch, *m, h.BaseOffset); t != nil {
			p.logger().Debug("transaction completed", "producer", t.ProducerID, "first", t.FirstOffset, "marker", t.LastOffset, "aborted", t.Aborted)
		}
	case h.ProducerID != producer.NoProducerID:
		p.producers.RecordData(producer.DataOf(h), p.writer(), h.BaseOffset, h.LastOffset())
	}
}

// writer is who wrote this partition's producer batches, which a follower
// and a rebuild cannot tell from the batch: the coordinators alone write
// the internal topics (AppendAsLeader refuses clients there), clients alone
// the others.
func (p *Partition) writer() producer.Origin {
	if meta.IsInternal(p.Topic) {
		return producer.Coordinator
	}
	return producer.Client
}

func (p *Partition) now() time.Time {
	if p.cfg.Now != nil {
		return p.cfg.Now()
	}
	return time.Now()
}

func (p *Partition) logger() *slog.Logger {
	l := p.cfg.Logger
	if l == nil {
		l = slog.Default()
	}
	return l.With("topic", p.Topic, "partition", p.Index)
}

// wake releases everyone waiting for a change. Caller holds mu.
func (p *Partition) wake() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// watch returns a channel closed at the next change. Caller holds mu.
func (p *Partition) watch() <-chan struct{} { return p.changed }

// Watch returns a channel closed at the next change of LEO, HW or role, for
// fetch long polls spanning several partitions.
func (p *Partition) Watch() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.watch()
}

// Update applies the controller's published state for this partition: a new
// leader epoch makes this replica leader or follower; a new partition epoch
// with the same leader epoch is an ISR change.
//
// minISR is the topic's min.insync.replicas as the broker resolved it. It is
// at least 1: every layer it resolves from is validated where it enters
// (cluster.Config.Validate, meta.ValidateTopicConfigs for CreateTopics and
// AlterConfigs, the controller's check of a dynamic broker config), so a
// smaller value here is a bug, asserted, never a setting to correct.
func (p *Partition) Update(st meta.Partition, minISR int) {
	if minISR < 1 {
		invariant.Must(fmt.Sprintf("replica %s/%d on node %d", p.Topic, p.Index, p.cfg.NodeID),
			fmt.Errorf("min.insync.replicas %d < 1 reached the replica past the validation of every config layer", minISR))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.minISR = minISR
	old := p.state
	if st.LeaderEpoch < old.LeaderEpoch || (st.LeaderEpoch == old.LeaderEpoch && st.PartitionEpoch < old.PartitionEpoch) {
		return // stale
	}
	p.state = st
	me := p.cfg.NodeID
	if s := p.cfg.Stats; s != nil && st.Leader == me && old.Leader == me && st.LeaderEpoch == old.LeaderEpoch {
		switch {
		case len(st.ISR) < len(old.ISR):
			s.ISRShrinks.Add(1)
		case len(st.ISR) > len(old.ISR):
			s.ISRExpands.Add(1)
		}
	}
	if st.Leader == me && old.Leader == me && st.LeaderEpoch == old.LeaderEpoch {
		p.hitISRChange(old.ISR, st.ISR)
	}
	switch {
	case st.Leader == me && (old.Leader != me || st.LeaderEpoch != old.LeaderEpoch):
		p.becomeLeader()
	case st.Leader != me && old.Leader == me:
		p.followers = nil
		p.pendingISR = nil
		p.epochStart = -1
	case st.Leader == me:
		p.syncFollowers(p.now())
	}
	// A newer partition state from the controller is the committed one:
	// a pending ISR change either is in it or was overtaken (the request
	// carried the old partition epoch, which the controller refuses), as
	// Kafka's Partition.makeLeader replaces a pending state on every newer
	// partition epoch. A reassignment may have removed a replica the
	// pending ISR named.
	if st.LeaderEpoch != old.LeaderEpoch || st.PartitionEpoch != old.PartitionEpoch ||
		(p.pendingISR != nil && slices.Equal(sorted(p.pendingISR), sorted(st.ISR))) {
		p.pendingISR = nil
	}
	if st.Leader == me {
		p.maybeAdvanceHW()
	}
	p.checkInvariants()
	p.wake()
}

// becomeLeader starts a new leader epoch at the current LEO. Caller holds mu.
func (p *Partition) becomeLeader() {
	now := p.now()
	p.followers = make(map[int32]*follower)
	for _, r := range p.state.Replicas {
		if r == p.cfg.NodeID {
			continue
		}
		// A new leader does not know where followers are. It gives the
		// ISR's members a full lag window to show up, and the others none,
		// so that one left out of the ISR does not hold the HW back
		// (Kafka's Replica.resetReplicaState for a new leader).
		f := &follower{leo: -1, leaderLEOAtLastFetch: -1}
		if meta.Contains(p.state.ISR, r) {
			f.lastCaughtUp = now
		}
		p.followers[r] = f
	}
	p.pendingISR = nil
	p.epochStart = p.log.LEO()
	if err := p.log.AssignEpoch(p.state.LeaderEpoch, p.log.LEO()); err != nil {
		p.logger().Error("assign leader epoch", "epoch", p.state.LeaderEpoch, "err", err)
	}
	p.hit(faultpoint.LeaderEpochBumped)
	p.logger().Info("became leader", "epoch", p.state.LeaderEpoch, "isr", p.state.ISR, "leo", p.log.LEO(), "hw", p.hw)
	p.hit(faultpoint.LeaderElected)
}

// hit is the fault point pt reached on this replica (cluster/faultpoint).
func (p *Partition) hit(pt faultpoint.Point) { p.hitAbout(pt, 0) }

// hitAbout is the fault point pt reached on this replica about broker
// about (faultpoint.Attrs.Broker; 0: none).
func (p *Partition) hitAbout(pt faultpoint.Point, about int32) {
	faultpoint.Hit(pt, faultpoint.Attrs{Node: p.cfg.NodeID, Topic: p.Topic, Partition: p.Index, Broker: about})
}

// hitISRChange is the leader applying a published ISR change from was to
// isr: isr-expand-applied about each follower it added, isr-shrink-applied
// about each one it dropped (an expansion adds one follower at a time:
// requestISR). Caller holds mu.
func (p *Partition) hitISRChange(was, isr []int32) {
	for _, r := range isr {
		if !meta.Contains(was, r) {
			p.hitAbout(faultpoint.ISRExpandApplied, r)
		}
	}
	for _, r := range was {
		if !meta.Contains(isr, r) {
			p.hitAbout(faultpoint.ISRShrinkApplied, r)
		}
	}
}

// MinISR is the topic's min.insync.replicas as last published.
func (p *Partition) MinISR() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.minISR
}

// State returns the published partition state.
func (p *Partition) State() meta.Partition {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// IsLeader reports whether this replica leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.Leader == p.cfg.NodeID
}

// Offsets returns the log start offset, the high watermark and the LEO.
func (p *Partition) Offsets() (start, hw, leo int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.StartOffset(), p.hw, p.log.LEO()
}

// Log exposes the underlying log (for tests and describe tools).
func (p *Partition) Log() *storage.Log { return p.log }

// effectiveISR is the ISR the HW must respect: the published one, widened by a
// pending expansion. Caller holds mu.
func (p *Partition) effectiveISR() []int32 {
	isr := p.state.ISR
	for _, r := range p.pendingISR {
		if !meta.Contains(isr, r) {
			isr = append(slices.Clone(isr), r)
		}
	}
	return isr
}

// maybeAdvanceHW moves the HW to the minimum LEO over the ISR. Caller holds mu
// and is the leader.
func (p *Partition) maybeAdvanceHW() {
	leo := p.log.LEO()
	newHW, bound, boundLEO := leo, int32(0), int64(0)
	if !p.cfg.Bugs.HWPastLaggingISR {
		for _, r := range p.effectiveISR() {
			if r == p.cfg.NodeID {
				continue
			}
			f := p.followers[r]
			if f == nil || f.leo < 0 {
				newHW = min(newHW, p.hw) // unknown position: hold the HW
				continue
			}
			newHW = min(newHW, f.leo)
			if bound == 0 || f.leo < boundLEO {
				bound, boundLEO = r, f.leo
			}
		}
	}
	newHW = p.waitForJoiners(newHW, leo)
	if newHW > p.hw {
		p.hw = newHW
		p.checkInvariants()
		p.wake()
		p.hitAbout(faultpoint.HWAdvanced, bound) // about the slowest ISR follower, whose fetch moved it
	}
}

// waitForJoiners holds the HW at the LEO of every follower outside the ISR
// that is caught up (its last fetch reached the LEO, or it did within
// replica.lag.time.max.ms) and whose broker may join the ISR, as Kafka's
// Partition.maybeIncrementLeaderHW does (shouldWaitForReplicaToJoinIsr).
// Without it a follower rejoining under a steady write load never reaches
// an HW that, with the ISR down to the leader, runs ahead with every append:
// the ISR would stay the leader alone for as long as producers write (make
// check's runs waited out a minute's recovery timeout so, docs/MEASUREMENTS.md
// 2.00). Holding the HW back is safe: waiting for more replicas only makes
// the HW more conservative. Caller holds mu and is the leader.
func (p *Partition) waitForJoiners(hw, leo int64) int64 {
	if p.cfg.Bugs.HWPastLaggingISR {
		return hw
	}
	isr := p.effectiveISR()
	now := p.now()
	for id, f := range p.followers {
		if f.leo < 0 || f.leo >= hw || meta.Contains(isr, id) || f.lastCaughtUp.IsZero() {
			continue
		}
		caughtUp := f.leo == leo || now.Sub(f.lastCaughtUp) <= p.cfg.ReplicaLagMax
		if caughtUp && (p.cfg.IsrEligible == nil || p.cfg.IsrEligible(id)) {
			hw = f.leo
		}
	}
	return hw
}

// AppendResult is the outcome of a leader append.
type AppendResult struct {
	// BaseOffset is the first offset written (or, for a retried duplicate,
	// first written the first time).
	BaseOffset int64
	// EndOffset is one past the last offset written: acks=all waits for the
	// HW to reach it.
	EndOffset int64
	// Epoch is the leader epoch the batch was appended in: acks=all fails
	// if leadership moves on before the HW reaches EndOffset.
	Epoch int32
	// LogStart is the log start offset, which Produce responses carry.
	LogStart int64
	// LogAppendTime is the time the leader stamped the batches with
	// (AppendOptions.LogAppendTime), in Unix milliseconds; -1 for none.
	LogAppendTime int64
}

// AppendOptions qualify a leader append.
type AppendOptions struct {
	// Acks is -1 (all), 0 or 1; for acks=all the min ISR check happens
	// before anything is written.
	Acks int16
	// Origin says who writes and so how far producer state is checked
	// (client batches fully, a coordinator's by epoch only). Clients write
	// every topic but the internal ones, coordinators only those.
	Origin producer.Origin
	// Guard is the verification guard of a transactional batch whose
	// transaction the coordinator confirmed includes this partition
	// (BeginVerification); 0 for none.
	Guard uint64
	// LogAppendTime stamps the batches with the leader's wall clock
	// (message.timestamp.type=LogAppendTime).
	LogAppendTime bool
}

// AppendAsLeader validates the batches a producer sent, assigns offsets and
// the leader epoch, and appends them. records is modified in place (offsets,
// epoch); the caller must not reuse it.
func (p *Partition) AppendAsLeader(records []byte, opts AppendOptions) (AppendResult, *kerr.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.leaderAppendable(opts.Acks); e != nil {
		return AppendResult{}, e
	}
	if opts.Origin != p.writer() {
		// Kafka's ReplicaManager.appendToLocalLog: "Cannot append to
		// internal topic"; and a coordinator writes only its own topic.
		return AppendResult{}, kerr.InvalidTopicException
	}
	type item struct {
		h     storage.BatchHeader
		batch []byte
	}
	var items []item
	err := storage.ForEachBatch(records, func(h storage.BatchHeader, b []byte) error {
		items = append(items, item{h, b})
		return nil
	})
	if err != nil {
		return AppendResult{}, kerr.CorruptMessage
	}
	if len(items) == 0 {
		return AppendResult{}, kerr.InvalidRecord
	}
	for _, it := range items {
		// Only the coordinator writes markers (AppendMarker); a
		// transactional batch needs a producer (Kafka's LogValidator).
		if it.h.IsControl() || it.h.IsTransactional() && it.h.ProducerID == producer.NoProducerID {
			return AppendResult{}, kerr.InvalidRecord
		}
	}
	res := AppendResult{Epoch: p.state.LeaderEpoch, LogStart: p.log.StartOffset(), LogAppendTime: -1}
	// Idempotence: Kafka producers send one batch per partition per request,
	// so a request is either wholly a duplicate or wholly new.
	if len(items) == 1 {
		h := items[0].h
		v := p.producers.CheckData(producer.DataOf(h), opts.Origin, opts.Guard, producer.Lenience{AcceptStaleEpoch: p.cfg.Bugs.NoZombieFencing})
		if v.Err != nil {
			return AppendResult{}, v.Err
		}
		if v.Duplicate {
			res.BaseOffset, res.EndOffset = v.FirstOffset, v.LastOffset+1
			return res, nil
		}
	} else {
		for _, it := range items {
			if it.h.ProducerID != producer.NoProducerID {
				return AppendResult{}, kerr.InvalidRecord
			}
		}
	}
	next := p.log.LEO()
	res.BaseOffset = next
	// Offsets and epoch are assigned in place: records is the request's own
	// frame buffer, and neither field is covered by the batch CRC.
	for i, it := range items {
		storage.SetBaseOffset(it.batch, next)
		storage.SetPartitionLeaderEpoch(it.batch, p.state.LeaderEpoch)
		items[i].h.BaseOffset = next
		next += int64(it.h.LastOffsetDelta) + 1
	}
	if opts.LogAppendTime {
		res.LogAppendTime = p.now().UnixMilli()
		for i, it := range items {
			storage.SetLogAppendTime(it.batch, res.LogAppendTime)
			items[i].h.MaxTimestamp = res.LogAppendTime
		}
	}
	total := 0
	for _, it := range items {
		total += len(it.batch)
	}
	buf := records[:total] // ForEachBatch split records from its start
	if err := p.log.Append(buf); err != nil {
		p.logger().Error("append failed", "err", err)
		return AppendResult{}, p.storageErr(err)
	}
	for _, it := range items {
		p.recordBatch(it.h, nil)
	}
	res.EndOffset = next
	p.maybeAdvanceHW()
	p.checkInvariants()
	p.wake()
	return res, nil
}

// leaderAppendable is the check every leader append starts with. Caller
// holds mu.
func (p *Partition) leaderAppendable(acks int16) *kerr.Error {
	switch {
	case p.closed || p.state.Leader != p.cfg.NodeID:
		return kerr.NotLeaderForPartition
	case acks == -1 && !p.cfg.Bugs.SkipMinISR && len(p.state.ISR) < p.minISR:
		return kerr.NotEnoughReplicas
	}
	return nil
}

// BeginVerification starts the leader's check of a transactional batch
// (KIP-890 part 1, UnifiedLog.maybeStartTransactionVerification): when the
// producer has no transaction open here at this epoch, the coordinator must
// confirm (or, with transaction version 2, add) this partition before the
// batch may start one. It returns the guard the append must then carry, or
// 0 when no verification is needed.
func (p *Partition) BeginVerification(pid int64, epoch int16, seq int32, epochBumped bool) (uint64, *kerr.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.state.Leader != p.cfg.NodeID {
		return 0, kerr.NotLeaderForPartition
	}
	if cur, ok := p.producers.Epoch(pid); ok && epoch < cur && p.cfg.Bugs.NoZombieFencing {
		return 0, nil // the planted bug: a zombie needs no coordinator's word
	}
	return p.producers.BeginVerification(pid, epoch, seq, epochBumped), nil
}

// AppendMarker writes a transaction marker for the producer (WriteTxnMarkers,
// acks=all): its transaction on this partition, if it wrote any data, ends
// with the marker's result. txnVersion is the transaction's version
// (KIP-1228: version 2 markers must carry a newer producer epoch).
func (p *Partition) AppendMarker(pid int64, epoch int16, m storage.Marker, txnVersion int16, now time.Time) (AppendResult, *kerr.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.leaderAppendable(-1); e != nil {
		return AppendResult{}, e
	}
	res := AppendResult{Epoch: p.state.LeaderEpoch, LogStart: p.log.StartOffset()}
	v := p.producers.CheckMarker(pid, epoch, m, txnVersion)
	if v.Err != nil {
		return AppendResult{}, v.Err
	}
	if v.AlreadyWritten {
		// Answer once everything up to here, the earlier marker included,
		// is committed.
		res.BaseOffset, res.EndOffset = p.log.LEO(), p.log.LEO()
		return res, nil
	}
	b := storage.EncodeMarker(pid, epoch, m, now)
	off := p.log.LEO()
	storage.SetBaseOffset(b, off)
	storage.SetPartitionLeaderEpoch(b, p.state.LeaderEpoch)
	if err := p.log.Append(b); err != nil {
		p.logger().Error("marker append failed", "err", err)
		return AppendResult{}, p.storageErr(err)
	}
	t := p.producers.RecordMarker(pid, epoch, m, off)
	p.logger().Debug("transaction marker written", "producer", pid, "epoch", epoch, "marker", m.String(), "offset", off,
		"coordinator_epoch", m.CoordinatorEpoch, "first_offset", txnFirst(t))
	res.BaseOffset, res.EndOffset = off, off+1
	p.maybeAdvanceHW()
	p.checkInvariants()
	p.wake()
	return res, nil
}

func txnFirst(t *producer.Txn) int64 {
	if t == nil {
		return -1
	}
	return t.FirstOffset
}

// WaitCommitted blocks until the HW reaches end (acks=all) in the leader epoch
// the batch was appended in, the context ends, or leadership is lost.
func (p *Partition) WaitCommitted(ctx context.Context, end int64, epoch int32) *kerr.Error {
	if p.cfg.Bugs.AckBeforeISR {
		return nil
	}
	for i := 0; ; i++ {
		p.mu.Lock()
		if p.closed || p.state.Leader != p.cfg.NodeID || p.state.LeaderEpoch != epoch {
			// The batch may or may not survive the new leader: the client
			// cannot know, and must treat it as indeterminate.
			p.mu.Unlock()
			return kerr.NotLeaderForPartition
		}
		if p.hw >= end {
			short := !p.cfg.Bugs.SkipMinISR && len(p.state.ISR) < p.minISR
			p.mu.Unlock()
			if short {
				return kerr.NotEnoughReplicasAfterAppend
			}
			return nil
		}
		w := p.watch()
		p.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return kerr.RequestTimedOut
		}
	}
}

// ReadResult is what a fetch gets from one partition.
type ReadResult struct {
	Records  []byte
	HW       int64
	LSO      int64
	LEO      int64
	LogStart int64
	// Aborted are the aborted transactions overlapping Records, for a
	// read_committed fetch (the client drops their records).
	Aborted []producer.Txn
	Err     *kerr.Error
}

// Isolation is a consumer's isolation.level.
type Isolation int8

// Kafka's isolation levels, as the wire encodes them.
const (
	ReadUncommitted Isolation = 0
	ReadCommitted   Isolation = 1
)

// lso is the last stable offset: the HW, or the first offset of the
// earliest transaction not yet decided or whose marker is not yet
// replicated, if earlier (UnifiedLog.lastStableOffset). Caller holds mu.
func (p *Partition) lso() int64 {
	if p.cfg.Bugs.LSOPastOpenTxn {
		return p.hw
	}
	if first, ok := p.producers.FirstUnstable(p.hw); ok && first < p.hw {
		return first
	}
	return p.hw
}

// ReadForConsumer returns whole batches from offset: below the HW for
// read_uncommitted, below the LSO for read_committed, with the aborted
// transactions among them.
func (p *Partition) ReadForConsumer(offset int64, maxBytes int, currentLeaderEpoch int32, iso Isolation) ReadResult {
	p.mu.Lock()
	st, hw, lso, leo, start := p.state, p.hw, p.lso(), p.log.LEO(), p.log.StartOffset()
	p.mu.Unlock()
	res := ReadResult{HW: hw, LSO: lso, LEO: leo, LogStart: start}
	if st.Leader != p.cfg.NodeID {
		res.Err = kerr.NotLeaderForPartition
		return res
	}
	if e := checkEpoch(currentLeaderEpoch, st.LeaderEpoch); e != nil {
		res.Err = e
		return res
	}
	// Offsets between HW and LEO exist but are not readable yet: an empty
	// answer, not an error. Past the LEO is out of range.
	if offset < start || offset > leo {
		res.Err = kerr.OffsetOutOfRange
		return res
	}
	upTo := hw
	if iso == ReadCommitted {
		upTo = lso
	}
	recs, err := p.log.Read(offset, maxBytes, upTo)
	if err != nil {
		res.Err = p.storageErr(err)
		return res
	}
	res.Records = recs
	if iso == ReadCommitted && len(recs) > 0 {
		// Every transaction starting below the LSO has its marker below the
		// HW, so the index already holds each one these records overlap.
		end := storage.EndOffset(recs)
		p.mu.Lock()
		p.producers.TrimAbortedBefore(start)
		res.Aborted = p.producers.Aborted(offset, end)
		p.mu.Unlock()
	}
	return res
}

func checkEpoch(requested, current int32) *kerr.Error {
	switch {
	case requested < 0:
		return nil
	case requested < current:
		return kerr.FencedLeaderEpoch
	case requested > current:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

// storageErr is the answer to a failed log call; an error that means the
// disk failed is reported to the log-dir failure handler first (Kafka:
// KAFKA_STORAGE_ERROR, and the directory goes offline).
func (p *Partition) storageErr(err error) *kerr.Error {
	if errors.Is(err, storage.ErrOffsetOutOfRange) {
		return kerr.OffsetOutOfRange
	}
	p.failDir(err)
	return kerr.KafkaStorageError
}

// failDir reports err to the log-dir failure handler when it means the
// disk failed.
func (p *Partition) failDir(err error) {
	if p.cfg.LogDirFailure != nil && storage.IsLogDirFailure(err) {
		p.logger().Error("log directory failure", "err", err)
		p.cfg.LogDirFailure(err)
	}
}

func sorted(s []int32) []int32 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// Close stops the partition: waiters are released and the log closed cleanly.
func (p *Partition) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.wake()
	if err := p.log.CheckpointHW(p.hw); err != nil {
		p.logger().Warn("checkpoint hw", "err", err)
	}
	return p.log.Close()
}

// Crash stops the partition as a power cut would: unsynced (lazyfs) writes
// are dropped, nothing is flushed or checkpointed.
func (p *Partition) Crash() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.wake()
	p.log.Crash()
}

// CheckpointHW persists the HW (periodically, as Kafka's
// replication-offset-checkpoint does).
func (p *Partition) CheckpointHW() error {
	p.mu.Lock()
	hw, closed := p.hw, p.closed
	p.mu.Unlock()
	if closed {
		return nil
	}
	return p.log.CheckpointHW(hw)
}
