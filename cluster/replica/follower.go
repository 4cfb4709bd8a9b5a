package replica

import (
	"fmt"

	"gregor/cluster/faultpoint"
	"gregor/cluster/storage"
)

// FollowerPosition is what a follower's fetcher needs to send its next
// requests.
type FollowerPosition struct {
	Leader      int32
	LeaderEpoch int32
	LEO         int64
	HW          int64
	LogStart    int64
	// LatestEpoch is the last epoch in the log's epoch cache (-1 if none),
	// sent in OffsetForLeaderEpoch.
	LatestEpoch int32
}

// Position returns the follower's fetch position.
func (p *Partition) Position() FollowerPosition {
	p.mu.Lock()
	defer p.mu.Unlock()
	le, ok := p.log.LatestEpoch()
	if !ok {
		le = -1
	}
	return FollowerPosition{Leader: p.state.Leader, LeaderEpoch: p.state.LeaderEpoch,
		LEO: p.log.LEO(), HW: p.hw, LogStart: p.log.StartOffset(), LatestEpoch: le}
}

// IsFollowing reports whether this replica still follows leader in epoch: a
// fetcher stops as soon as it does not.
func (p *Partition) IsFollowing(leader, epoch int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && p.state.Leader == leader && p.state.LeaderEpoch == epoch && leader != p.cfg.NodeID
}

// AppendAsFollower appends batches fetched from the leader (offsets already
// assigned) and takes the leader's HW, bounded by what this replica has.
// It refuses to run unless this replica still follows leader in epoch.
func (p *Partition) AppendAsFollower(leader, epoch int32, records []byte, leaderHW int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.state.Leader != leader || p.state.LeaderEpoch != epoch {
		return fmt.Errorf("%s/%d: no longer following %d in epoch %d", p.Topic, p.Index, leader, epoch)
	}
	if len(records) > 0 {
		// A fetch response may end with a partial batch (the leader cut it
		// at the byte limit); keep only whole batches.
		type seen struct {
			h storage.BatchHeader
			m *storage.Marker
		}
		var whole int
		var hs []seen
		whole, err := storage.ForEachBatchLenient(records, func(h storage.BatchHeader, b []byte) error {
			s := seen{h: h}
			if h.IsControl() {
				m, err := storage.ParseMarker(h, b)
				if err != nil {
					return err
				}
				s.m = &m
			}
			hs = append(hs, s)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s/%d: batch from leader %d: %w", p.Topic, p.Index, leader, err)
		}
		if whole > 0 {
			if err := p.log.Append(records[:whole]); err != nil {
				p.failDir(err)
				return err
			}
			// A follower takes the leader's batches unchecked (Kafka's
			// REPLICATION origin) but keeps the same producer and
			// transaction state, ready to lead.
			for _, s := range hs {
				p.recordBatch(s.h, s.m)
			}
		}
	}
	if hw := min(leaderHW, p.log.LEO()); hw > p.hw {
		p.hw = hw
	}
	p.checkInvariants()
	p.wake()
	return nil
}

// TruncateTo drops this follower's records at offsets >= offset (leader-epoch
// truncation, or HW truncation under the planted bug) and rebuilds what
// derives from them.
func (p *Partition) TruncateTo(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset >= p.log.LEO() {
		return nil
	}
	p.logger().Info("truncating", "from_leo", p.log.LEO(), "to", offset, "hw", p.hw)
	if err := p.log.TruncateTo(offset); err != nil {
		return err
	}
	p.hw = min(p.hw, p.log.LEO())
	if err := p.rebuildProducers(); err != nil {
		return err
	}
	p.checkInvariants()
	p.wake()
	p.hit(faultpoint.FollowerTruncated)
	return nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset, for a
// follower whose log ends before the leader's log start.
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.hw = offset
	p.producers = nil
	if err := p.rebuildProducers(); err != nil {
		return err
	}
	p.checkInvariants()
	p.wake()
	p.hit(faultpoint.FollowerTruncated)
	return nil
}

// EndOffsetForLocalEpoch looks up this replica's own end offset for epoch
// (KIP-279: when the leader answers with an older epoch than asked, the
// follower truncates to the smaller of the two end offsets for that epoch).
func (p *Partition) EndOffsetForLocalEpoch(epoch int32) (int32, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.EndOffsetForEpoch(epoch)
}
