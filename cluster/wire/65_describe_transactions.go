package wire

// DescribeTransactions: v0.
//
// Behaviour: per transactional id this broker coordinates: its producer id
// and epoch, state, timeout, start time and partitions (as
// kafka-transactions.sh describe shows them); TRANSACTIONAL_ID_NOT_FOUND
// for an id with no metadata, NOT_COORDINATOR for one coordinated
// elsewhere, COORDINATOR_LOAD_IN_PROGRESS while loading.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/txn"
)

func init() { register(65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	c := s.txnCoordinator()
	for _, id := range req.TransactionalIDs {
		rt := kmsg.NewDescribeTransactionsResponseTransactionState()
		rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.StartTimestamp = id, -1, -1, -1
		if c == nil {
			rt.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.TransactionStates = append(resp.TransactionStates, rt)
			continue
		}
		d, e := c.Describe(id)
		if e != nil {
			rt.ErrorCode = e.Code
			resp.TransactionStates = append(resp.TransactionStates, rt)
			continue
		}
		rt.State, rt.ProducerID, rt.ProducerEpoch = string(d.State), d.ProducerID, d.Epoch
		rt.TimeoutMillis, rt.StartTimestamp = d.TimeoutMs, d.StartMs
		for _, t := range txn.ByTopic(d.Partitions) {
			rtt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			rtt.Topic, rtt.Partitions = t.Topic, t.Partitions
			rt.Topics = append(rt.Topics, rtt)
		}
		resp.TransactionStates = append(resp.TransactionStates, rt)
	}
	return now(resp)
}
