// Package producer keeps one partition's producer state, after Kafka's
// ProducerStateManager and ProducerAppendInfo: per producer id its epoch, the
// last batches' sequence ranges with the offsets they were written at
// (idempotence), the coordinator epoch of its last transaction marker and the
// first offset of its ongoing transaction (KIP-98); per partition the ongoing
// transactions, the completed ones whose marker is not yet below the high
// watermark, and the index of aborted transactions read_committed fetches
// answer with.
//
// A retried batch is answered with its original offsets instead of being
// written twice; a gap is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is
// INVALID_PRODUCER_EPOCH (zombie fencing).
//
// The state is derived from the log (batch headers carry producer id, epoch,
// base sequence and the transactional/control bits; a control batch's record
// is the marker), so a restarted broker or a new leader rebuilds it by
// scanning; no separate snapshot is needed for correctness.
package producer

import (
	"cmp"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/storage"
)

// CachedBatches is how many recent batches per producer are remembered for
// duplicate detection. Kafka keeps 5, matching max.in.flight.requests.per.connection
// <= 5 for idempotent producers: a retry can only be of one of the last 5.
const CachedBatches = 5

// NoProducerID marks a non-idempotent batch.
const NoProducerID int64 = -1

type batch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

type entry struct {
	epoch int16
	// Invariant (checked by Invariants): len(batches) <= CachedBatches,
	// oldest first, sequences contiguous (each firstSeq follows the
	// previous lastSeq), all of epoch. Only client batches are kept: a
	// coordinator's carry no sequence of their own (RecordData).
	batches []batch
	// coordinatorEpoch is that of the last marker written for the producer
	// (-1 before any): a marker from an older coordinator is fenced.
	coordinatorEpoch int32
	// txnFirst is the first offset of the producer's ongoing transaction on
	// this partition, -1 when none. Invariant (checked by Invariants):
	// txnFirst >= 0 iff State.ongoing[pid] == txnFirst.
	txnFirst int64
}

// setEpoch is Kafka's ProducerStateEntry.maybeUpdateProducerEpoch: a new
// epoch forgets the cached batches, so its sequences start afresh.
func (e *entry) setEpoch(epoch int16) {
	if e.epoch != epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
}

// Txn is a transaction on this partition: its producer, its first offset and,
// once completed, the offset of its marker.
type Txn struct {
	ProducerID  int64
	FirstOffset int64
	// LastOffset is the marker's offset; -1 while ongoing.
	LastOffset int64
	Aborted    bool
}

// verification is Kafka's VerificationStateEntry (KIP-890 part 1): the
// leader asked the transaction coordinator whether the producer's
// transaction includes this partition; only an append carrying the same
// guard may start a transaction here, and any append or marker of the
// producer retires it.
type verification struct {
	guard       uint64
	epoch       int16
	lowestSeq   int32
	epochBumped bool // transaction version 2: a new producer must start at sequence 0
}

// State is one partition's producer table. Not safe for concurrent use: the
// partition's lock guards it.
type State struct {
	m map[int64]*entry
	// ongoing maps producer id to the first offset of its ongoing transaction.
	ongoing map[int64]int64
	// unreplicated are completed transactions whose marker is at or above the
	// high watermark, in completion order: the LSO stays at their first
	// offset until the marker is replicated (ProducerStateManager.unreplicatedTxns).
	// Invariant (checked by Invariants): markers ascending, each after its
	// transaction's first offset.
	unreplicated []Txn
	// aborted is the transaction index (Kafka's .txnindex): aborted
	// transactions in marker order. Invariant (checked by Invariants):
	// LastOffset ascending, each after its FirstOffset; Aborted's binary
	// search depends on it.
	aborted []Txn
	// verifying holds the producers whose transaction start awaits the
	// coordinator's word. Invariant: every guard in (0, nextGuard].
	verifying map[int64]*verification
	nextGuard uint64
}

// New returns an empty table.
func New() *State {
	return &State{m: make(map[int64]*entry), ongoing: map[int64]int64{}, verifying: map[int64]*verification{}}
}

// LastSeq returns the sequence of the last record of a batch starting at
// firstSeq with n records. Sequences wrap from MaxInt32 to 0, as in Kafka.
func LastSeq(firstSeq, n int32) int32 {
	return int32((int64(firstSeq) + int64(n) - 1) % (int64(math.MaxInt32) + 1))
}

