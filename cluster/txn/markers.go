package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/faultpoint"
	"gregor/internal/sleep"
)

// startCompletionLocked prepares the Complete state of a transaction whose
// Prepare state is durable and writes its markers in the background, then
// the Complete state (TransactionMarkerChannelManager.addTxnMarkersToSend).
// While it runs the pending Complete state answers everything else with
// CONCURRENT_TRANSACTIONS. Caller holds s.mu.
func (s *shard) startCompletionLocked(m *Meta) {
	commit := m.State == PrepareCommit
	markers := Markers{ProducerID: m.ProducerID, Epoch: m.Epoch, Commit: commit, CoordinatorEpoch: s.epoch, Version: m.Version}
	t := m.prepareComplete(s.nowMs())
	if commit {
		faultpoint.Hit(faultpoint.PrepareCommitDurable, faultpoint.Attrs{Node: s.c.cfg.Node, Txn: m.ID})
	}
	s.c.background(func() { s.complete(m, markers, t) })
}

// complete writes the markers until every partition has one (retried until
// written, as Kafka's marker channel does; bounded by the shard's life),
// then the Complete state (retried while the log is unavailable).
func (s *shard) complete(m *Meta, mk Markers, t Transit) {
	log := s.c.cfg.Logger.With("txn", m.ID, "producer", mk.ProducerID, "epoch", mk.Epoch, "commit", mk.Commit)
	for round := 0; ; round++ {
		s.mu.Lock()
		if s.unloaded || s.txns[m.ID] != m || m.pending != t.State {
			s.unlock()
			return
		}
		mk.Partitions = m.SortedPartitions()
		s.unlock()
		if len(mk.Partitions) == 0 {
			break
		}
		res := s.c.env.WriteMarkers(s.ctx, mk)
		s.mu.Lock()
		if s.unloaded || s.txns[m.ID] != m {
			s.unlock()
			return
		}
		for tp, err := range res {
			var ke *kerr.Error
			switch {
			case err == nil || errors.Is(err, ErrPartitionGone):
				delete(m.Partitions, tp)
			case errors.As(err, &ke) && (ke == kerr.InvalidProducerEpoch || ke == kerr.TransactionCoordinatorFenced):
				// The producer or coordinator moved on: Kafka stops sending
				// and leaves the transaction to the next coordinator.
				s.unlock()
				log.Warn("transaction marker refused; no longer sending", "partition", tp.String(), "err", err)
				return
			default:
				if round%50 == 49 {
					log.Warn("transaction marker not written yet; retrying", "partition", tp.String(), "rounds", round+1, "err", err)
				}
			}
		}
		left := len(m.Partitions)
		s.unlock()
		if left > 0 && !sleep.For(s.ctx, s.c.cfg.MarkerBackoff) {
			return
		}
	}
	log.Info("transaction markers written", "coordinator_epoch", mk.CoordinatorEpoch)
	faultpoint.Hit(faultpoint.MarkersWritten, faultpoint.Attrs{Node: s.c.cfg.Node, Txn: m.ID})
	for {
		e := s.write(s.ctx, m, t, true)
		switch {
		case e == nil:
			return
		case e == kerr.CoordinatorNotAvailable:
			if !sleep.For(s.ctx, s.c.cfg.MarkerBackoff) {
				return
			}
		default:
			// NOT_COORDINATOR: the next coordinator completes it on load.
			log.Info("not completing transaction", "err", e)
			return
		}
	}
}
