package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Log is this broker's replica of one partition of the internal topic.
type Log interface {
	// LeaderEpoch is the partition's leader epoch while this broker leads it.
	LeaderEpoch() (epoch int32, leader bool)
	// Append writes recs as one batch in the given leader epoch and returns
	// once the batch is committed as acks=all would be, with the offset of
	// its first record.
	Append(ctx context.Context, epoch int32, recs []Record) (base int64, err *kerr.Error)
	// Replay calls fn on every record from the log start to the log end,
	// in offset order.
	Replay(ctx context.Context, fn func(offset int64, r Record)) error
}

// Record is one key/value record of an internal topic. A nil Value is a
// tombstone (what the key names is deleted). The key and value formats are
// the coordinator's own: only it reads them back.
type Record struct {
	Key   []byte
	Value []byte
	// Txn is set on a replayed record of a transactional batch (a
	// TxnOffsetCommit in __consumer_offsets) and on a replayed transaction
	// marker; nil otherwise.
	Txn *TxnInfo
}

// TxnInfo is the transaction a replayed record belongs to.
type TxnInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	// Marker: the record is a COMMIT (Commit) or ABORT marker, with no key
	// or value: the producer's transaction on this partition ends here.
	Marker, Commit bool
}
