package wire

// Fetch: v4-12.
//
// Behaviour:
//   - consumers (replica id -1) read whole batches below the high watermark;
//     followers (replica id >= 0) read up to the leader's LEO, and their fetch
//     offset is how the leader learns their LEO (it moves the HW and the ISR);
//   - long poll: the answer waits until MinBytes are available or MaxWaitMillis
//     passes; any error answers at once;
//   - MaxBytes and PartitionMaxBytes are honoured, except that the first
//     batch of the first partition with data is returned whole (KIP-74);
//   - fetch sessions (KIP-227) are not created: SessionID 0 tells the client
//     to send full fetches;
//   - IsolationLevel read_committed answers up to the last stable offset
//     (the first offset of the earliest transaction not decided or whose
//     marker is not replicated, else the HW) with the aborted transactions
//     among the records, which the client drops (KIP-98); read_uncommitted
//     answers up to the HW; both return control batches, which clients skip;
//   - CurrentLeaderEpoch is checked: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH;
//   - a partition with nothing to return carries empty records, never null
//     (Kafka's MemoryRecords.EMPTY; librdkafka rejects a null set);
//   - with the authorizer: a follower needs CLUSTER_ACTION on the cluster,
//     a consumer READ on each topic (TOPIC_AUTHORIZATION_FAILED), checked
//     at every pass of the long poll.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/replica"
	"gregor/internal/sleep"
)

func init() { register(1, 4, 12, handleFetch) }

// maxFetchWait bounds a long poll whatever the client asks for.
const maxFetchWait = 30 * time.Second

func handleFetch(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.FetchRequest)
	if req.SessionID != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return now(resp)
	}
	wait := min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxFetchWait)
	deadline := time.Now().Add(wait)
	return reply{later: func() kmsg.Response {
		// Bounded: each pass either answers or waits for a change or the
		// deadline; a change without enough bytes loops at most until then.
		for {
			resp, bytes, watches, failed := s.fetchOnce(hdr, req)
			if failed || bytes >= int(req.MinBytes) || bytes > 0 && req.MinBytes <= 0 || !time.Now().Before(deadline) {
				return resp
			}
			if !sleep.UntilAny(ctx, watches, deadline) {
				resp, _, _, _ = s.fetchOnce(hdr, req)
				return resp
			}
		}
	}}
}

// fetchOnce reads every requested partition once.
func (s *Server) fetchOnce(hdr header, req *kmsg.FetchRequest) (resp *kmsg.FetchResponse, total int, watches []<-chan struct{}, failed bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 1 << 30
	}
	follower := req.ReplicaID >= 0
	// KafkaApis.handleFetchRequest: a follower needs CLUSTER_ACTION on the
	// cluster, a consumer READ on each topic; asked at every pass of a
	// long poll, so the answer is the ACLs' as of when it is sent.
	followerDenied := follower && !s.clusterAuthorized(hdr, kmsg.ACLOperationClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		rt.TopicID = t.TopicID
		denied := followerDenied || !follower && !s.topicAuthorized(hdr, kmsg.ACLOperationRead, t.Topic)
		for _, fp := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = fp.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.PreferredReadReplica = -1
			// Kafka answers MemoryRecords.EMPTY (size 0), never null, even
			// with an error: librdkafka refuses a null set ("invalid
			// MessageSetSize -1") and backs off forever, so kcat -e never
			// reached the end of a partition.
			rp.RecordBatches = []byte{}
			if denied {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				failed = true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			p := s.b.Partition(t.Topic, fp.Partition)
			if p == nil {
				if s.b.Image().Topics[t.Topic] != nil {
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				} else {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				failed = true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			watches = append(watches, p.Watch())
			max := int(fp.PartitionMaxBytes)
			if max > budget {
				max = budget
			}
			if total > 0 && max <= 0 {
				// Out of budget: report offsets only.
				max = 0
			}
			var r replica.ReadResult
			if follower {
				r = p.ReadForFollower(req.ReplicaID, fp.FetchOffset, max, fp.CurrentLeaderEpoch)
			} else {
				r = p.ReadForConsumer(fp.FetchOffset, max, fp.CurrentLeaderEpoch, replica.Isolation(req.IsolationLevel))
			}
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = r.HW, r.LSO, r.LogStart
			for _, t := range r.Aborted {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = t.ProducerID, t.FirstOffset
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
			if r.Err != nil {
				rp.ErrorCode = r.Err.Code
				failed = true
			} else if (max > 0 || total == 0) && r.Records != nil {
				rp.RecordBatches = r.Records
				total += len(r.Records)
				budget -= len(r.Records)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, total, watches, failed
}
