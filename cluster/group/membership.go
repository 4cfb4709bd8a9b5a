package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
)

// The membership APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup. Each
// decides under the shard lock; JoinGroup and SyncGroup may return a wait
// that ends when the rebalance answers them (bounded by the rebalance
// timeout, a shard unload, or ctx).

func ready[T any](r T) func() T { return func() T { return r } }

func waitFor[T any](ctx context.Context, ch chan T, onCancel T) func() T {
	return func() T {
		select {
		case r := <-ch:
			return r
		case <-ctx.Done():
			return onCancel
		}
	}
}

func fenced(g *Group, memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.static[*instanceID]
	return ok && cur != memberID
}

// JoinGroup handles a JoinGroup request from clientID at host.
func (c *Coordinator) JoinGroup(ctx context.Context, clientID, host string, req *kmsg.JoinGroupRequest) func() *kmsg.JoinGroupResponse {
	s, e := c.shardFor(req.Group)
	if e != nil {
		return ready(joinError(e, req.MemberID))
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return ready(joinError(kerr.InvalidSessionTimeout, req.MemberID))
	}
	s.mu.Lock()
	r, ch := s.join(req, clientID, host)
	s.unlock()
	if r != nil {
		return ready(r)
	}
	return waitFor(ctx, ch, joinError(kerr.RebalanceInProgress, req.MemberID))
}

func (s *shard) join(req *kmsg.JoinGroupRequest, clientID, host string) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	if s.unloaded {
		return joinError(kerr.NotCoordinator, req.MemberID), nil
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			return joinError(kerr.UnknownMemberID, req.MemberID), nil
		}
		g = newGroup(req.Group)
		s.groups[req.Group] = g
	}
	fail := func(e *kerr.Error) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
		if !g.known {
			delete(s.groups, g.id)
		}
		return joinError(e, req.MemberID), nil
	}
	if g.state == Dead {
		return fail(kerr.CoordinatorNotAvailable) // being deleted
	}
	if g.cg != nil {
		if len(g.cg.members) > 0 {
			// A classic member joining a consumer group with members
			// (Kafka's online migration, classicGroupJoinToConsumerGroup)
			// is not modelled: refused as a protocol it cannot join.
			return fail(kerr.InconsistentGroupProtocol)
		}
		// An empty consumer group becomes a classic one; its offsets stay.
		g.cg = nil
		s.writeBackground([]coordinator.Record{cgTombstone(g.id)})
	}
	replacing := req.MemberID
	if req.MemberID == "" && req.InstanceID != nil {
		replacing = g.static[*req.InstanceID]
	}
	if !g.acceptsJoin(req.ProtocolType, req.Protocols, replacing) {
		return fail(kerr.InconsistentGroupProtocol)
	}
	if req.MemberID == "" {
		if req.InstanceID != nil {
			if old, ok := g.static[*req.InstanceID]; ok {
				return s.replaceStatic(g, old, req, clientID, host)
			}
			return nil, s.addMember(g, newMemberID(clientID), req, clientID, host)
		}
		id := newMemberID(clientID)
		if req.Version >= 4 {
			// KIP-394: a member needs an id before it counts; one that
			// never comes back with it costs nothing past its session.
			s.addPending(g, id, time.Duration(req.SessionTimeoutMillis)*time.Millisecond)
			return joinError(kerr.MemberIDRequired, id), nil
		}
		return nil, s.addMember(g, id, req, clientID, host)
	}
	if fenced(g, req.MemberID, req.InstanceID) {
		return fail(kerr.FencedInstanceID)
	}
	if t, ok := g.pending[req.MemberID]; ok {
		t.Stop()
		delete(g.pending, req.MemberID)
		return nil, s.addMember(g, req.MemberID, req, clientID, host)
	}
	m := g.members[req.MemberID]
	if m == nil {
		return fail(kerr.UnknownMemberID)
	}
	switch g.state {
	case PreparingRebalance:
		return nil, s.rejoin(g, m, req)
	case CompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			// A retried join (its answer was lost): answer it again.
			return s.joinResult(g, m.id, g.leader), nil
		}
		return nil, s.rejoin(g, m, req)
	case Stable:
		if m.id == g.leader || !sameProtocols(m.protocols, req.Protocols) {
			return nil, s.rejoin(g, m, req)
		}
		s.resetSession(g, m)
		return s.joinResult(g, m.id, g.leader), nil
	default:
		return fail(kerr.UnknownMemberID)
	}
}

// SyncGroup handles a SyncGroup request. The leader's assignment is written
// to __consumer_offsets and committed before anyone gets theirs.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) func() *kmsg.SyncGroupResponse {
	s, e := c.shardFor(req.Group)
	if e != nil {
		return ready(syncError(e))
	}
	s.mu.Lock()
	r, ch, write := s.sync(req)
	s.unlock()
	if r != nil {
		return ready(r)
	}
	wait := waitFor(ctx, ch, syncError(kerr.RebalanceInProgress))
	if write == nil {
		return wait
	}
	return func() *kmsg.SyncGroupResponse {
		_, e := s.write(ctx, write.recs)
		s.mu.Lock()
		s.finishSync(write, e)
		s.unlock()
		return wait()
	}
}

// assignmentWrite is a leader's assignment on its way to the log.
type assignmentWrite struct {
	g           *Group
	generation  int32
	assignments map[string][]byte
	recs        []coordinator.Record
}

