package group

import "github.com/twmb/franz-go/pkg/kerr"

// reconcile is Kafka's CurrentAssignmentBuilder.build: it moves a member's
// current assignment towards its target. owned is what the member reports
// owning (nil: a heartbeat that did not say, which counts as still owning
// everything). A partition pending revocation is given to nobody else until
// the member reports it gone; a partition another member still holds is
// not given until it is released (UNRELEASED_PARTITIONS). Returns whether
// the member changed. Caller holds the shard lock.
func (s *shard) reconcile(g *Group, m *cmember, owned assignment) (bool, *kerr.Error) {
	cg := g.cg
	before := *m
	switch m.state {
	case memberStable:
		if m.epoch == cg.assignmentEpoch {
			return false, nil
		}
		s.nextAssignment(g, m, m.epoch, owned)
	case memberUnrevoked:
		if ownsAny(owned, m.pendingRevocation) {
			return false, nil
		}
		// Revoked: the partitions are free; move to the next epoch.
		m.pendingRevocation = assignment{}
		cg.release(m)
		cg.claim(m)
		s.nextAssignment(g, m, m.epoch+1, owned)
	case memberUnreleased:
		s.nextAssignment(g, m, m.epoch, owned)
	default:
		return false, kerr.FencedMemberEpoch
	}
	changed := before.epoch != m.epoch || before.state != m.state || !before.assigned.equal(m.assigned) ||
		!before.pendingRevocation.equal(m.pendingRevocation)
	return changed, nil
}

// ownsAny: owned (nil = everything) holds one of the partitions of a.
func ownsAny(owned, a assignment) bool {
	if owned == nil {
		return len(a) > 0
	}
	found := false
	a.each(func(t topicID, p int32) { found = found || owned.has(t, p) })
	return found
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment: keep
// what the target still gives, ask for the revocation of the rest (staying
// at epoch), or else take the target's free partitions at the target epoch.
func (s *shard) nextAssignment(g *Group, m *cmember, epoch int32, owned assignment) {
	cg := g.cg
	target := cg.target[m.id]
	keep, revoke, add := assignment{}, assignment{}, assignment{}
	unreleased := false
	m.assigned.each(func(t topicID, p int32) {
		if target.has(t, p) {
			keep.add(t, p)
		} else {
			revoke.add(t, p)
		}
	})
	target.each(func(t topicID, p int32) {
		if keep.has(t, p) {
			return
		}
		if owner, held := cg.owners[tp{t, p}]; held && owner != m.id {
			if !s.c.cfg.Bugs.AssignBeforeRevoke {
				unreleased = true
				return
			}
			cg.bugged = true
		}
		add.add(t, p)
	})
	setEpoch := func(e int32) {
		if e != m.epoch {
			m.prevEpoch, m.epoch = m.epoch, e
		}
	}
	cg.release(m)
	defer cg.claim(m)
	if len(revoke) > 0 && ownsAny(owned, revoke) {
		m.state, m.assigned, m.pendingRevocation = memberUnrevoked, keep, revoke
		setEpoch(epoch)
		s.armRebalanceTimeout(g, m)
		return
	}
	m.pendingRevocation = assignment{}
	m.rebalanceTimerStop()
	setEpoch(cg.assignmentEpoch)
	add.each(func(t topicID, p int32) {
		keep.add(t, p)
		m.assignedAt[tp{t, p}] = m.epoch
	})
	for k := range m.assignedAt {
		if !keep.has(k.topic, k.partition) {
			delete(m.assignedAt, k)
		}
	}
	m.assigned = keep
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleased
	}
}

func (m *cmember) rebalanceTimerStop() {
	if m.rebalanceTimer != nil {
		m.rebalanceTimer.Stop()
		m.rebalanceTimer = nil
	}
}
