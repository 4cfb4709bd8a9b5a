package producer

import "fmt"

// Invariants returns the first broken invariant of the table, or nil: per
// producer at most CachedBatches batches, oldest first (offsets increase),
// with contiguous sequences. O(producers × CachedBatches).
func (s *State) Invariants() error {
	for pid, e := range s.m {
		if pid == NoProducerID {
			return fmt.Errorf("entry for the non-idempotent producer id %d", pid)
		}
		if len(e.batches) > CachedBatches {
			return fmt.Errorf("producer %d: %d batches cached, at most %d", pid, len(e.batches), CachedBatches)
		}
		for i, b := range e.batches {
			if b.firstOffset > b.lastOffset {
				return fmt.Errorf("producer %d: batch at offsets [%d, %d]", pid, b.firstOffset, b.lastOffset)
			}
			if i == 0 {
				continue
			}
			prev := e.batches[i-1]
			if b.firstOffset <= prev.lastOffset {
				return fmt.Errorf("producer %d: batch at %d not after the one ending at %d", pid, b.firstOffset, prev.lastOffset)
			}
			if b.firstSeq != nextSeq(prev.lastSeq) {
				return fmt.Errorf("producer %d epoch %d: sequence %d follows %d", pid, e.epoch, b.firstSeq, prev.lastSeq)
			}
		}
	}
	return nil
}
