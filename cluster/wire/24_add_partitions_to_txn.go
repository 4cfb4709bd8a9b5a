package wire

// AddPartitionsToTxn: v0-5.
//
// Behaviour:
//   - v0-3 come from clients (transaction version 1): the partitions join
//     the producer's transaction, which starts if none is open; written to
//     __transaction_state before the answer; PRODUCER_FENCED for an old
//     epoch (INVALID_PRODUCER_EPOCH before v2), INVALID_PRODUCER_ID_MAPPING
//     for another producer, CONCURRENT_TRANSACTIONS while the previous
//     transaction is being completed;
//   - v4+ come from partition leaders, batched by transaction: VerifyOnly
//     asks whether the partitions are in the transaction (KIP-890 part 1:
//     TRANSACTION_ABORTABLE for one that is not), otherwise they are added
//     (KIP-890 part 2, a transaction version 2 produce);
//   - a partition of an unknown topic fails the whole transaction's request:
//     UNKNOWN_TOPIC_OR_PARTITION for it, OPERATION_NOT_ATTEMPTED for the rest;
//   - with the authorizer (KafkaApis.handleAddPartitionsToTxnRequest): v4+
//     needs CLUSTER_ACTION (authz.go), each transaction WRITE on its
//     TransactionalId (every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
//     and on each topic (TOPIC_AUTHORIZATION_FAILED, failing the request as
//     an unknown topic does).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/txn"
)

func init() { register(24, 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	txns := req.Transactions
	if req.Version < 4 {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch = req.TransactionalID, req.ProducerID, req.ProducerEpoch
		for _, rt := range req.Topics {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = rt.Topic, rt.Partitions
			t.Topics = append(t.Topics, tt)
		}
		txns = []kmsg.AddPartitionsToTxnRequestTransaction{t}
	}
	c := s.txnCoordinator()
	im := s.b.Image()
	return reply{later: func() kmsg.Response {
		for _, t := range txns {
			parts := toTxnPartitions(t.Topics, func(x kmsg.AddPartitionsToTxnRequestTransactionTopic) string { return x.Topic },
				func(x kmsg.AddPartitionsToTxnRequestTransactionTopic) []int32 { return x.Partitions })
			res := map[txn.TopicPartition]*kerr.Error{}
			var all *kerr.Error
			unknown := false
			for _, tp := range parts {
				// KafkaApis: WRITE on each topic, asked before existence.
				if !s.topicAuthorized(hdr, kmsg.ACLOperationWrite, tp.Topic) {
					res[tp], unknown = kerr.TopicAuthorizationFailed, true
				} else if topic := im.Topics[tp.Topic]; topic == nil || tp.Partition < 0 || int(tp.Partition) >= len(topic.Partitions) {
					res[tp], unknown = kerr.UnknownTopicOrPartition, true
				}
			}
			switch {
			case !s.txnIDAuthorized(hdr, kmsg.ACLOperationWrite, t.TransactionalID):
				all = kerr.TransactionalIDAuthorizationFailed // KafkaApis: WRITE on the TransactionalId
			case unknown:
				for _, tp := range parts {
					if res[tp] == nil {
						res[tp] = kerr.OperationNotAttempted
					}
				}
			case c == nil:
				all = kerr.CoordinatorNotAvailable
			case t.VerifyOnly:
				res, all = c.VerifyPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts)
			default:
				all = fencedFor(c.AddPartitions(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts), req.Version, 2)
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = t.TransactionalID
			for _, topic := range t.Topics {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = topic.Topic
				for _, p := range topic.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition = p
					e := all
					if e == nil {
						e = res[txn.TopicPartition{Topic: topic.Topic, Partition: p}]
					}
					rp.ErrorCode = code(e)
					tt.Partitions = append(tt.Partitions, rp)
				}
				rt.Topics = append(rt.Topics, tt)
			}
			resp.Transactions = append(resp.Transactions, rt)
		}
		if req.Version < 4 && len(resp.Transactions) == 1 {
			for _, tt := range resp.Transactions[0].Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = tt.Topic
				for _, tp := range tt.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = tp.Partition, tp.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			resp.Transactions = nil
		}
		return resp
	}}
}
