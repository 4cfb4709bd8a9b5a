package replica

import (
	"fmt"
	"slices"

	"gregor/cluster/invariant"
)

// hwMark is the HW a leader had at the last check, in the epoch it led:
// what the check "HW never decreases within a leader epoch" compares with.
// Only kept while invariant checks are on.
type hwMark struct {
	leading bool
	epoch   int32
	hw      int64
}

// checkInvariants panics on a broken invariant: continuing would corrupt
// what the harness is testing. HW <= LEO costs one comparison and runs
// always; the rest run when invariant checks are on (tests). Caller holds
// mu, after every change of the partition's state.
func (p *Partition) checkInvariants() {
	if invariant.On() {
		invariant.Must(fmt.Sprintf("replica %s/%d on node %d", p.Topic, p.Index, p.cfg.NodeID), p.invariants())
		return
	}
	if leo, broken := p.hwPastLEO(); broken {
		panic(fmt.Sprintf("%s/%d: invariant HW <= LEO broken: hw=%d leo=%d", p.Topic, p.Index, p.hw, leo))
	}
}

// hwPastLEO is the check that runs always: the HW past the log's end. A
// closed log is not checked (its LEO reads -1, and nothing changes any
// more): a refusal of an ISR change answered after the partition closed
// (ClearPendingISR, a kill racing the AlterPartition round trip) took a
// sim run down with hw=815 leo=-1. Caller holds mu.
func (p *Partition) hwPastLEO() (leo int64, broken bool) {
	if p.closed {
		return 0, false
	}
	leo = p.log.LEO()
	return leo, p.hw > leo
}

// invariants returns the first broken invariant, or nil. It records the HW
// for the next call's monotonicity check. Caller holds mu.
func (p *Partition) invariants() error {
	if p.closed {
		return nil // the log is closed; nothing changes any more
	}
	leo := p.log.LEO()
	if p.hw < 0 || p.hw > leo {
		return fmt.Errorf("HW %d outside [0, LEO %d]", p.hw, leo)
	}
	me := p.cfg.NodeID
	leading := p.state.Leader == me
	// A replica the controller has not told anything yet holds the
	// placeholder Open made (no replicas, epoch -1): nothing to check.
	if len(p.state.Replicas) > 0 {
		if err := p.state.Check(); err != nil {
			return fmt.Errorf("published state %+v: %w", p.state, err)
		}
		if !p.state.IsReplica(me) {
			return fmt.Errorf("node %d holds a replica but is not in replicas %v", me, p.state.Replicas)
		}
	}
	m := p.hwMark
	if leading && m.leading && m.epoch == p.state.LeaderEpoch && p.hw < m.hw {
		return fmt.Errorf("leader's HW went back from %d to %d in epoch %d", m.hw, p.hw, m.epoch)
	}
	p.hwMark = hwMark{leading: leading, epoch: p.state.LeaderEpoch, hw: p.hw}
	if err := p.followerInvariants(leading, leo); err != nil {
		return err
	}
	if err := p.producers.Invariants(); err != nil {
		return fmt.Errorf("producer state: %w", err)
	}
	return p.lsoInvariants(p.lso())
}

// lsoInvariants: the LSO is at most the HW; no transaction a read_committed
// reader may not pass yet (open, or its marker not below the HW) starts
// below it; and it is the HW or the first offset of one of those, so it is
// never lower than it must be either (Kafka's UnifiedLog.lastStableOffset).
// The LSO is derived, not stored: the check takes it as computed, so that a
// test can hand it a wrong one. Caller holds mu.
func (p *Partition) lsoInvariants(lso int64) error {
	if lso > p.hw {
		return fmt.Errorf("LSO %d past the HW %d", lso, p.hw)
	}
	if p.cfg.Bugs.LSOPastOpenTxn {
		// The planted bug breaks the rest on purpose: the harness, not
		// this check, must catch it.
		return nil
	}
	tight := lso == p.hw
	for _, t := range p.producers.Unstable(p.hw) {
		if t.FirstOffset < lso {
			return fmt.Errorf("LSO %d past producer %d's transaction from %d (marker %d, -1 while open; HW %d)", lso, t.ProducerID, t.FirstOffset, t.LastOffset, p.hw)
		}
		tight = tight || t.FirstOffset == lso
	}
	if !tight {
		return fmt.Errorf("LSO %d is neither the HW %d nor where an unstable transaction starts", lso, p.hw)
	}
	return nil
}

// followerInvariants: a leader tracks exactly its other replicas, each at
// an offset it can have fetched from; a pending ISR keeps the leader and
// stays within the replicas. A follower tracks nobody.
func (p *Partition) followerInvariants(leading bool, leo int64) error {
	me := p.cfg.NodeID
	if !leading {
		if p.followers != nil || p.pendingISR != nil || p.epochStart != -1 {
			return fmt.Errorf("not leading, yet tracking followers %d / pending ISR %v / epoch start %d", len(p.followers), p.pendingISR, p.epochStart)
		}
		return nil
	}
	if p.epochStart < 0 || p.epochStart > leo {
		return fmt.Errorf("leader's epoch start offset %d outside [0, LEO %d]", p.epochStart, leo)
	}
	if len(p.followers) != len(p.state.Replicas)-1 {
		return fmt.Errorf("leader tracks %d followers for replicas %v", len(p.followers), p.state.Replicas)
	}
	for id, f := range p.followers {
		if id == me || !p.state.IsReplica(id) {
			return fmt.Errorf("leader tracks %d, not another replica of %v", id, p.state.Replicas)
		}
		// A follower's fetch offset is its LEO; the leader refuses one
		// past its own LEO, and a leader's LEO never shrinks in its epoch.
		if f.leo < -1 || f.leo > leo {
			return fmt.Errorf("follower %d at offset %d outside [-1, leader LEO %d]", id, f.leo, leo)
		}
		if f.leaderLEOAtLastFetch > leo {
			return fmt.Errorf("follower %d fetched when the leader's LEO was %d, past today's %d", id, f.leaderLEOAtLastFetch, leo)
		}
		// Before its first fetch in an epoch, an ISR member holds the lag
		// window its new leader gave it, later than no fetch at all.
		if !f.lastFetch.IsZero() && f.lastCaughtUp.After(f.lastFetch) {
			return fmt.Errorf("follower %d caught up at %v, after its last fetch at %v", id, f.lastCaughtUp, f.lastFetch)
		}
	}
	if p.pendingISR != nil {
		if !slices.Contains(p.pendingISR, me) {
			return fmt.Errorf("pending ISR %v drops the leader %d", p.pendingISR, me)
		}
		for _, r := range p.pendingISR {
			if !p.state.IsReplica(r) {
				return fmt.Errorf("pending ISR %v not within replicas %v", p.pendingISR, p.state.Replicas)
			}
		}
	}
	return nil
}
