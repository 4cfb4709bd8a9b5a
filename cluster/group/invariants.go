package group

import (
	"fmt"

	"gregor/cluster/invariant"
)

// unlock releases the shard lock after checking, when checks are on, the
// invariants of every group of the shard: every change of group state
// happens under that lock, so this runs after every change. The lock is
// released before a violation panics, so that a test recovering from the
// panic can still close the coordinator.
func (s *shard) unlock() {
	var err error
	if invariant.On() {
		err = s.invariants()
	}
	s.mu.Unlock()
	invariant.Must(fmt.Sprintf("group coordinator of __consumer_offsets/%d", s.partition), err)
}

// invariants returns the first broken invariant of the shard or its groups.
// O(groups × members). Caller holds mu.
func (s *shard) invariants() error {
	if s.unloaded && len(s.groups) > 0 {
		return fmt.Errorf("unloaded, yet holding %d groups", len(s.groups))
	}
	if len(s.lateMarkers) > 0 && !s.loading {
		return fmt.Errorf("%d transaction ends held back, yet loaded", len(s.lateMarkers))
	}
	for id, g := range s.groups {
		if g.id != id {
			return fmt.Errorf("group %q stored as %q", g.id, id)
		}
		if err := g.invariants(); err != nil {
			return fmt.Errorf("group %q (%s, generation %d): %w", id, g.state, g.generation, err)
		}
	}
	return nil
}

// invariants checks the membership, generation and rebalance-state
// invariants written on Group and member. It records the generation for the
// next call's monotonicity check. Caller holds the shard lock.
func (g *Group) invariants() error {
	if g.generation < g.checkedGeneration {
		return fmt.Errorf("generation went back from %d to %d", g.checkedGeneration, g.generation)
	}
	g.checkedGeneration = g.generation
	if g.leader != "" && g.members[g.leader] == nil {
		return fmt.Errorf("leader %q is not a member", g.leader)
	}
	for inst, id := range g.static {
		m := g.members[id]
		if m == nil || m.instanceID == nil || *m.instanceID != inst {
			return fmt.Errorf("group.instance.id %q held by %q, which is not a member with that instance id", inst, id)
		}
	}
	for id := range g.pending {
		if g.members[id] != nil {
			return fmt.Errorf("member %q both pending and joined", id)
		}
	}
	switch g.state {
	case Empty, Dead:
		if len(g.members) > 0 || g.leader != "" {
			return fmt.Errorf("%d members and leader %q in state %s", len(g.members), g.leader, g.state)
		}
	case CompletingRebalance, Stable:
		// completeJoin chose a leader and a protocol every member supports;
		// a join that changes either starts a new rebalance.
		if g.leader == "" || g.protocol == "" {
			return fmt.Errorf("no leader (%q) or protocol (%q) after the join phase", g.leader, g.protocol)
		}
	case PreparingRebalance:
	default:
		return fmt.Errorf("unknown state %q", g.state)
	}
	if g.syncing && g.state != CompletingRebalance {
		return fmt.Errorf("assignment being written in state %s", g.state)
	}
	if len(g.members) > 0 && !g.known {
		return fmt.Errorf("%d members but not known", len(g.members))
	}
	for id, m := range g.members {
		if err := g.memberInvariants(id, m); err != nil {
			return fmt.Errorf("member %q: %w", id, err)
		}
	}
	if g.cg != nil {
		if len(g.members) > 0 || len(g.pending) > 0 || g.state != Empty {
			return fmt.Errorf("a consumer group with %d classic members in state %s", len(g.members), g.state)
		}
		if err := g.cg.invariants(); err != nil {
			return fmt.Errorf("consumer group (epoch %d, assignment epoch %d): %w", g.cg.epoch, g.cg.assignmentEpoch, err)
		}
	}
	for pid, ws := range g.txnWrites {
		if len(ws) == 0 {
			return fmt.Errorf("no transactional offset write out for producer %d", pid)
		}
	}
	for pid, pending := range g.txnOffsets {
		if pid < 0 || len(pending) == 0 {
			return fmt.Errorf("%d transactional offsets pending for producer %d", len(pending), pid)
		}
		for k, v := range pending {
			if v.logOffset < 0 {
				return fmt.Errorf("producer %d's transactional offset for %v at log offset %d", pid, k, v.logOffset)
			}
		}
	}
	return nil
}

