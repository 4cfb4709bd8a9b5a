package wire

// DescribeShareGroupOffsets: v0; AlterShareGroupOffsets: v0;
// DeleteShareGroupOffsets: v0 (KIP-932).
//
// Behaviour: served by the share group's coordinator (the group key's
// __consumer_offsets leader), which asks each share partition's share
// coordinator: describe reads the start offset (null topics: every share
// partition the group has state for; Lag, v1, is not offered); alter
// re-initializes the state at the given start offset with a new state
// epoch; delete removes the state of every partition of a topic. Alter and
// delete need an empty group (NON_EMPTY_GROUP); alter creates the group.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(90, 0, 0, handleDescribeShareGroupOffsets)
	register(91, 0, 0, handleAlterShareGroupOffsets)
	register(92, 0, 0, handleDeleteShareGroupOffsets)
}

func handleDescribeShareGroupOffsets(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	return reply{later: func() kmsg.Response { return sb.ShareGroups().DescribeOffsets(ctx, req) }}
}

func handleAlterShareGroupOffsets(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	return reply{later: func() kmsg.Response { return sb.ShareGroups().AlterOffsets(ctx, req) }}
}

func handleDeleteShareGroupOffsets(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	return reply{later: func() kmsg.Response { return sb.ShareGroups().DeleteOffsets(ctx, req) }}
}