func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// Origin says how much of a batch is validated (Kafka's AppendOrigin).
type Origin int

const (
	// Client batches are checked in full: epoch, sequence, transaction state.
	Client Origin = iota
	// Coordinator batches (the group coordinator's transactional offset
	// commits) carry no sequence: only the epoch is checked.
	Coordinator
)

// Data is what the table needs of a data batch.
type Data struct {
	ProducerID    int64
	Epoch         int16
	FirstSeq      int32
	Records       int32
	Transactional bool
}

// DataOf describes the data batch h.
func DataOf(h storage.BatchHeader) Data {
	return Data{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, FirstSeq: h.BaseSequence, Records: h.NumRecords, Transactional: h.IsTransactional()}
}

// Verdict is the outcome of checking a batch.
type Verdict struct {
	// Duplicate: the batch was written before at [FirstOffset, LastOffset];
	// answer with those offsets and do not write it again.
	Duplicate   bool
	FirstOffset int64
	LastOffset  int64
	// Err is a Kafka error to answer with instead of writing; nil to write.
	Err *kerr.Error
}

// Lenience are the planted bugs that loosen the checks.
type Lenience struct {
	// AcceptStaleEpoch takes a batch of an older producer epoch as if it were
	// current (the no-zombie-fencing bug).
	AcceptStaleEpoch bool
}

// CheckData decides what to do with a data batch, in the order of Kafka's
// UnifiedLog.analyzeAndValidateProducerState and ProducerAppendInfo:
// duplicate, transaction verification, epoch, sequence, transaction state.
// guard is the verification guard the append carries (0 for none); it does
// not change the state: call RecordData once the batch is appended.
func (s *State) CheckData(d Data, origin Origin, guard uint64, lax Lenience) Verdict {
	if d.ProducerID == NoProducerID {
		return Verdict{}
	}
	e := s.m[d.ProducerID]
	if origin == Client && e != nil && e.epoch == d.Epoch {
		lastSeq := LastSeq(d.FirstSeq, d.Records)
		for _, b := range e.batches {
			if b.firstSeq == d.FirstSeq && b.lastSeq == lastSeq {
				return Verdict{Duplicate: true, FirstOffset: b.firstOffset, LastOffset: b.lastOffset}
			}
		}
	}
	stale := e != nil && d.Epoch < e.epoch
	if stale && !lax.AcceptStaleEpoch {
		// Kafka 2.7+ answers INVALID_PRODUCER_EPOCH here (not the fatal
		// PRODUCER_FENCED), letting the client abort and retry.
		return Verdict{Err: kerr.InvalidProducerEpoch}
	}
	// KIP-890 part 1 (UnifiedLog.batchMissingRequiredVerification): a
	// transactional batch that does not continue this producer's ongoing
	// transaction (at its epoch) must carry the guard of a verification the
	// coordinator confirmed.
	if d.Transactional && !s.HasOngoing(d.ProducerID, d.Epoch) && !(stale && lax.AcceptStaleEpoch) {
		v := s.verifying[d.ProducerID]
		if v == nil || guard == 0 || v.guard != guard {
			return Verdict{Err: kerr.InvalidTxnState}
		}
	}
	if origin == Client && !stale {
		if err := s.checkSequence(d, e); err != nil {
			return Verdict{Err: err}
		}
	}
	if e != nil && e.txnFirst >= 0 && !d.Transactional {
		// A non-transactional batch while the producer's transaction is open.
		return Verdict{Err: kerr.InvalidTxnState}
	}
	return Verdict{}
}

// checkSequence is ProducerAppendInfo.checkSequence, with this package's
// stricter rule for producers it has never seen (UNKNOWN_PRODUCER_ID unless
// they start at 0, so a client that lost its batches to truncation resets).
func (s *State) checkSequence(d Data, e *entry) *kerr.Error {
	if v := s.verifying[d.ProducerID]; v != nil {
		if v.epochBumped && d.FirstSeq != 0 && e == nil {
			return kerr.OutOfOrderSequenceNumber // KIP-890: a new TV2 producer starts at 0
		}
		if d.FirstSeq > v.lowestSeq {
			return kerr.OutOfOrderSequenceNumber
		}
	}
	switch {
	case e == nil:
		if d.FirstSeq != 0 {
			return kerr.UnknownProducerID
		}
	case d.Epoch != e.epoch:
		if d.FirstSeq != 0 {
			return kerr.OutOfOrderSequenceNumber
		}
	case len(e.batches) == 0:
		// The epoch's first batch (its earlier batches, if any, went with a
		// marker that moved the epoch here): it starts at 0.
		if d.FirstSeq != 0 {
			return kerr.OutOfOrderSequenceNumber
		}
	default:
		if d.FirstSeq != nextSeq(e.batches[len(e.batches)-1].lastSeq) {
			return kerr.OutOfOrderSequenceNumber
		}
	}
	return nil
}