// memberInvariants: a member is keyed by its id, holds its instance id in
// static, supports the chosen protocol after the join phase, and a parked
// answer is a buffered channel nobody sent to yet, parked only in the state
// that answers it (JoinGroup in PreparingRebalance, SyncGroup in
// CompletingRebalance).
func (g *Group) memberInvariants(id string, m *member) error {
	if m.id != id {
		return fmt.Errorf("stored under another id, its own is %q", m.id)
	}
	if m.instanceID != nil && g.static[*m.instanceID] != id {
		return fmt.Errorf("group.instance.id %q maps to %q", *m.instanceID, g.static[*m.instanceID])
	}
	if (g.state == CompletingRebalance || g.state == Stable) && !m.supports(g.protocol) {
		return fmt.Errorf("does not support the group's protocol %q", g.protocol)
	}
	if m.joinWait != nil && (cap(m.joinWait) != 1 || len(m.joinWait) != 0 || g.state != PreparingRebalance) {
		return fmt.Errorf("parked JoinGroup (capacity %d, %d sent) in state %s", cap(m.joinWait), len(m.joinWait), g.state)
	}
	if m.syncWait != nil && (cap(m.syncWait) != 1 || len(m.syncWait) != 0 || g.state != CompletingRebalance) {
		return fmt.Errorf("parked SyncGroup (capacity %d, %d sent) in state %s", cap(m.syncWait), len(m.syncWait), g.state)
	}
	return nil
}

// invariants checks the epochs and the partition ownership of a KIP-848
// group: assignmentEpoch <= epoch, no member past the target epoch, each
// member's assigned and pending partitions disjoint and in owners under
// its id, pending partitions only while unrevoked, and no partition held
// by two members (revoke before assign) unless the planted bug is on.
func (cg *consumerGroup) invariants() error {
	if cg.assignmentEpoch > cg.epoch {
		return fmt.Errorf("target assignment epoch %d past the group epoch %d", cg.assignmentEpoch, cg.epoch)
	}
	held := 0
	for id, m := range cg.members {
		switch {
		case m.id != id:
			return fmt.Errorf("member %q stored as %q", m.id, id)
		case m.epoch > cg.assignmentEpoch:
			return fmt.Errorf("member %q at epoch %d, past the target assignment epoch %d", id, m.epoch, cg.assignmentEpoch)
		case m.epoch < m.prevEpoch && !m.left:
			return fmt.Errorf("member %q epoch %d below its previous epoch %d", id, m.epoch, m.prevEpoch)
		case len(m.pendingRevocation) > 0 && m.state != memberUnrevoked:
			return fmt.Errorf("member %q has partitions pending revocation in state %s", id, m.state)
		}
		var err error
		for _, a := range []assignment{m.assigned, m.pendingRevocation} {
			a.each(func(t topicID, p int32) {
				held++
				if err == nil && cg.owners[tp{t, p}] != id && !cg.bugged {
					err = fmt.Errorf("member %q holds %x/%d, owned by %q", id, t[:4], p, cg.owners[tp{t, p}])
				}
			})
		}
		if err != nil {
			return err
		}
		if ownsAny(m.assigned, m.pendingRevocation) {
			return fmt.Errorf("member %q has partitions both assigned and pending revocation", id)
		}
	}
	if held != len(cg.owners) && !cg.bugged {
		return fmt.Errorf("%d partitions held by members, %d owned", held, len(cg.owners))
	}
	return nil
}
