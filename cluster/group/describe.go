package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/twmb/franz-go/pkg/kmsg"
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
			if !g.known || !stateWanted(req.StatesFilter, g.state) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState = g.id, g.protocolType, string(g.state)
			lg.GroupType = "classic"
			resp.Groups = append(resp.Groups, lg)
		}
		s.unlock()
	}
	return resp
}

func stateWanted(filter []string, st State) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, string(st)) {
			return true
		}
	}
	return false
}
