package producer

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/storage"
)

func idem(pid int64, epoch int16, seq, n int32) Data {
	return Data{ProducerID: pid, Epoch: epoch, FirstSeq: seq, Records: n}
}

func txnal(pid int64, epoch int16, seq, n int32) Data {
	d := idem(pid, epoch, seq, n)
	d.Transactional = true
	return d
}

func check(s *State, d Data) Verdict { return s.CheckData(d, Client, 0, Lenience{}) }

func TestSequences(t *testing.T) {
	s := New()
	const pid = 7
	if v := check(s, idem(pid, 0, 0, 3)); v.Err != nil || v.Duplicate {
		t.Fatalf("first batch: %+v", v)
	}
	s.RecordData(idem(pid, 0, 0, 3), Client, 100, 102)
	// A retry of the same batch is a duplicate answered with its offsets.
	if v := check(s, idem(pid, 0, 0, 3)); !v.Duplicate || v.FirstOffset != 100 || v.LastOffset != 102 {
		t.Fatalf("retry: %+v", v)
	}
	// The next batch follows.
	if v := check(s, idem(pid, 0, 3, 2)); v.Err != nil || v.Duplicate {
		t.Fatalf("next: %+v", v)
	}
	// A gap is out of order.
	if v := check(s, idem(pid, 0, 5, 1)); v.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("gap: %+v", v)
	}
	// An old epoch is fenced; a new epoch must restart at 0.
	s.RecordData(idem(pid, 0, 3, 2), Client, 103, 104)
	if v := check(s, idem(pid, 0, 5, 1)); v.Err != nil {
		t.Fatalf("in order after record: %+v", v)
	}
	if v := check(s, idem(pid, 1, 4, 1)); v.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("new epoch non-zero: %+v", v)
	}
	s.RecordData(idem(pid, 1, 0, 1), Client, 105, 105)
	if v := check(s, idem(pid, 0, 5, 1)); v.Err != kerr.InvalidProducerEpoch {
		t.Fatalf("stale epoch: %+v", v)
	}
	// Unknown producer with a non-zero sequence.
	if v := check(s, idem(99, 0, 4, 1)); v.Err != kerr.UnknownProducerID {
		t.Fatalf("unknown: %+v", v)
	}
	// Non-idempotent batches are never checked.
	if v := check(s, idem(NoProducerID, 0, 4, 1)); v.Err != nil || v.Duplicate {
		t.Fatalf("non-idempotent: %+v", v)
	}
}

func TestOnlyLastFiveCached(t *testing.T) {
	s := New()
	for i := int32(0); i < 8; i++ {
		s.RecordData(idem(1, 0, i, 1), Client, int64(i), int64(i))
	}
	if v := check(s, idem(1, 0, 2, 1)); v.Duplicate {
		t.Fatalf("batch 2 should have left the cache: %+v", v)
	}
	if v := check(s, idem(1, 0, 3, 1)); !v.Duplicate || v.FirstOffset != 3 {
		t.Fatalf("batch 3 should be cached: %+v", v)
	}
}

func TestSequenceWrap(t *testing.T) {
	if got := LastSeq(math.MaxInt32, 2); got != 0 {
		t.Fatalf("LastSeq wrap = %d", got)
	}
	s := New()
	s.RecordData(idem(1, 0, 0, 1), Client, 0, 0)
	s.m[1].batches[0].lastSeq = math.MaxInt32 - 1
	if v := check(s, idem(1, 0, math.MaxInt32, 3)); v.Err != nil {
		t.Fatalf("wrap batch: %+v", v)
	}
}

var (
	commit = storage.Marker{Commit: true, CoordinatorEpoch: 3}
	abort  = storage.Marker{Commit: false, CoordinatorEpoch: 3}
)

