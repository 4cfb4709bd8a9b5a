package wire

// Produce: v3-11 (record batch v2 only).
//
// Behaviour:
//   - acks=0: appended, no response at all; acks=1: answered after the
//     leader's append; acks=-1 (all): min ISR checked before appending
//     (NOT_ENOUGH_REPLICAS), then answered once the HW passes the batch, or
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min ISR
//     meanwhile, or REQUEST_TIMED_OUT after TimeoutMillis, or
//     NOT_LEADER_OR_FOLLOWER if leadership moved (the write's fate is then
//     unknown to the client, as in Kafka);
//   - every batch's CRC is checked; offsets and the leader epoch are assigned
//     by the leader; every compression codec passes through untouched (the
//     broker never decompresses);
//   - idempotent batches: sequence checks per producer and partition; a
//     retried batch is answered with its original offsets and not written again;
//   - transactional batches are refused (transactions come later).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/replica"
)

func init() { register(0, 3, 11, handleProduce) }

// maxProduceWait bounds an acks=all wait whatever the client asks for.
const maxProduceWait = 5 * time.Minute

func handleProduce(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.TransactionID != nil {
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				msg := "transactions are not supported by this broker"
				rp.ErrorMessage = &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return now(resp)
	}
	type waitFor struct {
		ti, pi int
		p      *replica.Partition
		end    int64
		epoch  int32
	}
	var waits []waitFor
	im := s.b.Image()
	for ti, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for pi, tp := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = tp.Partition
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
			p := s.b.Partition(t.Topic, tp.Partition)
			if p == nil {
				if topic := im.Topics[t.Topic]; topic != nil && tp.Partition >= 0 && int(tp.Partition) < len(topic.Partitions) {
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				} else {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			res, e := p.AppendAsLeader(tp.Records, replica.AppendOptions{Acks: req.Acks})
			if e != nil {
				rp.ErrorCode = e.Code
			} else {
				rp.BaseOffset = res.BaseOffset
				rp.LogStartOffset = res.LogStart
				if req.Acks == -1 {
					waits = append(waits, waitFor{ti, pi, p, res.EndOffset, res.Epoch})
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		return reply{none: true}
	}
	if len(waits) == 0 {
		return now(resp)
	}
	timeout := min(time.Duration(req.TimeoutMillis)*time.Millisecond, maxProduceWait)
	return reply{later: func() kmsg.Response {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, w := range waits {
			if e := w.p.WaitCommitted(wctx, w.end, w.epoch); e != nil {
				rp := &resp.Topics[w.ti].Partitions[w.pi]
				rp.ErrorCode = e.Code
				rp.BaseOffset = -1
			}
		}
		return resp
	}}
}
