package wire

// ListOffsets: v1-6.
//
// Behaviour:
//   - timestamp -2 (earliest): the log start offset; -1 (latest): the high
//     watermark (the last stable offset too: no transactions);
//   - timestamp >= 0: the first batch whose max timestamp is at or after it
//     (batch granularity), or offset -1 when there is none;
//   - only the leader answers; CurrentLeaderEpoch (v4+) is checked;
//   - with the authorizer, DESCRIBE on the topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"

	"gregor/cluster/replica"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(2, 1, 6, handleListOffsets) }

func handleListOffsets(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, lp := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = lp.Partition
			rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
			p := s.b.Partition(t.Topic, lp.Partition)
			switch {
			case !s.topicAuthorized(hdr, kmsg.ACLOperationDescribe, t.Topic):
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code // KafkaApis.handleListOffsetRequest
			case p == nil && s.b.Image().Topics[t.Topic] != nil:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				o := p.ListOffset(lp.Timestamp, lp.CurrentLeaderEpoch, replica.Isolation(req.IsolationLevel))
				if o.Err != nil {
					rp.ErrorCode = o.Err.Code
				} else {
					rp.Offset, rp.Timestamp, rp.LeaderEpoch = o.Offset, o.Timestamp, o.LeaderEpoch
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return now(resp)
}
