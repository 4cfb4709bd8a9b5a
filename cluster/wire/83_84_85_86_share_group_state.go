package wire

// InitializeShareGroupState: v0; ReadShareGroupState: v0;
// WriteShareGroupState: v0; DeleteShareGroupState: v0 (KIP-932; broker to
// broker).
//
// Behaviour: served by the share coordinator of each share partition (the
// leader of its __share_group_state partition, cluster/share's
// StateCoordinator): the state is appended with acks=all before the answer;
// writes are fenced by state epoch (FENCED_STATE_EPOCH) and leader epoch
// (FENCED_LEADER_EPOCH); a read by a newer leader records its epoch first;
// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS while the partition is
// elsewhere or loading.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(83, 0, 0, handleShareState)
	register(84, 0, 0, handleShareState)
	register(85, 0, 0, handleShareState)
	register(86, 0, 0, handleShareState)
}

func handleShareState(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	c := sb.ShareState()
	return reply{later: func() kmsg.Response {
		switch req := kreq.(type) {
		case *kmsg.InitializeShareGroupStateRequest:
			return c.ServeInitialize(ctx, req)
		case *kmsg.ReadShareGroupStateRequest:
			return c.ServeRead(ctx, req)
		case *kmsg.WriteShareGroupStateRequest:
			return c.ServeWrite(ctx, req)
		default:
			return c.ServeDelete(ctx, kreq.(*kmsg.DeleteShareGroupStateRequest))
		}
	}}
}
