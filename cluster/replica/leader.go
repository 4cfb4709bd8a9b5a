package replica

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/faultpoint"
	"gregor/cluster/meta"
)

// OffsetAnswer is a ListOffsets answer for one partition.
type OffsetAnswer struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
	Err         *kerr.Error
}

// ListOffset answers ListOffsets: -2 earliest, -1 latest (the HW, or the LSO
// for read_committed), else by timestamp below that bound.
func (p *Partition) ListOffset(ts int64, currentLeaderEpoch int32, iso Isolation) OffsetAnswer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.Leader != p.cfg.NodeID {
		return OffsetAnswer{Err: kerr.NotLeaderForPartition}
	}
	if e := checkEpoch(currentLeaderEpoch, p.state.LeaderEpoch); e != nil {
		return OffsetAnswer{Err: e}
	}
	a := OffsetAnswer{Timestamp: -1, LeaderEpoch: p.state.LeaderEpoch}
	end := p.hw
	if iso == ReadCommitted {
		end = p.lso()
	}
	// KIP-207 (Kafka's Partition.fetchOffsetForTimestamp): a new leader's
	// HW is the one it learned as a follower until its followers fetch from
	// it; answering it as the end would move a client's end offset back
	// below records the previous leader acknowledged, and a reader that
	// stops there misses them. It answers OFFSET_NOT_AVAILABLE (retriable)
	// until the HW reaches the start of its epoch.
	lagging := p.epochStart > p.hw
	switch ts {
	case -2:
		a.Offset = p.log.StartOffset()
	case -1:
		if lagging {
			return OffsetAnswer{Err: kerr.OffsetNotAvailable}
		}
		a.Offset = end
	default:
		off, t, ok := p.log.OffsetForTimestamp(ts)
		if !ok || off >= end {
			if lagging {
				return OffsetAnswer{Err: kerr.OffsetNotAvailable}
			}
			a.Offset = -1
			return a
		}
		a.Offset, a.Timestamp = off, t
	}
	return a
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch on the leader.
func (p *Partition) EndOffsetForEpoch(epoch, currentLeaderEpoch int32) (int32, int64, *kerr.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.Leader != p.cfg.NodeID {
		return -1, -1, kerr.NotLeaderForPartition
	}
	if e := checkEpoch(currentLeaderEpoch, p.state.LeaderEpoch); e != nil {
		return -1, -1, e
	}
	fe, end := p.log.EndOffsetForEpoch(epoch)
	return fe, end, nil
}

// ReadForFollower serves a follower's fetch: its fetch offset is its LEO,
// which may advance the HW and bring it back into the ISR; it reads up to
// the leader's LEO.
func (p *Partition) ReadForFollower(replicaID int32, offset int64, maxBytes int, currentLeaderEpoch int32) ReadResult {
	p.mu.Lock()
	res := ReadResult{HW: p.hw, LEO: p.log.LEO(), LogStart: p.log.StartOffset()}
	if p.state.Leader != p.cfg.NodeID {
		p.mu.Unlock()
		res.Err = kerr.NotLeaderForPartition
		return res
	}
	if e := checkEpoch(currentLeaderEpoch, p.state.LeaderEpoch); e != nil {
		p.mu.Unlock()
		res.Err = e
		return res
	}
	f := p.followers[replicaID]
	if f == nil || !meta.Contains(p.state.Replicas, replicaID) {
		p.mu.Unlock()
		res.Err = kerr.NotLeaderForPartition // Kafka: UNKNOWN_... for non-replicas
		return res
	}
	leo := res.LEO
	if offset < res.LogStart || offset > leo {
		p.mu.Unlock()
		res.Err = kerr.OffsetOutOfRange
		return res
	}
	now := p.now()
	switch {
	case offset >= leo:
		f.lastCaughtUp = now
	case offset >= f.leaderLEOAtLastFetch && !f.lastFetch.IsZero():
		f.lastCaughtUp = f.lastFetch
	}
	f.leaderLEOAtLastFetch = leo
	f.lastFetch = now
	f.leo = offset
	p.maybeAdvanceHW()
	expand := p.maybeExpandISR(replicaID, f)
	p.checkInvariants()
	res.HW, res.LSO = p.hw, p.lso()
	p.mu.Unlock()
	expand()
	recs, err := p.log.Read(offset, maxBytes, leo)
	if err != nil {
		res.Err = p.storageErr(err)
		return res
	}
	res.Records = recs
	return res
}

