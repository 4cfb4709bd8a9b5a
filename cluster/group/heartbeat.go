package group

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/meta"
)

// ConsumerGroupHeartbeat handles a KIP-848 heartbeat (Kafka 4's
// GroupMetadataManager.consumerGroupHeartbeat): join at epoch 0, leave at
// -1 (-2 static), else a heartbeat that reports the owned partitions. The
// answer waits until the records the heartbeat wrote are committed.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, clientID, host string, req *kmsg.ConsumerGroupHeartbeatRequest) func() *kmsg.ConsumerGroupHeartbeatResponse {
	if e, msg := validHeartbeat(req); e != nil {
		return ready(heartbeatError(e, msg))
	}
	s, e := c.shardFor(req.Group)
	if e != nil {
		return ready(heartbeatError(e, ""))
	}
	return func() *kmsg.ConsumerGroupHeartbeatResponse {
		resp, e := s.withWriteLock(ctx, func() (*kmsg.ConsumerGroupHeartbeatResponse, []coordinator.Record) {
			s.mu.Lock()
			defer s.unlock()
			return s.heartbeat(req, clientID, host, c.env.Image())
		})
		if e != nil {
			return heartbeatError(e, "")
		}
		return resp
	}
}

// withWriteLock runs f, then writes the records it returns and answers
// once they are committed. The shard's write lock (a channel lock, held
// across the append) keeps the log's order the order in which the state
// changed, as Kafka's CoordinatorRuntime appends under the shard's lock.
func (s *shard) withWriteLock(ctx context.Context, f func() (*kmsg.ConsumerGroupHeartbeatResponse, []coordinator.Record)) (*kmsg.ConsumerGroupHeartbeatResponse, *kerr.Error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.WriteTimeout)
	defer cancel()
	select {
	case s.writeLock <- struct{}{}:
	case <-ctx.Done():
		// The writes before it did not commit in time: as a timed-out
		// write, COORDINATOR_NOT_AVAILABLE, which clients retry
		// (GroupCoordinatorService.handleOperationException).
		return nil, kerr.CoordinatorNotAvailable
	case <-s.ctx.Done():
		return nil, kerr.NotCoordinator
	}
	defer func() { <-s.writeLock }()
	resp, recs := f()
	if len(recs) == 0 {
		return resp, nil
	}
	if _, e := s.write(ctx, recs); e != nil {
		return nil, e
	}
	s.mu.Lock()
	s.noteCommitted(recs)
	s.unlock()
	return resp, nil
}

// validHeartbeat is throwIfConsumerGroupHeartbeatRequestIsInvalid (v1:
// the client names its member id, KIP-1082).
func validHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	empty := func(p *string) bool { return p != nil && *p == "" }
	switch {
	case req.Group == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case empty(req.InstanceID):
		return kerr.InvalidRequest, "InstanceId can't be empty."
	case empty(req.RackID):
		return kerr.InvalidRequest, "RackId can't be empty."
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != 0):
		return kerr.InvalidRequest, "MemberId can't be empty."
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."
		}
		if len(req.SubscribedTopicNames) == 0 && req.SubscribedTopicRegex == nil {
			return kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	case req.MemberEpoch == staticLeaveEpoch && req.InstanceID == nil:
		return kerr.InvalidRequest, "InstanceId can't be null."
	case req.MemberEpoch < staticLeaveEpoch:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	}
	if req.SubscribedTopicRegex != nil {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil || *req.SubscribedTopicRegex == "" {
			return kerr.InvalidRegularExpression, fmt.Sprintf("SubscribedTopicRegex %q is not a valid regular expression.", *req.SubscribedTopicRegex)
		}
	}
	if req.ServerAssignor != nil && assignors[*req.ServerAssignor] == nil {
		return kerr.UnsupportedAssignor, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: range, uniform.", *req.ServerAssignor)
	}
	return nil, ""
}

func heartbeatError(e *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.ErrorCode = e.Code
	if msg != "" {
		r.ErrorMessage = &msg
	}
	return r
}

