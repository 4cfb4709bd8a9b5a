package kit

import (
	"context"
	"errors"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
)

// The classification of an operation's outcome from its client's errors,
// one for every workload: a wrong "fail" makes the checker report a false
// G1a, so only a rejection before append is one.

// definite lists the Kafka errors a broker answers before appending
// anything: a send that ends with one of them, and saw nothing else on any
// attempt, certainly did not write its record. NOT_ENOUGH_REPLICAS is the
// min ISR check before append (seed 003); ..._AFTER_APPEND is NOT here.
var definite = map[int16]bool{
	kerr.NotEnoughReplicas.Code:           true,
	kerr.CorruptMessage.Code:              true,
	kerr.MessageTooLarge.Code:             true,
	kerr.RecordListTooLarge.Code:          true,
	kerr.InvalidRequiredAcks.Code:         true,
	kerr.InvalidTopicException.Code:       true,
	kerr.InvalidRecord.Code:               true,
	kerr.TopicAuthorizationFailed.Code:    true,
	kerr.ClusterAuthorizationFailed.Code:  true,
	kerr.UnsupportedForMessageFormat.Code: true,
	kerr.UnknownTopicOrPartition.Code:     true,
}

// ErrorName is the name a send's error is recorded under in Op.Error: the
// Kafka error name where one is wrapped (franz-go's record timeout wraps the
// last retry's error), else a short name for the client-side cause.
func ErrorName(err error) string {
	var ke *kerr.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ke):
		return ke.Message
	case errors.Is(err, kgo.ErrRecordTimeout):
		return "TIMEOUT"
	case errors.Is(err, kgo.ErrClientClosed):
		return "CLIENT_CLOSED"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "TIMEOUT"
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return "NETWORK"
	}
	return "UNKNOWN"
}

// IsDefinite reports whether err is a rejection before append.
func IsDefinite(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && definite[ke.Code]
}

// Classify turns a send's final error into the completion type. clean says
// that every attempt of the send got a response and every per-partition
// error on the way was definite (see attempts); without it a definite last
// error proves nothing, because an earlier attempt may have appended the
// record (a timeout, a lost connection, NOT_ENOUGH_REPLICAS_AFTER_APPEND)
// before franz-go retried. Unknown is always safe; a wrong fail makes the
// checker report a false G1a.
func Classify(err error, clean bool) history.Type {
	switch {
	case err == nil:
		return history.OK
	case clean && IsDefinite(err):
		return history.Fail
	}
	return history.Info
}

// ClassifyOp is the completion type of an operation of several sends, from
// each send's final error: ok when every record was acknowledged, fail
// when every one was certainly refused (Classify), else unknown. An
// operation has one type, and one with some records acknowledged and
// others refused happened in part: unknown is the safe answer.
func ClassifyOp(errs []error, clean bool) history.Type {
	failed := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		if Classify(err, clean) != history.Fail {
			return history.Info
		}
		failed++
	}
	switch failed {
	case 0:
		return history.OK
	case len(errs):
		return history.Fail
	}
	return history.Info
}
