package group

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
)

// DescribeGroups handles a DescribeGroups request. A group this
// coordinator does not know is described as Dead with no error, as Kafka
// does before v6.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.describe(id))
	}
	return resp
}

func (c *Coordinator) describe(id string) kmsg.DescribeGroupsResponseGroup {
	rg := kmsg.NewDescribeGroupsResponseGroup()
	rg.Group = id
	s, e := c.shardFor(id)
	if e != nil {
		rg.ErrorCode = e.Code
		return rg
	}
	s.mu.Lock()
	defer s.unlock()
	g := s.groups[id]
	if g == nil || !g.known {
		rg.State = string(Dead)
		return rg
	}
	if g.cg != nil {
		// A consumer group, described as Kafka describes one to a
		// classic client: its type's protocol and state, no classic
		// members.
		rg.State, rg.ProtocolType = g.cg.state(), "consumer"
		return rg
	}
	rg.State = string(g.state)
	rg.ProtocolType = g.protocolType
	rg.Protocol = g.protocol
	for _, mid := range g.memberIDs() {
		m := g.members[mid]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		dm.ProtocolMetadata = m.metadataFor(g.protocol)
		if g.state == Stable {
			dm.MemberAssignment = m.assignment
		}
		rg.Members = append(rg.Members, dm)
	}
	return rg
}

// ListGroups handles a ListGroups request: the groups of every loaded shard,
// filtered by state (v4+).
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	shards, loading := c.loadedShards()
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code // as Kafka answers while any partition loads
	}
	for _, s := range shards {
		s.mu.Lock()
		for _, g := range s.groups {
			st, typ, ptype := string(g.state), "classic", g.protocolType
			if g.cg != nil {
				st, typ, ptype = g.cg.state(), "consumer", "consumer"
			}
			if !g.known || !stateWanted(req.StatesFilter, st) || !typeWanted(req.TypesFilter, typ) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState = g.id, ptype, st
			lg.GroupType = typ
			resp.Groups = append(resp.Groups, lg)
		}
		s.unlock()
	}
	return resp
}

// typeWanted is ListGroups v5's types filter (KIP-848).
func typeWanted(filter []string, typ string) bool { return stateWanted(filter, typ) }

func stateWanted(filter []string, st string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, st) {
			return true
		}
	}
	return false
}

// ConsumerGroupDescribe handles a ConsumerGroupDescribe request (KIP-848):
// each consumer group's epochs, assignor and members with their current
// and target assignments; a group that is not a consumer group is
// GROUP_ID_NOT_FOUND.
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	im := c.env.Image()
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.describeConsumer(id, im))
	}
	return resp
}

func (c *Coordinator) describeConsumer(id string, im *meta.Image) kmsg.ConsumerGroupDescribeResponseGroup {
	rg := kmsg.NewConsumerGroupDescribeResponseGroup()
	rg.Group = id
	rg.AuthorizedOperations = math.MinInt32
	s, e := c.shardFor(id)
	if e != nil {
		rg.ErrorCode = e.Code
		return rg
	}
	s.mu.Lock()
	defer s.unlock()
	g := s.groups[id]
	if s.unloaded {
		rg.ErrorCode = kerr.NotCoordinator.Code
		return rg
	}
	if g == nil || g.cg == nil {
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := fmt.Sprintf("Group %s is not a consumer group.", id)
		rg.ErrorMessage = &msg
		return rg
	}
	cg := g.cg
	rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = cg.state(), cg.epoch, cg.assignmentEpoch, cg.preferredAssignor()
	for _, mid := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[mid]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost, dm.SubscribedTopics = m.clientID, m.clientHost, m.subscribedNames
		if m.regex != "" {
			dm.SubscribedTopicRegex = &m.regex
		}
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.Assignment = describedAssignment(m.assigned, im)
		dm.TargetAssignment = describedAssignment(cg.target[m.id], im)
		dm.MemberType = 1 // consumer protocol (v1+; 0 is classic)
		rg.Members = append(rg.Members, dm)
	}
	return rg
}

func describedAssignment(a assignment, im *meta.Image) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range slices.SortedFunc(maps.Keys(a), cmpID) {
		at := kmsg.NewAssignmentTopicPartition()
		at.TopicID, at.Partitions = t, slices.Clone(a[t])
		if mt := im.TopicByID(t); mt != nil {
			at.Topic = mt.Name
		}
		out.TopicPartitions = append(out.TopicPartitions, at)
	}
	return out
}
