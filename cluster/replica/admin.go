package replica

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DeleteRecordsBefore moves the log start offset on the leader
// (DeleteRecords, KIP-107): offset -1 means the high watermark; an offset
// past the high watermark is OFFSET_OUT_OF_RANGE, as in Kafka's
// UnifiedLog.deleteRecordsBefore ... maybeIncrementLogStartOffset. It returns
// the leader's log start offset after the move. Followers follow it from
// the leader's fetch answers (FollowLogStart).
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, *kerr.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.state.Leader != p.cfg.NodeID {
		return -1, kerr.NotLeaderForPartition
	}
	if offset == -1 {
		offset = p.hw
	}
	if offset < 0 || offset > p.hw {
		return -1, kerr.OffsetOutOfRange
	}
	start, err := p.log.AdvanceStartOffset(offset)
	if err != nil {
		return -1, p.storageErr(err)
	}
	p.wake()
	return start, nil
}

// FollowLogStart moves a follower's log start offset up to the leader's, as
// Kafka's fetcher does with each fetch answer, never past the follower's
// own high watermark.
func (p *Partition) FollowLogStart(leaderStart int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	target := min(leaderStart, p.hw)
	if target <= p.log.StartOffset() {
		return nil
	}
	_, err := p.log.AdvanceStartOffset(target)
	return err
}

// syncFollowers keeps the leader's follower table in step with the
// assignment when replicas change within one leader epoch (a reassignment,
// KIP-455): an added replica gets an entry, as a new leader gives every
// follower, and a removed one loses its entry. Caller holds mu.
func (p *Partition) syncFollowers(now time.Time) {
	if p.followers == nil {
		return
	}
	for _, r := range p.state.Replicas {
		if _, ok := p.followers[r]; !ok && r != p.cfg.NodeID {
			// Not in the ISR: no lag window (as a new leader's non-ISR
			// followers), so it holds no HW back until it catches up.
			p.followers[r] = &follower{leo: -1, leaderLEOAtLastFetch: -1}
		}
	}
	for id := range p.followers {
		if !slices.Contains(p.state.Replicas, id) {
			delete(p.followers, id)
		}
	}
}