// A transactional batch starts a transaction only with a confirmed
// verification guard (KIP-890 part 1); once open, its next batches need none.
func TestTransactionNeedsVerification(t *testing.T) {
	s := New()
	const pid = 4
	if v := check(s, txnal(pid, 0, 0, 2)); v.Err != kerr.InvalidTxnState {
		t.Fatalf("unverified first transactional batch: %+v", v)
	}
	g := s.BeginVerification(pid, 0, 0, false)
	if g == 0 {
		t.Fatal("no guard for a producer without an open transaction")
	}
	if v := s.CheckData(txnal(pid, 0, 0, 2), Client, g+1, Lenience{}); v.Err != kerr.InvalidTxnState {
		t.Fatalf("wrong guard: %+v", v)
	}
	if v := s.CheckData(txnal(pid, 0, 0, 2), Client, g, Lenience{}); v.Err != nil {
		t.Fatalf("verified batch: %+v", v)
	}
	s.RecordData(txnal(pid, 0, 0, 2), Client, 10, 11)
	if !s.HasOngoing(pid, 0) || s.BeginVerification(pid, 0, 2, false) != 0 {
		t.Fatal("open transaction not seen")
	}
	if v := check(s, txnal(pid, 0, 2, 1)); v.Err != nil {
		t.Fatalf("second batch of the open transaction: %+v", v)
	}
	// The guard went with the append: a second use fails.
	if v := s.CheckData(txnal(pid, 1, 0, 1), Client, g, Lenience{}); v.Err != kerr.InvalidTxnState {
		t.Fatalf("reused guard: %+v", v)
	}
	// A non-transactional batch while the transaction is open.
	if v := check(s, idem(pid, 0, 2, 1)); v.Err != kerr.InvalidTxnState {
		t.Fatalf("idempotent batch inside a transaction: %+v", v)
	}
}

// The LSO stays at an open transaction's first offset, and at a completed
// one's until its marker is below the HW; aborted ones are indexed.
func TestLastStableAndAbortedIndex(t *testing.T) {
	s := New()
	open := func(pid int64, first, last int64) {
		g := s.BeginVerification(pid, 0, 0, false)
		if v := s.CheckData(txnal(pid, 0, 0, int32(last-first+1)), Client, g, Lenience{}); v.Err != nil {
			t.Fatal(v.Err)
		}
		s.RecordData(txnal(pid, 0, 0, int32(last-first+1)), Client, first, last)
	}
	open(1, 0, 4)
	open(2, 5, 9)
	if f, ok := s.FirstUnstable(10); !ok || f != 0 {
		t.Fatalf("first unstable %d %v, want 0", f, ok)
	}
	if v := s.CheckMarker(1, 0, abort, 1); v.Err != nil {
		t.Fatal(v.Err)
	}
	if tx := s.RecordMarker(1, 0, abort, 10); tx == nil || tx.FirstOffset != 0 || !tx.Aborted {
		t.Fatalf("completed %+v", tx)
	}
	// Marker at 10, HW 10: not replicated yet, the LSO stays at 0.
	if f, _ := s.FirstUnstable(10); f != 0 {
		t.Fatalf("first unstable %d before the marker is replicated, want 0", f)
	}
	if f, _ := s.FirstUnstable(11); f != 5 {
		t.Fatalf("first unstable %d once the marker is replicated, want 5", f)
	}
	s.RecordMarker(2, 0, commit, 11)
	if f, ok := s.FirstUnstable(12); ok {
		t.Fatalf("first unstable %d with nothing open", f)
	}
	if a := s.Aborted(0, 12); len(a) != 1 || a[0].ProducerID != 1 {
		t.Fatalf("aborted %+v", a)
	}
	if a := s.Aborted(11, 12); len(a) != 0 {
		t.Fatalf("aborted after its marker: %+v", a)
	}
	s.TrimAbortedBefore(11)
	if a := s.Aborted(0, 12); len(a) != 0 {
		t.Fatalf("aborted after trim: %+v", a)
	}
}

