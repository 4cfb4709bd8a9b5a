package wire

// InitProducerId: v0-4.
//
// Behaviour: idempotent producers only (a transactional id is refused); every
// call allocates a fresh producer id at epoch 0, unique across the cluster
// and across broker restarts. A client asking to bump an existing id's epoch
// (v3+, KIP-360) also gets a fresh id, which is equally safe: sequences
// restart at 0 under a new id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(22, 0, 4, handleInitProducerID) }

func handleInitProducerID(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return now(resp)
	}
	id, epoch, e := s.b.NewProducerID(ctx)
	if e != nil {
		resp.ErrorCode = e.Code
		return now(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, epoch
	return now(resp)
}
