package wire

// InitProducerId: v0-4.
//
// Behaviour:
//   - without a transactional id (idempotent producers): a fresh producer id
//     at epoch 0, unique across the cluster and across broker restarts; a
//     client asking to bump an existing id's epoch (v3+, KIP-360) also gets
//     a fresh id, which is equally safe: sequences restart at 0 under it;
//   - with a transactional id: answered by the id's transaction coordinator
//     (NOT_COORDINATOR elsewhere): a new producer id the first time, then an
//     epoch bump per call that fences the previous producer; an open
//     transaction of the old epoch is aborted first and the caller told
//     CONCURRENT_TRANSACTIONS, to retry; transaction.timeout.ms above
//     transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT; v3+'s
//     current id and epoch (KIP-360) must be the id's current ones, else
//     PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/txn"
)

func init() { register(22, 0, 4, handleInitProducerID) }

func handleInitProducerID(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID == nil {
		id, epoch, e := s.b.NewProducerID(ctx)
		if e != nil {
			resp.ErrorCode = e.Code
			return now(resp)
		}
		resp.ProducerID, resp.ProducerEpoch = id, epoch
		return now(resp)
	}
	c := s.txnCoordinator()
	if c == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	var expected *txn.ProducerIDEpoch
	switch {
	case req.ProducerID == -1 && req.ProducerEpoch == -1:
	case req.ProducerID == -1 || req.ProducerEpoch == -1:
		resp.ErrorCode = kerr.InvalidRequest.Code
		return now(resp)
	default:
		expected = &txn.ProducerIDEpoch{ID: req.ProducerID, Epoch: req.ProducerEpoch}
	}
	return reply{later: func() kmsg.Response {
		id, epoch, e := c.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, expected)
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = id, epoch, code(fencedFor(e, req.Version, 4))
		return resp
	}}
}