// RecordData notes an appended data batch at [first, last]. Called for every
// batch with a producer id the log takes, on leaders and followers alike, and
// when rebuilding from the log. It retires the producer's verification.
// origin is who wrote the batch: a coordinator's batch (the group
// coordinator's TxnOffsetCommit writes, always at sequence 0 as Kafka
// writes them) moves the epoch and the transaction but is not cached for
// duplicate detection, which only ever looks for a client's retries.
func (s *State) RecordData(d Data, origin Origin, first, last int64) {
	if d.ProducerID == NoProducerID {
		return
	}
	delete(s.verifying, d.ProducerID)
	e := s.m[d.ProducerID]
	if e == nil {
		e = &entry{epoch: d.Epoch, coordinatorEpoch: -1, txnFirst: -1}
		s.m[d.ProducerID] = e
	}
	e.setEpoch(d.Epoch)
	if origin == Client {
		e.batches = append(e.batches, batch{d.FirstSeq, LastSeq(d.FirstSeq, d.Records), first, last})
		if len(e.batches) > CachedBatches {
			copy(e.batches, e.batches[len(e.batches)-CachedBatches:])
			e.batches = e.batches[:CachedBatches]
		}
	}
	if d.Transactional && e.txnFirst < 0 {
		e.txnFirst = first
		s.ongoing[d.ProducerID] = first
	}
}

// MarkerVerdict is the outcome of checking a transaction marker.
type MarkerVerdict struct {
	// AlreadyWritten: a transaction version 2 marker whose epoch the
	// partition already reached with nothing ongoing: a retry of a marker
	// that was written (the coordinator lost the answer). Nothing to write.
	AlreadyWritten bool
	Err            *kerr.Error
}

// CheckMarker validates a COMMIT/ABORT marker of the coordinator, as
// ProducerAppendInfo.appendEndTxnMarker: a marker of an older producer epoch
// is INVALID_PRODUCER_EPOCH (transaction version 2, KIP-1228: the marker's
// epoch must be strictly newer, since the coordinator bumped it; version 1
// accepts the same epoch), one of an older coordinator epoch
// TRANSACTION_COORDINATOR_FENCED.
func (s *State) CheckMarker(pid int64, epoch int16, m storage.Marker, txnVersion int16) MarkerVerdict {
	e := s.m[pid]
	if e == nil {
		return MarkerVerdict{}
	}
	if txnVersion >= 2 && epoch == e.epoch && e.txnFirst < 0 && m.CoordinatorEpoch >= e.coordinatorEpoch {
		return MarkerVerdict{AlreadyWritten: true}
	}
	if epoch < e.epoch || txnVersion >= 2 && epoch == e.epoch {
		return MarkerVerdict{Err: kerr.InvalidProducerEpoch}
	}
	if m.CoordinatorEpoch < e.coordinatorEpoch {
		return MarkerVerdict{Err: kerr.TransactionCoordinatorFenced}
	}
	return MarkerVerdict{}
}

// RecordMarker notes a marker appended at offset: the producer's transaction
// on this partition, if it wrote any data, is completed (and indexed when
// aborted). It returns that transaction, or nil for an empty one.
func (s *State) RecordMarker(pid int64, epoch int16, m storage.Marker, offset int64) *Txn {
	delete(s.verifying, pid)
	e := s.m[pid]
	if e == nil {
		e = &entry{epoch: epoch, txnFirst: -1}
		s.m[pid] = e
	}
	e.setEpoch(epoch)
	e.coordinatorEpoch = m.CoordinatorEpoch
	if e.txnFirst < 0 {
		return nil
	}
	t := Txn{ProducerID: pid, FirstOffset: e.txnFirst, LastOffset: offset, Aborted: !m.Commit}
	e.txnFirst = -1
	delete(s.ongoing, pid)
	s.unreplicated = append(s.unreplicated, t)
	if t.Aborted {
		s.aborted = append(s.aborted, t)
	}
	return &t
}

