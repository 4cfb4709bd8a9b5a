package share

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
)

// Groups is the share-group coordinator role: the share groups of the
// __consumer_offsets partitions this broker leads (Kafka's
// GroupMetadataManager for share groups). Membership is in memory: a new
// coordinator starts with no members, and members that heartbeat to it get
// UNKNOWN_MEMBER_ID and join again (Kafka keeps ShareGroupMemberMetadata
// records in __consumer_offsets instead).
type Groups struct {
	cfg Config
	env Env
	rt  *coordinator.Runtime[*groupShard]
}

// NewGroups returns the role; Start begins watching leadership.
func NewGroups(cfg Config, env Env) *Groups {
	cfg.Defaults()
	g := &Groups{cfg: cfg, env: env}
	g.rt = coordinator.New(coordinator.Config{Name: "share group coordinator", Topic: "__consumer_offsets", PollEvery: cfg.PollEvery, Logger: cfg.Logger},
		env.OffsetsTopic(), func(ctx context.Context, partition, epoch int32, _ coordinator.Log) *groupShard {
			return &groupShard{groups: map[string]*shareGroup{}, loading: true}
		})
	return g
}

// Start polls leadership and expires sessions until Close.
func (g *Groups) Start() {
	g.rt.Start()
	g.rt.Every(sweepEvery, g.sweep)
}

// sweepEvery is how often member sessions are checked for expiry.
const sweepEvery = 250 * time.Millisecond

// Close unloads every shard and waits for the role's goroutines.
func (g *Groups) Close() { g.rt.Close() }

// Poll loads the shards this broker now leads and unloads the others.
func (g *Groups) Poll() { g.rt.Poll() }

// Exists reports whether this coordinator holds a share group of that id.
func (g *Groups) Exists(id string) bool {
	s, e := g.rt.ShardFor(id)
	if e != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups[id] != nil
}

type groupShard struct {
	mu                sync.Mutex // never held across a wait
	loading, unloaded bool
	groups            map[string]*shareGroup
}

func (s *groupShard) State() coordinator.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return coordinator.StateOf(s.loading, s.unloaded)
}

// Load has nothing to replay: membership is not persisted (see Groups).
func (s *groupShard) Load() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loading = false
}

func (s *groupShard) Unload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unloaded = true
	s.groups = map[string]*shareGroup{}
}

// shareGroup is one share group (Kafka's ShareGroup): its epoch, bumped
// whenever the target assignment changes, and its members.
type shareGroup struct {
	id      string
	epoch   int32
	members map[string]*member
	// target is the assignment computed at epoch, by member.
	target map[string]map[[16]byte][]int32
	// states are the share partitions known to have state (assigned or
	// altered), by topic name, for DescribeShareGroupOffsets of all topics
	// (Kafka's ShareGroupStatePartitionMetadata).
	states map[string]map[int32]struct{}
}

type member struct {
	id, clientID, host string
	rack               *string
	epoch              int32
	topics             []string
	assigned           map[[16]byte][]int32
	deadline           time.Time
}

func newShareGroup(id string) *shareGroup {
	return &shareGroup{id: id, members: map[string]*member{}, target: map[string]map[[16]byte][]int32{}, states: map[string]map[int32]struct{}{}}
}

// shard returns the loaded shard of a group id and locks it.
func (g *Groups) shard(id string) (*groupShard, *kerr.Error) {
	if id == "" {
		return nil, kerr.InvalidGroupID
	}
	s, e := g.rt.ShardFor(id)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	if s.unloaded {
		s.mu.Unlock()
		return nil, kerr.NotCoordinator
	}
	return s, nil
}

// Heartbeat answers ShareGroupHeartbeat (v1): join (epoch 0), leave (-1),
// or heartbeat, with the member's assignment whenever its epoch moves to
// the group's (KIP-932: no revocation step, a share partition may have many
// consumers).
func (g *Groups) Heartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, host string) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(e *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	switch {
	case req.MemberID == "" || len(req.MemberID) > 36:
		return fail(kerr.InvalidRequest, "MemberId must be a non-empty client-generated id of at most 36 characters")
	case req.MemberEpoch < -1:
		return fail(kerr.InvalidRequest, "MemberEpoch is invalid")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return fail(kerr.InvalidRequest, "SubscribedTopicNames must be set in the first request")
	}
	if g.env.ClassicGroup(req.GroupID) {
		return fail(kerr.GroupIDNotFound, "Group "+req.GroupID+" is not a share group.")
	}
	s, e := g.shard(req.GroupID)
	if e != nil {
		return fail(e, "")
	}
	defer s.mu.Unlock()
	grp := s.groups[req.GroupID]
	if grp == nil {
		if req.MemberEpoch != 0 {
			return fail(kerr.UnknownMemberID, "")
		}
		grp = newShareGroup(req.GroupID)
		s.groups[req.GroupID] = grp
	}
	set := g.cfg.settings(g.env.GroupConfig(req.GroupID))
	resp.HeartbeatIntervalMillis = int32(set.heartbeat / time.Millisecond)
	now := g.cfg.Clock.Now()
	m := grp.members[req.MemberID]
	switch {
	case req.MemberEpoch == -1:
		if m != nil {
			delete(grp.members, req.MemberID)
			g.reassign(grp)
		}
		resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), -1
		return resp
	case req.MemberEpoch == 0:
		m = &member{id: req.MemberID}
		grp.members[req.MemberID] = m
	case m == nil:
		return fail(kerr.UnknownMemberID, "")
	case req.MemberEpoch != m.epoch:
		return fail(kerr.FencedMemberEpoch, "")
	}
	m.clientID, m.host, m.deadline = clientID, host, now.Add(set.session)
	if req.RackID != nil {
		m.rack = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		m.topics = slices.Sorted(slices.Values(req.SubscribedTopicNames))
	}
	g.reassign(grp)
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), m.epoch
	if req.MemberEpoch == 0 || m.epoch < grp.epoch {
		m.epoch, m.assigned = grp.epoch, grp.target[m.id]
		resp.MemberEpoch = m.epoch
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, id := range slices.SortedFunc(maps.Keys(m.assigned), func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) }) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, m.assigned[id]
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	return resp
}

