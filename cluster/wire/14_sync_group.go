package wire

// SyncGroup: v0-5. The leader's assignment is written to __consumer_offsets
// (acks=all) before the members get theirs; members wait on the writing side.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(14, 0, 5, handleSyncGroup) }

func handleSyncGroup(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.SyncGroupRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	wait := c.SyncGroup(ctx, req)
	return reply{later: func() kmsg.Response {
		r := wait()
		r.SetVersion(req.Version)
		return r
	}}
}
