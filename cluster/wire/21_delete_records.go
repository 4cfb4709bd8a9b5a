package wire

// DeleteRecords: v0-2 (KIP-107).
//
// Behaviour:
//   - on the partition's leader only (NOT_LEADER_OR_FOLLOWER elsewhere, so
//     the client re-routes); offset -1 means the high watermark; an offset
//     past the high watermark is OFFSET_OUT_OF_RANGE;
//   - the log start offset moves durably (checkpointed before it takes
//     effect), whole segments below it are deleted, consumers asking for an
//     offset below it get OFFSET_OUT_OF_RANGE, and followers follow the
//     leader's start from its fetch answers;
//   - LowWatermark answers the leader's new log start offset at once. Kafka
//     instead waits (DelayedDeleteRecords, up to TimeoutMillis) until every
//     replica's start offset has reached it and answers their minimum.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	im := s.b.Image()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, dp := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = dp.Partition, -1
			p := s.b.Partition(t.Topic, dp.Partition)
			switch {
			case !s.topicAuthorized(hdr, kmsg.ACLOperationDelete, t.Topic):
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code // KafkaApis: DELETE on the topic, before existence
			case p == nil && im.Topics[t.Topic] != nil:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				low, e := p.DeleteRecordsBefore(dp.Offset)
				if e != nil {
					rp.ErrorCode = e.Code
				} else {
					rp.LowWatermark = low
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return now(resp)
}
