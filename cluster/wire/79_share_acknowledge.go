package wire

// ShareAcknowledge: v1-2 (KIP-932; v2 adds KIP-1222's renewal).
//
// Behaviour (Manager.Acknowledge): the session's next epoch, or -1 closing
// it; each partition's acknowledgements (accept, release, reject, renew)
// are applied all or nothing and written to the share coordinator before
// the answer; INVALID_RECORD_STATE for a record the member does not hold.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(79, 1, 2, handleShareAcknowledge) }

func handleShareAcknowledge(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	// KafkaApis.handleShareAcknowledgeRequest: READ on the group
	// (requestChecks), then READ on each topic, per partition.
	return reply{later: func() kmsg.Response { return sb.ShareManager().Acknowledge(ctx, req, s.topicReader(hdr)) }}
}
