package txn

import (
	"fmt"
	"slices"

	"gregor/cluster/invariant"
)

// unlock releases the shard lock after checking, when checks are on, the
// invariants of the shard and every transaction's metadata: every change of
// either happens under that lock, so this runs after every change. The lock
// is released before a violation panics, so that a test recovering from the
// panic can still close the coordinator.
func (s *shard) unlock() {
	var err error
	if invariant.On() {
		err = s.invariants()
	}
	s.mu.Unlock()
	invariant.Must(fmt.Sprintf("transaction coordinator of %s/%d", Topic, s.partition), err)
}

// invariants returns the first broken invariant of the shard or its
// transactions. O(transactional ids × partitions). Caller holds mu.
func (s *shard) invariants() error {
	if (s.unloaded || s.loading) && len(s.txns) > 0 {
		return fmt.Errorf("holding %d transactional ids while loading (%v) or unloaded (%v)", len(s.txns), s.loading, s.unloaded)
	}
	for id, m := range s.txns {
		if m.ID != id {
			return fmt.Errorf("transactional id %q stored as %q", m.ID, id)
		}
		if err := m.invariants(); err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
	}
	return nil
}

// checkedMeta is what a transaction's metadata was at the last check: what
// the transition and epoch checks compare with. Only kept while invariant
// checks are on.
type checkedMeta struct {
	seen       bool
	state      State
	producerID int64
	epoch      int16
}

// invariants checks the state machine of TransactionMetadata: a known
// state (PrepareEpochFence is only ever on the way to PrepareAbort, never
// held); a pending state that may follow the current one; no partitions
// outside a transaction (Empty, Complete*, Dead); an epoch only before the
// first InitProducerId is none; and since the last check only a legal
// transition (validPrevious), the epoch never lower for the same producer
// id, and a new producer id only at epoch 0 after the old one (a rotation).
// Every transition happens in one hold of the shard lock, so consecutive
// checks see at most one. It records what it saw for the next call. Caller
// holds the shard lock.
func (m *Meta) invariants() error {
	if _, ok := validPrevious[m.State]; !ok || m.State == PrepareEpochFence {
		return fmt.Errorf("in state %q", m.State)
	}
	if m.pending != "" && (m.pending == PrepareEpochFence || !slices.Contains(validPrevious[m.pending], m.State)) {
		return fmt.Errorf("pending %s cannot follow %s", m.pending, m.State)
	}
	switch m.State {
	case Empty, CompleteCommit, CompleteAbort, Dead:
		if len(m.Partitions) > 0 {
			return fmt.Errorf("partitions %v in state %s", m.SortedPartitions(), m.State)
		}
	}
	if m.Epoch < 0 && (m.Epoch != noEpoch || m.State != Empty) {
		return fmt.Errorf("epoch %d in state %s", m.Epoch, m.State)
	}
	if c := m.checked; c.seen {
		if m.State != c.state && !slices.Contains(validPrevious[m.State], c.state) {
			return fmt.Errorf("moved from %s to %s", c.state, m.State)
		}
		switch {
		case m.ProducerID == c.producerID && m.Epoch < c.epoch:
			return fmt.Errorf("epoch went back from %d to %d", c.epoch, m.Epoch)
		case m.ProducerID != c.producerID && (m.Epoch != 0 || m.PrevProducerID != c.producerID):
			return fmt.Errorf("producer id %d replaced %d at epoch %d (previous id %d): a new id starts at epoch 0 and follows the old", m.ProducerID, c.producerID, m.Epoch, m.PrevProducerID)
		}
	}
	m.checked = checkedMeta{seen: true, state: m.State, producerID: m.ProducerID, epoch: m.Epoch}
	return nil
}
