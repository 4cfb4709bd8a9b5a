package wire

// FindCoordinator: v0-4 (v4: a batch of CoordinatorKeys, KIP-699).
//
// Behaviour:
//   - group keys (type 0): the leader of the group's __consumer_offsets
//     partition (Kafka's abs(hashCode) % partitions); the topic is created
//     on first use; COORDINATOR_NOT_AVAILABLE while it has no leader;
//   - transaction keys (type 1): the leader of the transactional id's
//     __transaction_state partition (the same hash), the topic created on
//     first use; other types: INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(10, 0, 4, handleFindCoordinator) }

func handleFindCoordinator(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.NodeID, rc.Port = key, -1, -1
		var e *kerr.Error
		var c Coordinator
		gb, isGroup := s.b.(GroupBackend)
		tb, isTxn := s.b.(TxnBackend)
		switch {
		case req.CoordinatorType == 1 && isTxn:
			c, e = tb.FindTxnCoordinator(ctx, key)
		case req.CoordinatorType == 0 && isGroup:
			c, e = gb.FindCoordinator(ctx, key)
		case req.CoordinatorType == 0 || req.CoordinatorType == 1:
			e = kerr.CoordinatorNotAvailable
		default:
			e = kerr.InvalidRequest
			msg := "coordinator type must be 0 (group) or 1 (transaction)"
			rc.ErrorMessage = &msg
		}
		if e == nil {
			rc.NodeID, rc.Host, rc.Port = c.NodeID, c.Host, c.Port
		}
		if e != nil {
			rc.ErrorCode = e.Code
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	if req.Version < 4 {
		rc := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = rc.ErrorCode, rc.ErrorMessage, rc.NodeID, rc.Host, rc.Port
	}
	return now(resp)
}
