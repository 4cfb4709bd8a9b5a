package wire

// ShareFetch: v1-2 (KIP-932; v2 adds KIP-1222's lock renewal and
// KIP-1206's acquire mode, which is taken as batch-optimized).
//
// Behaviour (cluster/share, Manager.Fetch): share sessions (epoch 0 opens,
// -1 closes and releases the member's records, any other is the next
// epoch); piggybacked acknowledgements are written to the share
// coordinator before the answer; records are acquired under a lock of
// share.record.lock.duration.ms, redeliveries first, whole batches, up to
// MaxRecords, with a long poll of MaxWaitMillis when there are none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(78, 1, 2, handleShareFetch) }

func handleShareFetch(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ShareFetchRequest)
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	// KafkaApis.handleShareFetchRequest: READ on the group (requestChecks),
	// then READ on each topic, per partition.
	return reply{later: func() kmsg.Response { return sb.ShareManager().Fetch(ctx, req, s.topicReader(hdr)) }}
}
