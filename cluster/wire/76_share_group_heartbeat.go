package wire

// ShareGroupHeartbeat: v1 (KIP-932; v0 was Kafka 4.0's early access,
// removed in 4.1).
//
// Behaviour: served by the share-group coordinator of the group's
// __consumer_offsets partition (cluster/share, Groups.Heartbeat): join with
// epoch 0 and a client-made member id, leave with -1, heartbeat otherwise;
// the assignment comes with each epoch change.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(76, 1, 1, handleShareGroupHeartbeat) }

func handleShareGroupHeartbeat(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	sb := s.shareBackend()
	if sb == nil {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = noShare.Code
		return now(resp)
	}
	return now(sb.ShareGroups().Heartbeat(req, hdr.clientID, ""))
}
