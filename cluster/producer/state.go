// Package producer keeps idempotent-producer state for one partition: per
// producer id, its epoch and the last batches' sequence ranges with the
// offsets they were written at. A retried batch is answered with its original
// offsets instead of being written twice; a gap is OUT_OF_ORDER_SEQUENCE_NUMBER.
//
// The state is derived from the log (batch headers carry producer id, epoch and
// base sequence), so a restarted broker or a new leader rebuilds it by
// scanning; no separate snapshot is needed for correctness.
package producer

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
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
	// previous lastSeq).
	batches []batch
}

// State is one partition's producer table. Not safe for concurrent use: the
// partition's lock guards it.
type State struct {
	m map[int64]*entry
}

// New returns an empty table.
func New() *State { return &State{m: make(map[int64]*entry)} }

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

// Check decides what to do with a batch from producer pid at epoch with
// sequences [firstSeq, firstSeq+n-1]. It does not change the state: call
// Record once the batch is appended.
func (s *State) Check(pid int64, epoch int16, firstSeq, n int32) Verdict {
	if pid == NoProducerID {
		return Verdict{}
	}
	lastSeq := LastSeq(firstSeq, n)
	e := s.m[pid]
	if e == nil {
		// Unknown producer on this partition: it must start at 0. A non-zero
		// sequence means we lost its earlier batches (truncation, retention):
		// Kafka answers UNKNOWN_PRODUCER_ID so the client can reset.
		if firstSeq != 0 {
			return Verdict{Err: kerr.UnknownProducerID}
		}
		return Verdict{}
	}
	switch {
	case epoch < e.epoch:
		return Verdict{Err: kerr.InvalidProducerEpoch}
	case epoch > e.epoch:
		if firstSeq != 0 {
			return Verdict{Err: kerr.OutOfOrderSequenceNumber}
		}
		return Verdict{}
	}
	for _, b := range e.batches {
		if b.firstSeq == firstSeq && b.lastSeq == lastSeq {
			return Verdict{Duplicate: true, FirstOffset: b.firstOffset, LastOffset: b.lastOffset}
		}
	}
	if len(e.batches) > 0 && firstSeq != nextSeq(e.batches[len(e.batches)-1].lastSeq) {
		return Verdict{Err: kerr.OutOfOrderSequenceNumber}
	}
	if len(e.batches) == 0 && firstSeq != 0 {
		return Verdict{Err: kerr.OutOfOrderSequenceNumber}
	}
	return Verdict{}
}

// Record notes an appended batch. Called for every idempotent batch the log
// takes, on leaders and followers alike, and when rebuilding from the log.
func (s *State) Record(pid int64, epoch int16, firstSeq, n int32, firstOffset, lastOffset int64) {
	if pid == NoProducerID {
		return
	}
	e := s.m[pid]
	if e == nil || epoch > e.epoch {
		e = &entry{epoch: epoch}
		s.m[pid] = e
	}
	if epoch < e.epoch {
		// A stale epoch cannot be appended by a correct leader; keep the newer.
		return
	}
	e.batches = append(e.batches, batch{firstSeq, LastSeq(firstSeq, n), firstOffset, lastOffset})
	if len(e.batches) > CachedBatches {
		copy(e.batches, e.batches[len(e.batches)-CachedBatches:])
		e.batches = e.batches[:CachedBatches]
	}
}

// Len is the number of producers known.
func (s *State) Len() int { return len(s.m) }
