package wire

// OffsetForLeaderEpoch: v2-4.
//
// Behaviour: for each partition, the end offset of the requested leader
// epoch on the leader's log (the start of the next epoch it knows, or its
// LEO for the latest), with the largest epoch <= the requested one. A
// follower truncates to min(that, its own LEO) before fetching: this is the
// KIP-101 fix that keeps a restarted follower from keeping records the new
// leader never had. CurrentLeaderEpoch is checked; only the leader answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(23, 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			op := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			op.Partition = rp.Partition
			op.LeaderEpoch, op.EndOffset = -1, -1
			p := s.b.Partition(t.Topic, rp.Partition)
			if p == nil {
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if s.b.Image().Topics[t.Topic] != nil {
					op.ErrorCode = kerr.NotLeaderForPartition.Code
				}
			} else if epoch, end, e := p.EndOffsetForEpoch(rp.LeaderEpoch, rp.CurrentLeaderEpoch); e != nil {
				op.ErrorCode = e.Code
			} else {
				op.LeaderEpoch, op.EndOffset = epoch, end
			}
			rt.Partitions = append(rt.Partitions, op)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return now(resp)
}
