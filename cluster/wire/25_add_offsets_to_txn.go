package wire

// AddOffsetsToTxn: v0-4.
//
// Behaviour: the group's __consumer_offsets partition joins the producer's
// transaction (transaction version 1; version 2 clients let TxnOffsetCommit
// v5 add it), so that the transaction's offset commits are materialized
// only by its COMMIT marker. Errors as AddPartitionsToTxn (PRODUCER_FENCED
// as INVALID_PRODUCER_EPOCH before v2).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(25, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	c := s.txnCoordinator()
	if c == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	return reply{later: func() kmsg.Response {
		e := c.AddOffsets(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
		resp.ErrorCode = code(fencedFor(e, req.Version, 2))
		return resp
	}}
}
