package wire

// DeleteGroups: v0-2. Only empty groups are deleted (NON_EMPTY_GROUP);
// their metadata and offsets are tombstoned in __consumer_offsets.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return now(resp)
	}
	// KafkaApis.handleDeleteGroupsRequest: DELETE on each group.
	allowed, denied := s.authorizedGroups(hdr, kmsg.ACLOperationDelete, req.Groups)
	cp := *req
	cp.Groups = allowed
	wait := c.DeleteGroups(ctx, &cp)
	return reply{later: func() kmsg.Response {
		r := wait()
		r.SetVersion(req.Version)
		for _, g := range denied {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			r.Groups = append(r.Groups, rg)
		}
		return r
	}}
}
