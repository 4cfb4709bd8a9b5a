package wire

// ListGroups: v0-4 (v4: filter by state). Each broker lists the groups it
// coordinates; clients ask every broker.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(16, 0, 4, handleListGroups) }

func handleListGroups(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ListGroupsRequest)
	c := s.coordinator()
	if c == nil {
		return now(req.ResponseKind()) // no coordinator: no groups
	}
	r := c.ListGroups(req)
	r.SetVersion(req.Version)
	// KafkaApis.handleListGroupsRequest: every group with DESCRIBE on the
	// cluster, else only those the principal may describe.
	if s.opts.Authz != nil && !s.clusterAuthorized(hdr, kmsg.ACLOperationDescribe) {
		var kept []kmsg.ListGroupsResponseGroup
		for _, g := range r.Groups {
			if s.groupAuthorized(hdr, kmsg.ACLOperationDescribe, g.Group) {
				kept = append(kept, g)
			}
		}
		r.Groups = kept
	}
	return now(r)
}
