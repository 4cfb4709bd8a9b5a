package wire

// DescribeGroups: v0-5. Unknown groups are described as Dead.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(15, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return now(resp)
	}
	// KafkaApis.handleDescribeGroupsRequest: DESCRIBE on each group, and
	// (v3+, when asked) each described group's authorized operations.
	allowed, denied := s.authorizedGroups(hdr, kmsg.ACLOperationDescribe, req.Groups)
	cp := *req
	cp.Groups = allowed
	r := c.DescribeGroups(&cp)
	r.SetVersion(req.Version)
	if req.Version >= 3 && req.IncludeAuthorizedOperations {
		for i := range r.Groups {
			if g := &r.Groups[i]; g.ErrorCode == 0 {
				g.AuthorizedOperations = s.authorizedOperations(hdr, kmsg.ACLResourceTypeGroup, g.Group)
			}
		}
	}
	for _, g := range denied {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		r.Groups = append(r.Groups, rg)
	}
	return now(r)
}
