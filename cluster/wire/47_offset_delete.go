package wire

// OffsetDelete: v0 (KIP-496).
//
// Behaviour: handled by the group's coordinator (NOT_COORDINATOR elsewhere):
// an unknown group is GROUP_ID_NOT_FOUND; in a consumer group with members,
// partitions of subscribed topics answer GROUP_SUBSCRIBED_TO_TOPIC; the
// other named partitions lose their committed offset (tombstoned in
// __consumer_offsets, acks=all). See group.Coordinator.OffsetDelete.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	wait := c.OffsetDelete(ctx, req)
	return reply{later: func() kmsg.Response {
		r := wait()
		r.SetVersion(req.Version)
		return r
	}}
}
