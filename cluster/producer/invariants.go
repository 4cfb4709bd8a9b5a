package producer

import "fmt"

// Invariants returns the first broken invariant of the table, or nil: per
// producer at most CachedBatches batches, oldest first (offsets increase),
// with contiguous sequences; each open transaction recorded both on its
// producer and in the partition's ongoing set; completed transactions and
// the aborted index in marker order, each marker after its transaction's
// first offset; verification guards already handed out.
// O(producers × CachedBatches + transactions).
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
		if off, ok := s.ongoing[pid]; e.txnFirst < -1 || (e.txnFirst >= 0) != ok || ok && off != e.txnFirst {
			return fmt.Errorf("producer %d: open transaction at %d, the partition has it at %d (listed %v)", pid, e.txnFirst, off, ok)
		}
	}
	for pid := range s.ongoing {
		if s.m[pid] == nil {
			return fmt.Errorf("open transaction of unknown producer %d", pid)
		}
	}
	if err := markerOrder("completed transactions", s.unreplicated); err != nil {
		return err
	}
	if err := markerOrder("aborted index", s.aborted); err != nil {
		return err
	}
	for pid, v := range s.verifying {
		if v.guard == 0 || v.guard > s.nextGuard {
			return fmt.Errorf("producer %d: verification guard %d never handed out (last %d)", pid, v.guard, s.nextGuard)
		}
	}
	return nil
}

// markerOrder: completed transactions listed by marker offset, strictly
// ascending (one marker ends one transaction), each marker after the
// transaction's first record.
func markerOrder(what string, ts []Txn) error {
	for i, t := range ts {
		if t.FirstOffset < 0 || t.LastOffset <= t.FirstOffset {
			return fmt.Errorf("%s: producer %d's transaction at [%d, marker %d]", what, t.ProducerID, t.FirstOffset, t.LastOffset)
		}
		if i > 0 && t.LastOffset <= ts[i-1].LastOffset {
			return fmt.Errorf("%s: marker %d listed after marker %d", what, t.LastOffset, ts[i-1].LastOffset)
		}
	}
	return nil
}
