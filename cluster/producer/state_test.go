package producer

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSequences(t *testing.T) {
	s := New()
	const pid = 7
	if v := s.Check(pid, 0, 0, 3); v.Err != nil || v.Duplicate {
		t.Fatalf("first batch: %+v", v)
	}
	s.Record(pid, 0, 0, 3, 100, 102)
	// A retry of the same batch is a duplicate answered with its offsets.
	if v := s.Check(pid, 0, 0, 3); !v.Duplicate || v.FirstOffset != 100 || v.LastOffset != 102 {
		t.Fatalf("retry: %+v", v)
	}
	// The next batch follows.
	if v := s.Check(pid, 0, 3, 2); v.Err != nil || v.Duplicate {
		t.Fatalf("next: %+v", v)
	}
	// A gap is out of order.
	if v := s.Check(pid, 0, 5, 1); v.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("gap: %+v", v)
	}
	// An old epoch is fenced; a new epoch must restart at 0.
	s.Record(pid, 0, 3, 2, 103, 104)
	if v := s.Check(pid, 0, 5, 1); v.Err != nil {
		t.Fatalf("in order after record: %+v", v)
	}
	if v := s.Check(pid, 1, 4, 1); v.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("new epoch non-zero: %+v", v)
	}
	s.Record(pid, 1, 0, 1, 105, 105)
	if v := s.Check(pid, 0, 5, 1); v.Err != kerr.InvalidProducerEpoch {
		t.Fatalf("stale epoch: %+v", v)
	}
	// Unknown producer with a non-zero sequence.
	if v := s.Check(99, 0, 4, 1); v.Err != kerr.UnknownProducerID {
		t.Fatalf("unknown: %+v", v)
	}
	// Non-idempotent batches are never checked.
	if v := s.Check(NoProducerID, 0, 4, 1); v.Err != nil || v.Duplicate {
		t.Fatalf("non-idempotent: %+v", v)
	}
}

func TestOnlyLastFiveCached(t *testing.T) {
	s := New()
	for i := int32(0); i < 8; i++ {
		s.Record(1, 0, i, 1, int64(i), int64(i))
	}
	if v := s.Check(1, 0, 2, 1); v.Duplicate {
		t.Fatalf("batch 2 should have left the cache: %+v", v)
	}
	if v := s.Check(1, 0, 3, 1); !v.Duplicate || v.FirstOffset != 3 {
		t.Fatalf("batch 3 should be cached: %+v", v)
	}
}

func TestSequenceWrap(t *testing.T) {
	if got := LastSeq(math.MaxInt32, 2); got != 0 {
		t.Fatalf("LastSeq wrap = %d", got)
	}
	s := New()
	s.Record(1, 0, 0, 1, 0, 0)
	s.m[1].batches[0].lastSeq = math.MaxInt32 - 1
	if v := s.Check(1, 0, math.MaxInt32, 3); v.Err != nil {
		t.Fatalf("wrap batch: %+v", v)
	}
}