func (s *shard) sync(req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse, *assignmentWrite) {
	g := s.groups[req.Group]
	if s.unloaded || g == nil {
		return syncError(kerr.UnknownMemberID), nil, nil
	}
	if fenced(g, req.MemberID, req.InstanceID) {
		return syncError(kerr.FencedInstanceID), nil, nil
	}
	m := g.members[req.MemberID]
	if m == nil {
		return syncError(kerr.UnknownMemberID), nil, nil
	}
	if req.Generation != g.generation {
		return syncError(kerr.IllegalGeneration), nil, nil
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		return syncError(kerr.InconsistentGroupProtocol), nil, nil
	}
	switch g.state {
	case PreparingRebalance:
		return syncError(kerr.RebalanceInProgress), nil, nil
	case Stable:
		s.resetSession(g, m)
		return s.syncResult(g, m), nil, nil
	case CompletingRebalance:
	default:
		return syncError(kerr.UnknownMemberID), nil, nil
	}
	m.respondSync(syncError(kerr.RebalanceInProgress)) // superseded
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	m.syncWait = ch
	if m.id != g.leader || g.syncing {
		return nil, ch, nil
	}
	g.syncing = true
	w := &assignmentWrite{g: g, generation: g.generation, assignments: map[string][]byte{}}
	for _, a := range req.GroupAssignment {
		if _, ok := g.members[a.MemberID]; ok {
			w.assignments[a.MemberID] = a.MemberAssignment
		}
	}
	v := g.value()
	for i := range v.Members {
		v.Members[i].Assignment = w.assignments[v.Members[i].ID]
	}
	w.recs = []coordinator.Record{groupRecord(g.id, v)}
	return nil, ch, w
}

// finishSync completes a rebalance once the leader's assignment is written:
// the group becomes Stable and every waiting member gets its assignment. A
// failed write sends the group back to rebalancing.
func (s *shard) finishSync(w *assignmentWrite, e *kerr.Error) {
	g := w.g
	if s.unloaded || s.groups[g.id] != g || g.generation != w.generation || g.state != CompletingRebalance {
		return // whatever moved the group on has answered the waiters
	}
	g.syncing = false
	if e != nil {
		for _, m := range g.members {
			m.assignment = nil
			m.respondSync(syncError(e))
		}
		s.prepareRebalance(g)
		return
	}
	g.state = Stable
	for _, m := range g.members {
		m.assignment = w.assignments[m.id]
		m.respondSync(s.syncResult(g, m))
		s.resetSession(g, m)
	}
}

func (s *shard) syncResult(g *Group, m *member) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	pt, p := g.protocolType, g.protocol
	r.ProtocolType, r.Protocol = &pt, &p
	r.MemberAssignment = m.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

// Heartbeat handles a Heartbeat request.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	r := kmsg.NewPtrHeartbeatResponse()
	s, e := c.shardFor(req.Group)
	if e != nil {
		r.ErrorCode = e.Code
		return r
	}
	s.mu.Lock()
	defer s.unlock()
	g := s.groups[req.Group]
	var m *member
	if g != nil {
		m = g.members[req.MemberID]
	}
	switch {
	case s.unloaded:
		r.ErrorCode = kerr.NotCoordinator.Code
	case g == nil || g.state == Empty:
		r.ErrorCode = kerr.UnknownMemberID.Code
	case fenced(g, req.MemberID, req.InstanceID):
		r.ErrorCode = kerr.FencedInstanceID.Code
	case m == nil:
		r.ErrorCode = kerr.UnknownMemberID.Code
	case g.state == PreparingRebalance:
		s.resetSession(g, m)
		r.ErrorCode = kerr.RebalanceInProgress.Code
	case req.Generation != g.generation:
		r.ErrorCode = kerr.IllegalGeneration.Code
	default:
		s.resetSession(g, m)
	}
	return r
}

// LeaveGroup handles a LeaveGroup request (v3+: a batch of members, by
// member id or group.instance.id).
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	r := kmsg.NewPtrLeaveGroupResponse()
	leaving := req.Members
	if req.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		leaving = []kmsg.LeaveGroupRequestMember{lm}
	}
	s, e := c.shardFor(req.Group)
	if e != nil {
		r.ErrorCode = e.Code
		return r
	}
	s.mu.Lock()
	defer s.unlock()
	g := s.groups[req.Group]
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		if e := s.leave(g, lm); e != nil {
			rm.ErrorCode = e.Code
		}
		r.Members = append(r.Members, rm)
	}
	if req.Version < 3 {
		r.ErrorCode = r.Members[0].ErrorCode
		r.Members = nil
	}
	return r
}

func (s *shard) leave(g *Group, lm kmsg.LeaveGroupRequestMember) *kerr.Error {
	if s.unloaded {
		return kerr.NotCoordinator
	}
	if g == nil {
		return kerr.UnknownMemberID
	}
	id := lm.MemberID
	if id == "" && lm.InstanceID != nil {
		id = g.static[*lm.InstanceID]
	} else if fenced(g, id, lm.InstanceID) {
		return kerr.FencedInstanceID
	}
	if t, ok := g.pending[id]; ok {
		t.Stop()
		delete(g.pending, id)
		s.maybeCompleteJoin(g)
		return nil
	}
	m := g.members[id]
	if m == nil {
		return kerr.UnknownMemberID
	}
	s.c.cfg.Logger.Info("group member left", "group", g.id, "member", id)
	s.removeMember(g, m)
	return nil
}
