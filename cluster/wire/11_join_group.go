package wire

// JoinGroup: v0-9.
//
// Behaviour (cluster/group): KIP-394 MEMBER_ID_REQUIRED from v4, static
// membership (KIP-345) from v5, the rebalance state machine of Kafka's
// classic protocol. The request waits for the rebalance to finish on the
// connection's writing side, so the connection keeps reading meanwhile.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.JoinGroupRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	wait := c.JoinGroup(ctx, hdr.clientID, "", req)
	return reply{later: func() kmsg.Response {
		r := wait()
		r.SetVersion(req.Version)
		if req.Version < 7 && r.Protocol == nil {
			empty := "" // non-nullable before v7
			r.Protocol = &empty
		}
		return r
	}}
}
