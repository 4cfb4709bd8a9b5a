package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/faultpoint"
)

// This file is the rebalance state machine. Every function here runs with
// the shard lock held.

// resetSession (re)arms a member's session timer: a member that neither
// heartbeats nor waits in JoinGroup/SyncGroup within session.timeout.ms is
// removed.
func (s *shard) resetSession(g *Group, m *member) {
	m.stopSession()
	seq := m.timerSeq
	m.sessionTimer = s.after(m.session, func() {
		if s.groups[g.id] != g || g.members[m.id] != m || m.timerSeq != seq {
			return
		}
		if m.joinWait != nil || m.syncWait != nil {
			s.resetSession(g, m) // a parked request keeps the member alive, as in Kafka
			return
		}
		s.c.cfg.Logger.Info("group member session expired", "group", g.id, "member", m.id)
		s.removeMember(g, m)
	})
}

// addPending hands out a member id (KIP-394) that expires unless it joins
// within the session timeout.
func (s *shard) addPending(g *Group, id string, session time.Duration) {
	g.pending[id] = s.after(session, func() {
		if s.groups[g.id] != g {
			return
		}
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			s.maybeCompleteJoin(g)
		}
	})
}

// addMember adds a joining member, parks its JoinGroup and starts (or
// joins) a rebalance.
func (s *shard) addMember(g *Group, id string, req *kmsg.JoinGroupRequest, clientID, host string) chan *kmsg.JoinGroupResponse {
	m := &member{id: id, instanceID: req.InstanceID, clientID: clientID, clientHost: host}
	s.updateMember(m, req)
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members[id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	g.known = true
	g.newJoins++
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	m.joinWait = ch
	s.prepareRebalance(g)
	s.maybeCompleteJoin(g)
	return ch
}

func (s *shard) updateMember(m *member, req *kmsg.JoinGroupRequest) {
	m.protocolType = req.ProtocolType
	m.protocols = req.Protocols
	m.session = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 || req.RebalanceTimeoutMillis <= 0 {
		m.rebalance = m.session // v0 has no rebalance timeout: Kafka uses the session timeout
	}
}

// rejoin parks a known member's JoinGroup with its new protocols and
// starts a rebalance if none runs.
func (s *shard) rejoin(g *Group, m *member, req *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	s.updateMember(m, req)
	m.respondJoin(joinError(kerr.RebalanceInProgress, m.id)) // superseded by this join
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	m.joinWait = ch
	m.stopSession()
	s.prepareRebalance(g)
	s.maybeCompleteJoin(g)
	return ch
}

// prepareRebalance moves the group to PreparingRebalance (no-op if it is
// there): assignments of a rebalance being completed are dropped, and the
// rebalance is bounded by the members' rebalance timeout, or for an empty
// group by the initial rebalance delay.
func (s *shard) prepareRebalance(g *Group) {
	if g.state == PreparingRebalance {
		return
	}
	g.syncing = false
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			m.respondSync(syncError(kerr.RebalanceInProgress))
		}
	}
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
	}
	wasEmpty := g.state == Empty
	g.state = PreparingRebalance
	gen := g.generation
	if wasEmpty && s.c.cfg.InitialRebalanceDelay > 0 {
		g.initialDelay = true
		g.newJoins = 0
		g.delayRemaining = g.maxRebalance()
		s.armInitialDelay(g, gen)
		return
	}
	g.rebalanceTimer = s.after(g.maxRebalance(), func() {
		if s.groups[g.id] == g && g.state == PreparingRebalance && g.generation == gen {
			s.completeJoin(g)
		}
	})
}

// armInitialDelay is Kafka's InitialDelayedJoin: wait the delay; if members
// joined meanwhile and rebalance time remains, wait again.
func (s *shard) armInitialDelay(g *Group, gen int32) {
	d := min(s.c.cfg.InitialRebalanceDelay, g.delayRemaining)
	g.delayRemaining -= d
	g.newJoins = 0
	g.rebalanceTimer = s.after(d, func() {
		if s.groups[g.id] != g || g.state != PreparingRebalance || g.generation != gen || !g.initialDelay {
			return
		}
		if g.newJoins > 0 && g.delayRemaining > 0 {
			s.armInitialDelay(g, gen)
			return
		}
		g.initialDelay = false
		s.completeJoin(g)
	})
}

