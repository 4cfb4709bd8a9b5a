package wire

// LeaveGroup: v0-5 (v3+: a batch of members by member id or
// group.instance.id, each with its own error).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(13, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.LeaveGroupRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	r := c.LeaveGroup(req)
	r.SetVersion(req.Version)
	return now(r)
}
