package wire

// Heartbeat: v0-4. REBALANCE_IN_PROGRESS tells a member to rejoin.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(12, 0, 4, handleHeartbeat) }

func handleHeartbeat(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.HeartbeatRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	r := c.Heartbeat(req)
	r.SetVersion(req.Version)
	return now(r)
}
