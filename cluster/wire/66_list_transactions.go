package wire

// ListTransactions: v0-1.
//
// Behaviour: the transactions of the __transaction_state partitions this
// broker leads (a client asks every broker), filtered by state names
// (unknown ones echoed back), producer ids and (v1) a minimum running time;
// COORDINATOR_LOAD_IN_PROGRESS while a partition loads.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/txn"
)

func init() { register(66, 0, 1, handleListTransactions) }

func handleListTransactions(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	c := s.txnCoordinator()
	if c == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return now(resp)
	}
	f := txn.Filter{States: req.StateFilters, ProducerIDs: req.ProducerIDFilters, MinDurationMs: -1}
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	ds, unknown, e := c.List(f)
	if e != nil {
		resp.ErrorCode = e.Code
		return now(resp)
	}
	resp.UnknownStateFilters = unknown
	for _, d := range ds {
		rt := kmsg.NewListTransactionsResponseTransactionState()
		rt.TransactionalID, rt.ProducerID, rt.TransactionState = d.ID, d.ProducerID, string(d.State)
		resp.TransactionStates = append(resp.TransactionStates, rt)
	}
	return now(resp)
}
