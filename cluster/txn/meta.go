package txn

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a transaction's state, named as Kafka names it
// (TransactionState in TransactionMetadata.scala).
type State string

// The states, with the states each may follow (validPreviousStates). With
// transaction version 2 an abort may find nothing open, so PrepareAbort also
// follows Empty and the Complete states (KIP-890, Kafka's
// TransactionState.PREPARE_ABORT).
const (
	Empty          State = "Empty"
	Ongoing        State = "Ongoing"
	PrepareCommit  State = "PrepareCommit"
	PrepareAbort   State = "PrepareAbort"
	CompleteCommit State = "CompleteCommit"
	CompleteAbort  State = "CompleteAbort"
	Dead           State = "Dead"
	// PrepareEpochFence is only ever a pending state: the epoch bump that
	// fences a producer, on the way to PrepareAbort.
	PrepareEpochFence State = "PrepareEpochFence"
)

var validPrevious = map[State][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// AllStates lists the states a transaction can be seen in.
var AllStates = []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence}

// TopicPartition is a partition of a transaction.
type TopicPartition struct {
	Topic     string `json:"t"`
	Partition int32  `json:"p"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// TopicPartitions are one topic's partitions.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// ByTopic groups partitions by topic, in order of first appearance, as
// requests and responses nest them.
func ByTopic(parts []TopicPartition) []TopicPartitions {
	var out []TopicPartitions
	at := map[string]int{}
	for _, tp := range parts {
		i, ok := at[tp.Topic]
		if !ok {
			i = len(out)
			at[tp.Topic] = i
			out = append(out, TopicPartitions{Topic: tp.Topic})
		}
		out[i].Partitions = append(out[i].Partitions, tp.Partition)
	}
	return out
}

// noProducerID / noEpoch are Kafka's RecordBatch.NO_PRODUCER_ID/EPOCH.
const (
	noProducerID int64 = -1
	noEpoch      int16 = -1
)

// epochExhausted is TransactionMetadata.isEpochExhausted: the last epochs
// are kept for the fence bump, the id rotates instead.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// Transit is one transaction state the coordinator writes to
// __transaction_state and then moves to (Kafka's TxnTransitMetadata, and
// the value of a transaction log record).
type Transit struct {
	ProducerID     int64            `json:"pid"`
	PrevProducerID int64            `json:"prev_pid"`
	NextProducerID int64            `json:"next_pid"`
	Epoch          int16            `json:"epoch"`
	LastEpoch      int16            `json:"last_epoch"`
	TimeoutMs      int32            `json:"timeout_ms"`
	State          State            `json:"state"`
	Partitions     []TopicPartition `json:"partitions"`
	StartMs        int64            `json:"start_ms"`
	UpdateMs       int64            `json:"update_ms"`
	// Version is the client's transaction version (2: KIP-890, the epoch
	// bumps at every commit and abort).
	Version int16 `json:"tv"`
}

// Meta is one transactional id's metadata on its coordinator (Kafka's
// TransactionMetadata). The shard's lock guards it; its invariants (the
// state machine's) are checked at every release (invariants.go).
type Meta struct {
	ID             string
	ProducerID     int64
	PrevProducerID int64
	NextProducerID int64
	Epoch          int16
	LastEpoch      int16
	TimeoutMs      int32
	State          State
	// Partitions are the partitions of the ongoing transaction; while a
	// Prepare state's markers are written they shrink to those still owed.
	Partitions map[TopicPartition]bool
	StartMs    int64
	UpdateMs   int64
	Version    int16
	// pending is the state a transit being written moves to; while set, no
	// other transition may start (CONCURRENT_TRANSACTIONS).
	pending State
	// failedFence: a fence's epoch bump may not have been written; the next
	// fence does not bump again (hasFailedEpochFence).
	failedFence bool
	// checked is the metadata as the last invariant check saw it.
	checked checkedMeta
}

func newMeta(id string, pid int64, timeoutMs int32, nowMs int64) *Meta {
	return &Meta{ID: id, ProducerID: pid, PrevProducerID: noProducerID, NextProducerID: noProducerID,
		Epoch: noEpoch, LastEpoch: noEpoch, TimeoutMs: timeoutMs, State: Empty, Partitions: map[TopicPartition]bool{}, StartMs: -1, UpdateMs: nowMs}
}

// metaOf rebuilds metadata from the last transit written for id (a load).
func metaOf(id string, t *Transit) *Meta {
	m := &Meta{ID: id, ProducerID: t.ProducerID, PrevProducerID: t.PrevProducerID, NextProducerID: t.NextProducerID,
		Epoch: t.Epoch, LastEpoch: t.LastEpoch, TimeoutMs: t.TimeoutMs, State: t.State, Partitions: map[TopicPartition]bool{},
		StartMs: t.StartMs, UpdateMs: t.UpdateMs, Version: t.Version}
	for _, tp := range t.Partitions {
		m.Partitions[tp] = true
	}
	return m
}

// SortedPartitions lists the partitions in a stable order.
func (m *Meta) SortedPartitions() []TopicPartition {
	out := slices.Collect(maps.Keys(m.Partitions))
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

func (m *Meta) String() string {
	return fmt.Sprintf("%s(pid=%d epoch=%d state=%s pending=%s partitions=%v version=%d)", m.ID, m.ProducerID, m.Epoch, m.State, m.pending, m.SortedPartitions(), m.Version)
}

// pendingTransaction: a transaction is open or being decided.
func (m *Meta) pendingTransaction() bool {
	return m.State == Ongoing || m.State == PrepareAbort || m.State == PrepareCommit
}

// prepare starts a transition to t (prepareTransitionTo): the pending state
// blocks any other until complete or abandon.
func (m *Meta) prepare(t Transit) Transit {
	if m.pending != "" {
		panic(fmt.Sprintf("txn %s: preparing %s while %s is pending", m.ID, t.State, m.pending))
	}
	if t.State != Dead && t.Epoch < 0 {
		panic(fmt.Sprintf("txn %s: illegal epoch %d for %s", m.ID, t.Epoch, t.State))
	}
	if !slices.Contains(validPrevious[t.State], m.State) {
		panic(fmt.Sprintf("txn %s: %s cannot follow %s", m.ID, t.State, m.State))
	}
	t.PrevProducerID = m.ProducerID
	m.pending = t.State
	return t
}

func (m *Meta) transit(state State, pid int64, epoch, lastEpoch int16, timeoutMs int32, parts []TopicPartition, startMs, nowMs int64) Transit {
	return m.prepare(Transit{ProducerID: pid, NextProducerID: noProducerID, Epoch: epoch, LastEpoch: lastEpoch, TimeoutMs: timeoutMs,
		State: state, Partitions: parts, StartMs: startMs, UpdateMs: nowMs})
}

// prepareFence bumps the epoch to fence the current producer, on the way to
// aborting its transaction (prepareFenceProducerEpoch).
func (m *Meta) prepareFence() Transit {
	if m.Epoch == math.MaxInt16 {
		panic(fmt.Sprintf("txn %s: cannot fence at epoch %d", m.ID, m.Epoch))
	}
	bumped := m.Epoch + 1
	if m.failedFence {
		bumped = m.Epoch
	}
	return m.transit(PrepareEpochFence, m.ProducerID, bumped, noEpoch, m.TimeoutMs, m.SortedPartitions(), m.StartMs, m.UpdateMs)
}

// prepareIncrementEpoch is InitProducerId's epoch bump
// (prepareIncrementProducerEpoch, with KIP-360's expected epoch).
func (m *Meta) prepareIncrementEpoch(timeoutMs int32, expected *int16, nowMs int64) (Transit, *kerr.Error) {
	if epochExhausted(m.Epoch) {
		panic(fmt.Sprintf("txn %s: epoch %d exhausted", m.ID, m.Epoch))
	}
	next, last := m.Epoch+1, noEpoch
	if expected != nil {
		switch {
		case m.Epoch == noEpoch || *expected == m.Epoch:
			last = m.Epoch
		case *expected == m.LastEpoch:
			// A retry of a bump whose answer was lost: the same epoch again.
			next, last = m.Epoch, m.LastEpoch
		default:
			return Transit{}, kerr.ProducerFenced
		}
	}
	return m.transit(Empty, m.ProducerID, next, last, timeoutMs, nil, -1, nowMs), nil
}

// prepareRotate gives the transactional id a new producer id at epoch 0
// once the old one's epochs are exhausted (prepareProducerIdRotation).
func (m *Meta) prepareRotate(pid int64, timeoutMs int32, nowMs int64, recordLast bool) Transit {
	if m.pendingTransaction() {
		panic(fmt.Sprintf("txn %s: rotating the producer id with a transaction pending", m.ID))
	}
	last := noEpoch
	if recordLast {
		last = m.Epoch
	}
	return m.transit(Empty, pid, 0, last, timeoutMs, nil, -1, nowMs)
}

// prepareAddPartitions adds partitions, starting the transaction if none is
// open (prepareAddPartitions).
func (m *Meta) prepareAddPartitions(add []TopicPartition, nowMs int64) Transit {
	start := m.StartMs
	if m.State == Empty || m.State == CompleteAbort || m.State == CompleteCommit {
		start = nowMs
	}
	all := maps.Clone(m.Partitions)
	for _, tp := range add {
		all[tp] = true
	}
	parts := slices.Collect(maps.Keys(all))
	return m.transit(Ongoing, m.ProducerID, m.Epoch, m.LastEpoch, m.TimeoutMs, parts, start, nowMs)
}

// prepareEnd moves an ongoing transaction to PrepareCommit or PrepareAbort
// (prepareAbortOrCommit); with transaction version 2 the epoch is bumped
// here (KIP-890), and a new producer id is taken if it is exhausted.
//
// An abort with nothing open (version 2) starts now: Kafka's
// prepareAbortOrCommit takes the update time as the start of a transaction
// no partition joined (noPartitionAdded).
func (m *Meta) prepareEnd(state State, version int16, nextPid int64, nowMs int64) Transit {
	epoch, last := m.Epoch, m.LastEpoch
	if version >= 2 {
		epoch, last = m.Epoch+1, m.Epoch
	}
	start := m.StartMs
	if m.State != Ongoing {
		start = nowMs
	}
	t := m.transit(state, m.ProducerID, epoch, last, m.TimeoutMs, m.SortedPartitions(), start, nowMs)
	t.NextProducerID, t.Version = nextPid, version
	return t
}

// prepareComplete moves a Prepare state to its Complete state once every
// marker is written (prepareComplete).
func (m *Meta) prepareComplete(nowMs int64) Transit {
	state := CompleteCommit
	if m.State == PrepareAbort {
		state = CompleteAbort
	}
	m.failedFence = false
	pid, epoch := m.ProducerID, m.Epoch
	if m.Version >= 2 && m.NextProducerID != noProducerID {
		pid, epoch = m.NextProducerID, 0 // the bump overflowed: the new id starts now
	}
	t := m.transit(state, pid, epoch, m.Epoch, m.TimeoutMs, nil, m.StartMs, nowMs)
	t.Version = m.Version
	return t
}

// abandon drops a pending transition whose write failed.
func (m *Meta) abandon() { m.pending = "" }

// complete moves to t once it is written (completeTransitionTo), checking
// what Kafka checks: the pending state matches, epochs move as the state
// machine allows, partitions only grow while ongoing.
func (m *Meta) complete(t Transit) error {
	if m.pending == "" || m.pending != t.State {
		return fmt.Errorf("txn %s: completing %s with %q pending", m.ID, t.State, m.pending)
	}
	switch t.State {
	case Empty:
		bump := t.Epoch == m.Epoch+1 || t.Epoch == 0 && t.ProducerID != m.ProducerID
		if t.Epoch != m.Epoch && !bump || len(t.Partitions) > 0 || t.StartMs != -1 {
			return fmt.Errorf("txn %s: bad transition %s -> %+v", m.ID, m, t)
		}
		m.TimeoutMs, m.Epoch, m.LastEpoch, m.ProducerID, m.PrevProducerID = t.TimeoutMs, t.Epoch, t.LastEpoch, t.ProducerID, t.PrevProducerID
		clear(m.Partitions)
	case Ongoing:
		if t.Epoch != m.Epoch || t.ProducerID != m.ProducerID || t.TimeoutMs != m.TimeoutMs {
			return fmt.Errorf("txn %s: bad transition %s -> %+v", m.ID, m, t)
		}
		for _, tp := range t.Partitions {
			m.Partitions[tp] = true
		}
		m.StartMs = t.StartMs
	case PrepareCommit, PrepareAbort:
		// Only an abort with nothing open (version 2) starts here.
		fresh := m.State != Ongoing && t.State == PrepareAbort && t.Version >= 2 && len(t.Partitions) == 0
		if t.StartMs != m.StartMs && !fresh || len(t.Partitions) != len(m.Partitions) {
			return fmt.Errorf("txn %s: bad transition %s -> %+v", m.ID, m, t)
		}
		m.StartMs = t.StartMs
		if t.Version >= 2 {
			m.Epoch, m.LastEpoch, m.NextProducerID = t.Epoch, t.LastEpoch, t.NextProducerID
		}
	case CompleteCommit, CompleteAbort:
		m.StartMs = t.StartMs
		clear(m.Partitions)
		if t.Version >= 2 {
			m.Epoch, m.LastEpoch, m.PrevProducerID, m.ProducerID, m.NextProducerID = t.Epoch, t.LastEpoch, t.PrevProducerID, t.ProducerID, noProducerID
		}
	default:
		return fmt.Errorf("txn %s: %s is never completed", m.ID, t.State)
	}
	m.Version = t.Version
	m.UpdateMs = t.UpdateMs
	m.pending = ""
	m.State = t.State
	return nil
}