// reassign computes the target assignment from the members' subscriptions
// and the topics as they are now, bumping the group epoch when it changed.
// Caller holds the shard's lock.
func (g *Groups) reassign(grp *shareGroup) {
	target := g.assign(grp)
	same := len(target) == len(grp.target)
	for id, a := range target {
		if !same {
			break
		}
		b, ok := grp.target[id]
		same = ok && maps.EqualFunc(a, b, slices.Equal[[]int32])
	}
	if same {
		return
	}
	grp.epoch++
	grp.target = target
	for _, parts := range target {
		for id, ps := range parts {
			name, _, ok := g.env.TopicByID(id)
			if !ok {
				continue
			}
			if grp.states[name] == nil {
				grp.states[name] = map[int32]struct{}{}
			}
			for _, p := range ps {
				grp.states[name][p] = struct{}{}
			}
		}
	}
}

// assign is the simple assignor of share groups (Kafka's SimpleAssignor):
// per topic, its partitions spread over its subscribers round robin; with
// more subscribers than partitions every subscriber gets one, a partition
// then shared by several (a share partition has no single owner).
func (g *Groups) assign(grp *shareGroup) map[string]map[[16]byte][]int32 {
	subs := map[string][]string{}
	for _, id := range slices.Sorted(maps.Keys(grp.members)) {
		for _, t := range grp.members[id].topics {
			subs[t] = append(subs[t], id)
		}
	}
	out := map[string]map[[16]byte][]int32{}
	for id := range grp.members {
		out[id] = map[[16]byte][]int32{}
	}
	for topic, ms := range subs {
		tid, n, ok := g.env.TopicByName(topic)
		if !ok || n == 0 {
			continue
		}
		if len(ms) <= int(n) {
			for p := int32(0); p < n; p++ {
				m := ms[int(p)%len(ms)]
				out[m][tid] = append(out[m][tid], p)
			}
			continue
		}
		for i, m := range ms {
			out[m][tid] = append(out[m][tid], int32(i)%n)
		}
	}
	for id, a := range out {
		for t, ps := range a {
			slices.Sort(ps)
			a[t] = ps
		}
		out[id] = a
	}
	return out
}

// sweep removes members whose session timed out (group.share.session.
// timeout.ms without a heartbeat) and reassigns their partitions; their
// records' locks lapse on the partition leaders.
func (g *Groups) sweep() {
	shards, _ := g.rt.Loaded()
	now := g.cfg.Clock.Now()
	for _, s := range shards {
		s.mu.Lock()
		for _, grp := range s.groups {
			gone := false
			for id, m := range grp.members {
				if now.After(m.deadline) {
					delete(grp.members, id)
					gone = true
				}
			}
			if gone {
				g.reassign(grp)
			}
		}
		s.mu.Unlock()
	}
}

// Describe answers ShareGroupDescribe (v1).
func (g *Groups) Describe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID = id
		rg.AuthorizedOperations = -2147483648
		s, e := g.shard(id)
		if e != nil {
			rg.ErrorCode = e.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		grp := s.groups[id]
		if grp == nil {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
		} else {
			g.describeGroup(grp, &rg)
		}
		s.mu.Unlock()
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (g *Groups) describeGroup(grp *shareGroup, rg *kmsg.ShareGroupDescribeResponseGroup) {
	rg.GroupState = "Stable"
	if len(grp.members) == 0 {
		rg.GroupState = "Empty"
	}
	rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = grp.epoch, grp.epoch, "simple"
	for _, id := range slices.Sorted(maps.Keys(grp.members)) {
		m := grp.members[id]
		rm := kmsg.NewShareGroupDescribeResponseGroupMember()
		rm.MemberID, rm.RackID, rm.MemberEpoch = m.id, m.rack, m.epoch
		rm.ClientID, rm.ClientHost, rm.SubscribedTopicNames = m.clientID, m.host, m.topics
		for _, tid := range slices.SortedFunc(maps.Keys(m.assigned), func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) }) {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = tid, m.assigned[tid]
			tp.Topic, _, _ = g.env.TopicByID(tid)
			rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, tp)
		}
		rg.Members = append(rg.Members, rm)
	}
}
