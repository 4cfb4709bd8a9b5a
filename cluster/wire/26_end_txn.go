package wire

// EndTxn: v0-5 (v5 only when the cluster's transaction.version is 2).
//
// Behaviour: the coordinator writes PrepareCommit or PrepareAbort to
// __transaction_state and answers once it is durable; markers follow in
// the background, then CompleteCommit / CompleteAbort. v5 (KIP-890) bumps
// the producer epoch at every end and answers with the new producer id and
// epoch; a retry of a finished end is answered with them again, while an
// end of an older epoch is PRODUCER_FENCED. Below v5 the epoch stays
// (Kafka 3.x): an end at the current epoch ends whatever transaction is
// open. v5 takes an abort that finds nothing open (Empty, or a finished
// end at the current epoch) and bumps the epoch: partitions join on
// produce, so a client whose produces failed aborts not knowing whether
// one registered (KIP-890, TransactionCoordinator.endTransaction).
// INVALID_TXN_STATE for an end that contradicts a finished one or a commit
// with nothing open; CONCURRENT_TRANSACTIONS while one completes;
// PRODUCER_FENCED as INVALID_PRODUCER_EPOCH before v2.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(26, 0, 5, handleEndTxn) }

func handleEndTxn(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	c := s.txnCoordinator()
	if c == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	version := int16(1)
	if req.Version >= 5 {
		version = 2 // KafkaApis: a v5 EndTxn is a transaction version 2 client
	}
	return reply{later: func() kmsg.Response {
		pid, epoch, e := c.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, version)
		resp.ErrorCode = code(fencedFor(e, req.Version, 2))
		if req.Version >= 5 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		return resp
	}}
}
