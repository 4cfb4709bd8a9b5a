package wire

// TxnOffsetCommit: v0-5 (v5 only when the cluster's transaction.version is 2).
//
// Behaviour: the offsets are written to the group's __consumer_offsets
// partition as part of the producer's transaction (a transactional batch,
// fenced by the producer epoch, its transaction verified with the
// coordinator or, v5, joined to it: KIP-890) and reach the group only with
// the transaction's COMMIT marker; OffsetFetch with RequireStable answers
// UNSTABLE_OFFSET_COMMIT meanwhile. v3+ checks member id and generation when
// given (KIP-447), but not a rebalance in progress.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(28, 0, 5, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	c := s.coordinator()
	if c == nil {
		return now(txnOffsetCommitError(req, kerr.CoordinatorNotAvailable.Code))
	}
	var denied []kmsg.TxnOffsetCommitResponseTopic
	if s.opts.Authz != nil {
		// KafkaApis.handleTxnOffsetCommitRequest: WRITE on the
		// TransactionalId, READ on the group (every partition refused),
		// then READ on each topic.
		switch {
		case !s.txnIDAuthorized(hdr, kmsg.ACLOperationWrite, req.TransactionalID):
			return now(txnOffsetCommitError(req, kerr.TransactionalIDAuthorizationFailed.Code))
		case !s.groupAuthorized(hdr, kmsg.ACLOperationRead, req.Group):
			return now(txnOffsetCommitError(req, kerr.GroupAuthorizationFailed.Code))
		}
		cp := *req
		cp.Topics = nil
		for _, t := range req.Topics {
			if s.topicAuthorized(hdr, kmsg.ACLOperationRead, t.Topic) {
				cp.Topics = append(cp.Topics, t)
				continue
			}
			one := cp
			one.Topics = []kmsg.TxnOffsetCommitRequestTopic{t}
			denied = append(denied, txnOffsetCommitError(&one, kerr.TopicAuthorizationFailed.Code).Topics...)
		}
		if len(cp.Topics) == 0 {
			resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			resp.Topics = denied
			return now(resp)
		}
		req = &cp
	}
	wait := c.TxnOffsetCommit(ctx, req)
	return reply{later: func() kmsg.Response {
		r := wait()
		r.SetVersion(req.Version)
		r.Topics = append(r.Topics, denied...)
		return r
	}}
}

// txnOffsetCommitError answers every partition of req with code, as the
// request's getErrorResponse.
func txnOffsetCommitError(req *kmsg.TxnOffsetCommitRequest, code int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