// maybeExpandISR asks the controller to add a follower that has caught up
// to the HW within the current leader epoch. Caller holds mu; the returned
// func runs the request after unlock.
func (p *Partition) maybeExpandISR(id int32, f *follower) func() {
	if meta.Contains(p.state.ISR, id) || p.pendingISR != nil || p.cfg.AlterISR == nil {
		return func() {}
	}
	// Kafka's rule: the follower's LEO has reached the HW and the start of
	// the leader's current epoch, so it has everything the ISR acknowledged.
	epochStart := p.hw
	if es := p.log.Epochs(); len(es) > 0 {
		epochStart = es[len(es)-1].StartOffset
	}
	if f.leo < p.hw || f.leo < epochStart {
		return func() {}
	}
	newISR := append(slices.Clone(p.state.ISR), id)
	slices.Sort(newISR)
	return p.requestISR(newISR)
}

// requestISR records a pending ISR change and returns the call to make
// without the lock. Caller holds mu.
func (p *Partition) requestISR(newISR []int32) func() {
	p.pendingISR = newISR
	st := p.state
	alter := p.cfg.AlterISR
	p.logger().Info("requesting isr change", "from", st.ISR, "to", newISR, "epoch", st.LeaderEpoch)
	return func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			alter(ctx, st, newISR)
		}()
		for _, r := range newISR {
			if !meta.Contains(st.ISR, r) { // the follower asked for (AimAbout)
				faultpoint.Hit(faultpoint.ISRExpandRequested, faultpoint.Attrs{Node: p.cfg.NodeID, Topic: p.Topic, Partition: p.Index, Broker: r})
			}
		}
	}
}

// ClearPendingISR forgets a pending ISR change the controller refused, so the
// next check may ask again. sent is the state the refused request was made
// from: once a newer state was published, Update has already dropped that
// request's pending ISR, and the one pending now belongs to a later request,
// which this refusal must not clear.
func (p *Partition) ClearPendingISR(sent meta.Partition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.state.LeaderEpoch != sent.LeaderEpoch || p.state.PartitionEpoch != sent.PartitionEpoch {
		return // a closed log's HW no longer moves
	}
	p.pendingISR = nil
	p.maybeAdvanceHW()
	p.checkInvariants()
}

// MaybeShrinkISR removes followers that have not been caught up for
// ReplicaLagMax (replica.lag.time.max.ms). Called periodically by the broker.
// It reports whether a change was requested.
//
// As Kafka's Partition.getOutOfSyncReplicas (ReplicaState.isCaughtUp): a
// follower whose last fetch reached the leader's LEO is never out of sync,
// however long ago that fetch was. On an idle partition a follower that
// stopped fetching stays in the ISR until a write leaves it behind, or until
// the controller fences its broker (which takes it out of every ISR).
func (p *Partition) MaybeShrinkISR() bool {
	p.mu.Lock()
	if p.closed || p.state.Leader != p.cfg.NodeID || p.pendingISR != nil || p.cfg.AlterISR == nil {
		p.mu.Unlock()
		return false
	}
	now := p.now()
	leo := p.log.LEO()
	var keep []int32
	for _, r := range p.state.ISR {
		if r == p.cfg.NodeID {
			keep = append(keep, r)
			continue
		}
		f := p.followers[r]
		if f != nil && (f.leo == leo || now.Sub(f.lastCaughtUp) <= p.cfg.ReplicaLagMax) {
			keep = append(keep, r)
		}
	}
	if len(keep) == len(p.state.ISR) {
		p.mu.Unlock()
		return false
	}
	call := p.requestISR(keep)
	p.checkInvariants()
	p.mu.Unlock()
	call()
	return true
}

// FollowerLag reports, on the leader, each follower's lag in offsets behind
// the leader's LEO (the ReplicaFetcherLag metric, seen from the leader).
func (p *Partition) FollowerLag() map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.Leader != p.cfg.NodeID {
		return nil
	}
	leo := p.log.LEO()
	out := make(map[int32]int64, len(p.followers))
	for id, f := range p.followers {
		if f.leo < 0 {
			out[id] = leo
		} else {
			out[id] = leo - f.leo
		}
	}
	return out
}
