package wire

// ShareGroupDescribe: v1 (KIP-932).
//
// Behaviour: each group's epoch, state (Empty or Stable), members, their
// subscriptions and assignments, from its coordinator (Groups.Describe);
// GROUP_ID_NOT_FOUND for a group that is not a share group here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(77, 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	// KafkaApis.handleShareGroupDescribe: DESCRIBE on each group.
	allowed, denied := s.authorizedGroups(hdr, kmsg.ACLOperationDescribe, req.GroupIDs)
	cp := *req
	cp.GroupIDs = allowed
	r := sb.ShareGroups().Describe(&cp)
	for _, g := range denied {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		r.Groups = append(r.Groups, rg)
	}
	return now(r)
}