func (s *shard) maybeCompleteJoin(g *Group) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		s.completeJoin(g)
	}
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation advances, the protocol is chosen, and every
// waiting JoinGroup is answered (the leader gets all members' metadata).
func (s *shard) completeJoin(g *Group) {
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
		g.rebalanceTimer = nil
	}
	g.initialDelay = false
	for _, id := range g.memberIDs() {
		if m := g.members[id]; m.joinWait == nil {
			s.c.cfg.Logger.Info("group member did not rejoin in time", "group", g.id, "member", id)
			s.dropMember(g, m)
		}
	}
	g.generation++
	faultpoint.Hit(faultpoint.GenerationBumped, faultpoint.Attrs{Node: s.c.cfg.Node, Group: g.id})
	if len(g.members) == 0 {
		g.state = Empty
		g.protocol, g.leader = "", ""
		s.writeBackground([]coordinator.Record{groupRecord(g.id, g.value())})
		return
	}
	g.protocol = g.selectProtocol()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.memberIDs()[0]
	}
	g.state = CompletingRebalance
	g.syncing = false
	for _, id := range g.memberIDs() {
		m := g.members[id]
		m.respondJoin(s.joinResult(g, m.id, g.leader))
		s.resetSession(g, m)
	}
}

// joinResult is a successful JoinGroup answer for the current generation.
func (s *shard) joinResult(g *Group, memberID, leader string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation = g.generation
	pt, p := g.protocolType, g.protocol
	r.ProtocolType, r.Protocol = &pt, &p
	r.LeaderID = leader
	r.MemberID = memberID
	if memberID == g.leader && leader == g.leader && g.state == CompletingRebalance {
		r.Members = g.joinMembers()
	}
	return r
}

// joinMembers is what the leader learns of every member.
func (g *Group) joinMembers() []kmsg.JoinGroupResponseMember {
	var out []kmsg.JoinGroupResponseMember
	for _, id := range g.memberIDs() {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = m.id, m.instanceID, m.metadataFor(g.protocol)
		out = append(out, jm)
	}
	return out
}

// dropMember removes a member without starting a rebalance.
func (s *shard) dropMember(g *Group, m *member) {
	m.stopSession()
	m.fail(kerr.UnknownMemberID)
	delete(g.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
	}
}

// removeMember removes a member (left, or its session expired) and
// rebalances the rest.
func (s *shard) removeMember(g *Group, m *member) {
	s.dropMember(g, m)
	switch g.state {
	case Stable, CompletingRebalance:
		s.prepareRebalance(g)
	case PreparingRebalance:
		s.maybeCompleteJoin(g)
	}
}

// replaceStatic gives a static member's instance id to a new member id
// (KIP-345): the old member is fenced. A stable group keeps its generation
// and assignment when the selected protocol still fits, so a restarted
// static member gets its partitions back without a rebalance.
func (s *shard) replaceStatic(g *Group, oldID string, req *kmsg.JoinGroupRequest, clientID, host string) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	old := g.members[oldID]
	currentLeader := g.leader
	newID := newMemberID(clientID)
	old.stopSession()
	old.fail(kerr.FencedInstanceID)
	delete(g.members, oldID)
	m := &member{id: newID, instanceID: req.InstanceID, clientID: clientID, clientHost: host, assignment: old.assignment}
	s.updateMember(m, req)
	g.members[newID] = m
	g.static[*req.InstanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	switch g.state {
	case Stable:
		if g.selectProtocol() == g.protocol {
			s.resetSession(g, m)
			s.writeBackground([]coordinator.Record{groupRecord(g.id, g.value())})
			// Before v9 the old leader id is returned, so a replaced leader
			// does not run an assignment a stable group would never
			// distribute; v9+ (KIP-814) tells it it leads but must skip
			// the assignment.
			r := s.joinResult(g, newID, currentLeader)
			if req.Version >= 9 && currentLeader == oldID {
				r.LeaderID, r.SkipAssignment, r.Members = newID, true, g.joinMembers()
			}
			return r, nil
		}
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	m.joinWait = ch
	s.prepareRebalance(g)
	s.maybeCompleteJoin(g)
	return nil, ch
}