// heartbeat is one heartbeat's decision and the records it writes. Caller
// holds mu and the write lock.
func (s *shard) heartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, host string, im *meta.Image) (*kmsg.ConsumerGroupHeartbeatResponse, []coordinator.Record) {
	if s.unloaded {
		return heartbeatError(kerr.NotCoordinator, ""), nil
	}
	g, recs, e, msg := s.consumerGroupFor(req.Group, req.MemberEpoch == 0)
	if e != nil {
		return heartbeatError(e, msg), nil
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return s.consumerLeave(g, req, im)
	}
	m, mrecs, bump, e, msg := s.memberFor(g, req, clientID, host)
	if e != nil {
		return heartbeatError(e, msg), nil
	}
	recs = append(recs, mrecs...)
	recs = append(recs, s.maybeBumpAndAssign(g, im, bump)...)
	owned := ownedOf(req.Topics, im)
	before := m.assigned.clone()
	changed, e := s.reconcile(g, m, owned)
	if e != nil {
		return heartbeatError(e, "The consumer group member is in an unknown state. The member must abandon all its partitions and rejoin."), nil
	}
	if changed {
		recs = append(recs, currentRecord(g.id, m.id, m.currentValue()))
	}
	s.resetConsumerSession(g, m)
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(s.c.cfg.ConsumerHeartbeatInterval.Milliseconds())
	full := req.MemberEpoch == 0 || (req.RebalanceTimeoutMillis != -1 &&
		(req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || !before.equal(m.assigned) {
		resp.Assignment = responseAssignment(m.assigned)
	}
	return resp, recs
}

// consumerGroupFor is getOrMaybeCreateConsumerGroup: a join creates the
// group, and turns an empty classic group into a consumer group (its
// classic metadata tombstoned, its offsets kept); a classic group with
// members is not a consumer group.
func (s *shard) consumerGroupFor(id string, create bool) (*Group, []coordinator.Record, *kerr.Error, string) {
	g := s.groups[id]
	switch {
	case g == nil && !create:
		return nil, nil, kerr.GroupIDNotFound, fmt.Sprintf("Consumer group %s not found.", id)
	case g == nil:
		g = newGroup(id)
		g.known, g.cg = true, newConsumerGroup()
		s.groups[id] = g
		return g, nil, nil, ""
	case g.cg != nil:
		return g, nil, nil, ""
	case g.state == Dead:
		return nil, nil, kerr.CoordinatorNotAvailable, ""
	case !create || len(g.members) > 0 || len(g.pending) > 0:
		return nil, nil, kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group", id)
	}
	g.stopTimers()
	g.clearMembership()
	g.known, g.cg = true, newConsumerGroup()
	return g, []coordinator.Record{groupRecord(id, nil)}, nil, ""
}

// memberFor finds or creates the heartbeat's member and applies what the
// request changes of it (getOrMaybeSubscribe*ConsumerGroupMember and
// ConsumerGroupMember.Builder's maybeUpdate*): the records are the
// member's metadata when it changed; bump says the member is new or its
// subscription changed (hasMemberSubscriptionChanged), which bumps the
// group epoch.
func (s *shard) memberFor(g *Group, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, host string) (*cmember, []coordinator.Record, bool, *kerr.Error, string) {
	cg := g.cg
	m := cg.members[req.MemberID]
	var recs []coordinator.Record
	isNew := false
	if req.MemberEpoch == 0 {
		var e *kerr.Error
		prev := m
		if m, recs, e = s.joinMember(g, m, req); e != nil {
			return nil, nil, false, e, ""
		}
		isNew = m != prev
	} else {
		if m == nil || m.left {
			return nil, nil, false, kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id)
		}
		if e := memberEpochValid(m, req.MemberEpoch, ownedIDs(req.Topics)); e != nil {
			return nil, nil, false, e, fmt.Sprintf("The consumer group member has member epoch %d, the group coordinator %d. The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
		}
	}
	old := *m.metadataValue()
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil {
		m.assignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		m.subscribedNames = slices.Sorted(slices.Values(req.SubscribedTopicNames))
	}
	if req.SubscribedTopicRegex != nil {
		m.regex = *req.SubscribedTopicRegex
	}
	m.clientID, m.clientHost = clientID, host
	nv := m.metadataValue()
	if isNew || !old.equal(nv) {
		recs = append(recs, memberRecord(g.id, m.id, nv))
	}
	bump := isNew || !slices.Equal(old.Names, nv.Names) || old.Regex != nv.Regex || old.Assignor != nv.Assignor
	return m, recs, bump, nil, ""
}

// joinMember is an epoch-0 heartbeat: a new member, a member rejoining in
// place under its id (a lost response's recovery: it keeps its
// assignment, which the answer delivers again), or a static member taking
// over the assignment of the one that left with its instance id.
func (s *shard) joinMember(g *Group, m *cmember, req *kmsg.ConsumerGroupHeartbeatRequest) (*cmember, []coordinator.Record, *kerr.Error) {
	cg := g.cg
	var recs []coordinator.Record
	if req.InstanceID != nil {
		if oldID, ok := cg.static[*req.InstanceID]; ok && oldID != req.MemberID {
			old := cg.members[oldID]
			if old != nil && !old.left {
				return nil, nil, kerr.UnreleasedInstanceID
			}
			if old != nil {
				// The new member inherits the old one's epoch-less
				// assignment (ConsumerGroupMember.Builder from the old).
				m = &cmember{id: req.MemberID, state: memberStable, assigned: old.assigned, pendingRevocation: old.pendingRevocation,
					assignedAt: old.assignedAt, epoch: 0, subscribedNames: old.subscribedNames, regex: old.regex, assignor: old.assignor, rebalance: old.rebalance}
				cg.target[m.id] = cg.target[oldID]
				recs = append(recs, s.dropMemberRecords(g, old)...)
				cg.members[m.id] = m
				cg.claim(m)
			}
		}
	}
	if m == nil || m.left {
		if m != nil {
			recs = append(recs, s.dropMemberRecords(g, m)...)
		}
		m = &cmember{id: req.MemberID, state: memberStable, assigned: assignment{}, pendingRevocation: assignment{}, assignedAt: map[tp]int32{}}
		cg.members[m.id] = m
	}
	if req.InstanceID != nil {
		cg.static[*req.InstanceID] = m.id
	}
	return m, recs, nil
}

// memberEpochValid is throwIfConsumerGroupMemberEpochIsInvalid: an epoch
// ahead of the coordinator's, or behind it other than the previous epoch
// with a subset of the assignment (the answer that bumped it was lost), is
// FENCED_MEMBER_EPOCH.
func memberEpochValid(m *cmember, epoch int32, owned assignment) *kerr.Error {
	switch {
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch
	case epoch < m.epoch && (epoch != m.prevEpoch || owned == nil || !subset(owned, m.assigned)):
		return kerr.FencedMemberEpoch
	}
	return nil
}

func subset(a, of assignment) bool {
	ok := true
	a.each(func(t topicID, p int32) { ok = ok && of.has(t, p) })
	return ok
}

// maybeBumpAndAssign bumps the group epoch when a member's subscription
// changed or the subscription metadata did (a new topic, more partitions),
// and computes a new target assignment when the group epoch is past it.
func (s *shard) maybeBumpAndAssign(g *Group, im *meta.Image, bump bool) []coordinator.Record {
	cg := g.cg
	var recs []coordinator.Record
	if sub := cg.subscriptionMetadata(im); !maps.Equal(sub, cg.subscription) {
		cg.subscription = sub
		bump = true
	}
	if bump {
		cg.epoch++
		recs = append(recs, cgMetaRecord(g.id, cg))
	}
	if cg.epoch <= cg.assignmentEpoch {
		return recs
	}
	old := cg.target
	cg.target = cg.computeTarget(im)
	cg.assignmentEpoch = cg.epoch
	for _, id := range slices.Sorted(maps.Keys(cg.target)) {
		if a := cg.target[id]; !a.equal(old[id]) {
			recs = append(recs, targetRecord(g.id, id, a))
		}
	}
	recs = append(recs, targetMetaRecord(g.id, cg.assignmentEpoch))
	return recs
}

// consumerLeave is a leave: -1 removes the member and bumps the group epoch
// (its partitions go to the others); -2, a static member's, keeps its
// assignment for the member that next comes with its instance id.
func (s *shard) consumerLeave(g *Group, req *kmsg.ConsumerGroupHeartbeatRequest, im *meta.Image) (*kmsg.ConsumerGroupHeartbeatResponse, []coordinator.Record) {
	cg := g.cg
	m := cg.members[req.MemberID]
	if req.MemberEpoch == staticLeaveEpoch && req.InstanceID != nil {
		if id, ok := cg.static[*req.InstanceID]; ok && id != req.MemberID {
			return heartbeatError(kerr.FencedInstanceID, ""), nil
		}
	}
	if m == nil {
		return heartbeatError(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id)), nil
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch = &m.id, req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch {
		m.left, m.prevEpoch, m.epoch = true, m.epoch, staticLeaveEpoch
		s.resetConsumerSession(g, m)
		return resp, []coordinator.Record{currentRecord(g.id, m.id, m.currentValue())}
	}
	return resp, s.fenceMember(g, m, im)
}

// fenceMember removes a member (leave, session or rebalance timeout):
// its records are tombstoned, its partitions freed, the group epoch
// bumped so the others get them (GroupMetadataManager.removeMember and
// bumping the epoch).
func (s *shard) fenceMember(g *Group, m *cmember, im *meta.Image) []coordinator.Record {
	cg := g.cg
	recs := s.dropMemberRecords(g, m)
	cg.subscription = cg.subscriptionMetadata(im)
	cg.epoch++
	return append(recs, cgMetaRecord(g.id, cg))
}

// dropMemberRecords forgets a member and returns the tombstones of its
// current assignment, target assignment and metadata, in Kafka's order.
func (s *shard) dropMemberRecords(g *Group, m *cmember) []coordinator.Record {
	cg := g.cg
	m.stopTimers()
	cg.release(m)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	return []coordinator.Record{currentRecord(g.id, m.id, nil), targetRecord(g.id, m.id, nil), memberRecord(g.id, m.id, nil)}
}

// ownedOf maps a heartbeat's owned partitions to an assignment (nil: not
// sent). A topic id the metadata no longer has is dropped.
func ownedOf(topics []kmsg.ConsumerGroupHeartbeatRequestTopic, im *meta.Image) assignment {
	if topics == nil {
		return nil
	}
	a := ownedIDs(topics)
	for t := range a {
		if im.TopicByID(t) == nil {
			delete(a, t)
		}
	}
	return a
}

func ownedIDs(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) assignment {
	if topics == nil {
		return nil
	}
	a := assignment{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			a.add(topicID(t.TopicID), p)
		}
	}
	return a
}

func responseAssignment(a assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	r := &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
	r.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range slices.SortedFunc(maps.Keys(a), cmpID) {
		rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		rt.TopicID, rt.Partitions = t, slices.Clone(a[t])
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// resetConsumerSession (re)arms the member's session timeout
// (group.consumer.session.timeout.ms): a member silent that long is fenced.
func (s *shard) resetConsumerSession(g *Group, m *cmember) {
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
	}
	m.timerSeq++
	seq := m.timerSeq
	m.sessionTimer = s.after(s.c.cfg.ConsumerSessionTimeout, func() {
		s.c.rt.Background(func() { s.expire(g.id, m, func() bool { return m.timerSeq == seq }, "session timeout") })
	})
}

// armRebalanceTimeout fences a member that has not revoked its partitions
// within its rebalance timeout (scheduleConsumerGroupRebalanceTimeout).
func (s *shard) armRebalanceTimeout(g *Group, m *cmember) {
	m.rebalanceTimerStop()
	epoch := m.epoch
	d := m.rebalance
	if d <= 0 {
		d = s.c.cfg.ConsumerSessionTimeout
	}
	still := func() bool { return m.epoch == epoch && m.state == memberUnrevoked }
	m.rebalanceTimer = s.after(d, func() {
		if still() {
			s.c.rt.Background(func() { s.expire(g.id, m, still, "rebalance timeout") })
		}
	})
}

// expire fences a member whose timer fired, if it is still the member the
// timer was armed for.
func (s *shard) expire(groupID string, m *cmember, still func() bool, why string) {
	_, e := s.withWriteLock(s.ctx, func() (*kmsg.ConsumerGroupHeartbeatResponse, []coordinator.Record) {
		s.mu.Lock()
		defer s.unlock()
		g := s.groups[groupID]
		if s.unloaded || g == nil || g.cg == nil || g.cg.members[m.id] != m || !still() {
			return nil, nil
		}
		s.c.cfg.Logger.Info("consumer group member fenced", "group", groupID, "member", m.id, "why", why)
		return nil, s.fenceMember(g, m, s.c.env.Image())
	})
	if e != nil {
		s.c.cfg.Logger.Warn("persisting a fenced consumer group member", "group", groupID, "member", m.id, "err", e)
	}
}