// Markers: version 1 accepts the data's epoch, version 2 (KIP-1228) needs a
// newer one, and a version 2 retry of a written marker writes nothing.
func TestMarkerEpochs(t *testing.T) {
	for _, tv := range []int16{1, 2} {
		s := New()
		g := s.BeginVerification(1, 5, 0, tv == 2)
		s.CheckData(txnal(1, 5, 0, 1), Client, g, Lenience{})
		s.RecordData(txnal(1, 5, 0, 1), Client, 0, 0)
		same := s.CheckMarker(1, 5, commit, tv)
		if tv == 1 && same.Err != nil || tv == 2 && same.Err != kerr.InvalidProducerEpoch {
			t.Fatalf("tv%d: marker at the data's epoch: %+v", tv, same)
		}
		if v := s.CheckMarker(1, 4, commit, tv); v.Err != kerr.InvalidProducerEpoch {
			t.Fatalf("tv%d: older marker: %+v", tv, v)
		}
		next := int16(5)
		if tv == 2 {
			next = 6
		}
		s.RecordMarker(1, next, commit, 1)
		if v := s.CheckMarker(1, next+1, storage.Marker{Commit: true, CoordinatorEpoch: 2}, tv); v.Err != kerr.TransactionCoordinatorFenced {
			t.Fatalf("tv%d: marker of an older coordinator: %+v", tv, v)
		}
		if v := s.CheckMarker(1, next, commit, tv); tv == 2 && !v.AlreadyWritten {
			t.Fatalf("tv2: retried marker: %+v", v)
		}
		// Version 2: the next transaction's data at the bumped epoch makes a
		// late marker of that epoch stale.
		if tv == 2 {
			s.RecordData(txnal(1, 6, 0, 1), Client, 2, 2)
			if v := s.CheckMarker(1, 6, commit, 2); v.Err != kerr.InvalidProducerEpoch {
				t.Fatalf("tv2: late marker over a newer transaction: %+v", v)
			}
		}
	}
}

func TestZombieLenience(t *testing.T) {
	s := New()
	s.RecordData(idem(1, 3, 0, 1), Client, 0, 0)
	if v := check(s, idem(1, 2, 0, 1)); v.Err != kerr.InvalidProducerEpoch {
		t.Fatalf("zombie: %+v", v)
	}
	if v := s.CheckData(txnal(1, 2, 0, 1), Client, 0, Lenience{AcceptStaleEpoch: true}); v.Err != nil {
		t.Fatalf("zombie under the planted bug: %+v", v)
	}
}

// The group coordinator writes every TxnOffsetCommit batch at sequence 0,
// as Kafka does: such batches move the producer's epoch and transaction but
// are not cached for duplicate detection, so the cache keeps its invariant
// (contiguous sequences) however many the producer commits in one epoch.
func TestCoordinatorBatchesNotCached(t *testing.T) {
	s := New()
	const pid = 3
	for i := range int64(3) {
		d := txnal(pid, 0, 0, 2)
		g := s.BeginVerification(pid, 0, 0, false)
		if v := s.CheckData(d, Coordinator, g, Lenience{}); v.Err != nil {
			t.Fatalf("commit %d: %+v", i, v)
		}
		s.RecordData(d, Coordinator, 10*i, 10*i+1)
		if !s.HasOngoing(pid, 0) {
			t.Fatalf("commit %d opened no transaction", i)
		}
		if err := s.Invariants(); err != nil {
			t.Fatalf("after commit %d: %v", i, err)
		}
		s.RecordMarker(pid, 0, storage.Marker{Commit: true}, 10*i+2)
	}
	if n := len(s.m[pid].batches); n != 0 {
		t.Fatalf("%d coordinator batches cached", n)
	}
	// A client batch would be cached: one at sequence 0 again is then a
	// retry of it or out of order.
	s.RecordData(txnal(pid, 0, 0, 2), Client, 40, 41)
	s.RecordMarker(pid, 0, storage.Marker{Commit: true}, 42)
	if v := s.CheckData(txnal(pid, 0, 0, 2), Client, 0, Lenience{}); !v.Duplicate || v.FirstOffset != 40 {
		t.Fatalf("client batch retried: %+v", v)
	}
	if v := s.CheckData(txnal(pid, 0, 0, 1), Client, s.BeginVerification(pid, 0, 0, false), Lenience{}); v.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("client batch at sequence 0 again: %+v", v)
	}
}
