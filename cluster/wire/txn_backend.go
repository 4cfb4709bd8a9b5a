package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/txn"
)

// TxnBackend is implemented by brokers that run a transaction coordinator.
// Brokers without one answer transactional requests COORDINATOR_NOT_AVAILABLE
// and advertise transaction.version 0.
type TxnBackend interface {
	// TxnCoordinator is this broker's transaction coordinator.
	TxnCoordinator() *txn.Coordinator
	// FindTxnCoordinator names the broker coordinating a transactional id,
	// creating __transaction_state on first use.
	FindTxnCoordinator(ctx context.Context, id string) (Coordinator, *kerr.Error)
	// TransactionVersion is the cluster's transaction.version feature: 1
	// (Kafka 3.x) or 2 (KIP-890).
	TransactionVersion() int16
	// VerifyTxn asks the coordinator of id whether the producer's
	// transaction includes the partitions (KIP-890 part 1) or, with add,
	// adds them (part 2), as a partition leader does before taking a
	// transactional batch that starts a transaction. It answers per
	// partition, or one error for all, already mapped to what a produce
	// answers (ReplicaManager's translation of coordinator errors).
	VerifyTxn(ctx context.Context, id string, pid int64, epoch int16, parts []txn.TopicPartition, add bool) (map[txn.TopicPartition]*kerr.Error, *kerr.Error)
}

// txnCoordinator returns the server's transaction coordinator, or nil.
func (s *Server) txnCoordinator() *txn.Coordinator {
	tb, ok := s.b.(TxnBackend)
	if !ok {
		return nil
	}
	return tb.TxnCoordinator()
}

// transactionVersion is the cluster's transaction.version (0 without a
// coordinator).
func (s *Server) transactionVersion() int16 {
	if tb, ok := s.b.(TxnBackend); ok && tb.TxnCoordinator() != nil {
		return tb.TransactionVersion()
	}
	return 0
}

// maxVersion is the highest version of key this server takes. The versions
// that carry KIP-890's semantics (Produce v12 adds partitions implicitly,
// EndTxn v5 bumps the epoch, TxnOffsetCommit v5 adds the group's partition)
// are offered only when the cluster's transaction.version is 2, so a
// client negotiates the version the cluster runs.
func (s *Server) maxVersion(key int16) int16 {
	max := apis[key].versions.max
	if s.transactionVersion() < 2 {
		switch key {
		case 0:
			return min(max, 11)
		case 26, 28:
			return min(max, 4)
		}
	}
	return max
}

// fencedFor maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for clients that
// predate it (KafkaApis does so below a version per API).
func fencedFor(e *kerr.Error, version, since int16) *kerr.Error {
	if e == kerr.ProducerFenced && version < since {
		return kerr.InvalidProducerEpoch
	}
	return e
}

func code(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

// toTxnPartitions lists a request's partitions for the coordinator.
func toTxnPartitions[T any](topics []T, name func(T) string, parts func(T) []int32) []txn.TopicPartition {
	var out []txn.TopicPartition
	for _, t := range topics {
		for _, p := range parts(t) {
			out = append(out, txn.TopicPartition{Topic: name(t), Partition: p})
		}
	}
	return out
}
