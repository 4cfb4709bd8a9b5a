package producer

import (
	"strings"
	"testing"

	"gregor/cluster/storage"
)

// TestInvariantsCatch breaks each producer-table invariant on purpose.
func TestInvariantsCatch(t *testing.T) {
	// Producer 7 idempotent, 8 with a transaction open at 100, 9 with one
	// aborted at [110, marker 112] and one committed at [113, marker 114].
	healthy := func() *State {
		s := New()
		for i := int32(0); i < CachedBatches+2; i++ {
			s.RecordData(Data{ProducerID: 7, FirstSeq: 2 * i, Records: 2}, Client, int64(10*i), int64(10*i+1))
		}
		s.RecordData(Data{ProducerID: 8, Records: 1, Transactional: true}, Client, 100, 100)
		s.RecordData(Data{ProducerID: 9, Records: 2, Transactional: true}, Client, 110, 111)
		s.RecordMarker(9, 0, storage.Marker{}, 112)
		s.RecordData(Data{ProducerID: 9, FirstSeq: 2, Records: 1, Transactional: true}, Client, 113, 113)
		s.RecordMarker(9, 0, storage.Marker{Commit: true}, 114)
		s.BeginVerification(7, 0, 14, false)
		return s
	}
	if err := healthy().Invariants(); err != nil {
		t.Fatalf("healthy table: %v", err)
	}
	cases := []struct {
		name   string
		break_ func(s *State)
		want   string
	}{
		{"too many batches", func(s *State) { s.m[7].batches = append(s.m[7].batches, batch{}) }, "batches cached"},
		{"offsets reversed", func(s *State) { s.m[7].batches[1].firstOffset = s.m[7].batches[0].lastOffset }, "not after"},
		{"batch inside out", func(s *State) { s.m[7].batches[0].lastOffset = s.m[7].batches[0].firstOffset - 1 }, "batch at offsets"},
		{"sequence gap", func(s *State) { s.m[7].batches[2].firstSeq++ }, "sequence"},
		{"entry for no producer", func(s *State) { s.m[NoProducerID] = &entry{} }, "non-idempotent producer id"},
		{"open transaction unlisted", func(s *State) { delete(s.ongoing, 8) }, "producer 8: open transaction at 100"},
		{"open transaction moved", func(s *State) { s.ongoing[8] = 99 }, "the partition has it at 99"},
		{"listed transaction not open", func(s *State) { s.ongoing[7] = 5 }, "producer 7: open transaction at -1"},
		{"open transaction of nobody", func(s *State) { s.ongoing[42] = 5 }, "unknown producer 42"},
		{"aborted index out of order", func(s *State) {
			s.aborted = append(s.aborted, Txn{ProducerID: 8, FirstOffset: 100, LastOffset: 105, Aborted: true})
		}, "aborted index: marker 105 listed after marker 112"},
		{"marker before its data", func(s *State) { s.aborted[0].LastOffset = 110 }, "aborted index: producer 9's transaction"},
		{"completed out of order", func(s *State) { s.unreplicated[0], s.unreplicated[1] = s.unreplicated[1], s.unreplicated[0] }, "completed transactions: marker 112 listed after marker 114"},
		{"guard never handed out", func(s *State) { s.verifying[7].guard = s.nextGuard + 1 }, "never handed out"},
	}
	for _, c := range cases {
		s := healthy()
		c.break_(s)
		if err := s.Invariants(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: check said %v, want %q", c.name, err, c.want)
		}
	}
}
