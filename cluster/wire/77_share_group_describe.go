package wire

// ShareGroupDescribe: v1 (KIP-932).
//
// Behaviour: each group's epoch, state (Empty or Stable), members, their
// subscriptions and assignments, from its coordinator (Groups.Describe);
// GROUP_ID_NOT_FOUND for a group that is not a share group here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(77, 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	return now(sb.ShareGroups().Describe(req))
}