// HasOngoing reports whether the producer has a transaction open on this
// partition at this epoch (UnifiedLog.hasOngoingTransaction: a newer epoch
// means the open one is finished, its marker not yet here).
func (s *State) HasOngoing(pid int64, epoch int16) bool {
	e := s.m[pid]
	return e != nil && e.txnFirst >= 0 && e.epoch == epoch
}

// BeginVerification starts (or joins) a verification of the producer's
// transaction for this partition and returns its guard; 0 when the
// producer's transaction is already open here at this epoch, so none is
// needed (UnifiedLog.maybeStartTransactionVerification).
func (s *State) BeginVerification(pid int64, epoch int16, seq int32, epochBumped bool) uint64 {
	if s.HasOngoing(pid, epoch) {
		return 0
	}
	v := s.verifying[pid]
	if v == nil {
		s.nextGuard++
		v = &verification{guard: s.nextGuard, epoch: epoch, lowestSeq: seq, epochBumped: epochBumped}
		s.verifying[pid] = v
	}
	// VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch.
	if epoch > v.epoch {
		v.epoch, v.lowestSeq = epoch, seq
	} else if epoch == v.epoch && seq < v.lowestSeq {
		v.lowestSeq = seq
	}
	return v.guard
}

// FirstUnstable is the first offset a read_committed reader may not pass:
// the first offset of the earliest ongoing transaction, or of a completed one
// whose marker is not below hw. ok is false when there is none. Completed
// transactions whose marker is below hw are forgotten (onHighWatermarkUpdated).
func (s *State) FirstUnstable(hw int64) (int64, bool) {
	keep := s.unreplicated[:0]
	for _, t := range s.unreplicated {
		if t.LastOffset >= hw {
			keep = append(keep, t)
		}
	}
	clear(s.unreplicated[len(keep):])
	s.unreplicated = keep
	first, ok := int64(math.MaxInt64), false
	for _, off := range s.ongoing {
		first, ok = min(first, off), true
	}
	for _, t := range s.unreplicated {
		first, ok = min(first, t.FirstOffset), true
	}
	return first, ok
}

// Unstable lists, unordered, the transactions a read_committed reader may
// not pass yet: the open ones (LastOffset -1) and the completed ones whose
// marker is not below hw. It changes nothing (for invariant checks).
func (s *State) Unstable(hw int64) []Txn {
	out := make([]Txn, 0, len(s.ongoing)+len(s.unreplicated))
	for pid, off := range s.ongoing {
		out = append(out, Txn{ProducerID: pid, FirstOffset: off, LastOffset: -1})
	}
	for _, t := range s.unreplicated {
		if t.LastOffset >= hw {
			out = append(out, t)
		}
	}
	return out
}

// Aborted lists the aborted transactions that overlap [from, upTo): their
// marker is at or after from and their first offset before upTo (Kafka's
// collectAbortedTransactions for a read_committed fetch).
func (s *State) Aborted(from, upTo int64) []Txn {
	i, _ := slices.BinarySearchFunc(s.aborted, from, func(t Txn, off int64) int { return cmp.Compare(t.LastOffset, off) })
	var out []Txn
	for _, t := range s.aborted[i:] {
		if t.FirstOffset < upTo {
			out = append(out, t)
		}
	}
	return out
}

// TrimAbortedBefore forgets aborted transactions whose marker is below the
// log start (retention deleted them, as it deletes Kafka's .txnindex files).
func (s *State) TrimAbortedBefore(logStart int64) {
	i, _ := slices.BinarySearchFunc(s.aborted, logStart, func(t Txn, off int64) int { return cmp.Compare(t.LastOffset, off) })
	if i > 0 {
		s.aborted = slices.Delete(s.aborted, 0, i)
	}
}

// Ongoing lists the open transactions, earliest first (for describe tools).
func (s *State) Ongoing() []Txn {
	out := make([]Txn, 0, len(s.ongoing))
	for pid, off := range s.ongoing {
		out = append(out, Txn{ProducerID: pid, FirstOffset: off, LastOffset: -1})
	}
	slices.SortFunc(out, func(a, b Txn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return out
}

// Epoch is the producer's current epoch on this partition, ok false when
// the partition has never seen it.
func (s *State) Epoch(pid int64) (int16, bool) {
	e := s.m[pid]
	if e == nil {
		return 0, false
	}
	return e.epoch, true
}

// Len is the number of producers known.
func (s *State) Len() int { return len(s.m) }
