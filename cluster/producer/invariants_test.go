package producer

import (
	"strings"
	"testing"
)

// TestInvariantsCatch breaks each producer-table invariant on purpose.
func TestInvariantsCatch(t *testing.T) {
	healthy := func() *State {
		s := New()
		for i := int32(0); i < CachedBatches+2; i++ {
			s.RecordData(Data{ProducerID: 7, FirstSeq: 2 * i, Records: 2}, Client, int64(10*i), int64(10*i+1))
		}
		return s
	}
	if err := healthy().Invariants(); err != nil {
		t.Fatalf("healthy table: %v", err)
	}
	cases := []struct {
		name   string
		break_ func(e *entry)
		want   string
	}{
		{"too many batches", func(e *entry) { e.batches = append(e.batches, batch{}) }, "batches cached"},
		{"offsets reversed", func(e *entry) { e.batches[1].firstOffset = e.batches[0].lastOffset }, "not after"},
		{"batch inside out", func(e *entry) { e.batches[0].lastOffset = e.batches[0].firstOffset - 1 }, "batch at offsets"},
		{"sequence gap", func(e *entry) { e.batches[2].firstSeq++ }, "sequence"},
	}
	for _, c := range cases {
		s := healthy()
		c.break_(s.m[7])
		if err := s.Invariants(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: check said %v, want %q", c.name, err, c.want)
		}
	}
	s := healthy()
	s.m[NoProducerID] = &entry{}
	if err := s.Invariants(); err == nil {
		t.Error("entry for producer id -1 not caught")
	}
}
