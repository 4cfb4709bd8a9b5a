package queue

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
)

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

// attempts watches one client's produce requests through franz-go hooks and
// its logger, so Classify knows whether a send's earlier attempts were all
// answered with definite rejections. A process runs one send operation at
// a time on its own client, so everything seen between reset and clean
// belongs to the current operation.
type attempts struct {
	mu        sync.Mutex
	written   int  // produce requests written (possibly partially)
	answered  int  // produce responses read whole
	ambiguous bool // a per-partition error that may follow an append
	// open counts requests written and not yet finished (answered or
	// failed); peak is its maximum over the client's life (never reset).
	open, peak int
	// wrote is signalled (without blocking: one pending signal is enough)
	// after each written request, for awaitWriteAfter.
	wrote chan struct{}
}

func newAttempts() *attempts { return &attempts{wrote: make(chan struct{}, 1)} }

// writes is the count of produce requests written so far.
func (a *attempts) writes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.written
}

// awaitWriteAfter waits until more than n requests are written, or done is
// closed (the record completed without a new request: answered from an
// earlier one, or failed), or ctx ends. Bounded by ctx, the operation's
// delivery deadline.
func (a *attempts) awaitWriteAfter(ctx context.Context, n int, done <-chan struct{}) {
	for a.writes() <= n {
		select {
		case <-a.wrote:
		case <-done:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (a *attempts) reset() {
	a.mu.Lock()
	a.written, a.answered, a.ambiguous = 0, 0, false
	a.mu.Unlock()
}

// clean: every request answered, no ambiguous error seen.
func (a *attempts) clean() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.written == a.answered && !a.ambiguous
}

const produceKey = 0

type writeHook struct{ a *attempts }

func (h writeHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, bytesWritten int, _, _ time.Duration, err error) {
	if key != produceKey || (bytesWritten == 0 && err != nil) {
		return
	}
	h.a.mu.Lock()
	h.a.written++
	h.a.open++
	h.a.peak = max(h.a.peak, h.a.open)
	h.a.mu.Unlock()
	select {
	case h.a.wrote <- struct{}{}:
	default:
	}
}

type e2eHook struct{ a *attempts }

func (h e2eHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != produceKey {
		return
	}
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	if e.BytesWritten > 0 {
		h.a.open = max(0, h.a.open-1)
	}
	if e.Err() == nil {
		h.a.answered++
	}
}

// peakOpen is the most produce requests the client had in flight at once.
func (a *attempts) peakOpen() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

// logHook is a kgo.Logger at info level: franz-go logs every per-partition
// produce error ("batch in a produce request failed", key "err") there.
type logHook struct{ a *attempts }

func (logHook) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (h logHook) Log(_ kgo.LogLevel, _ string, keyvals ...any) {
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, _ := keyvals[i].(string); k != "err" {
			continue
		}
		if err, ok := keyvals[i+1].(error); ok && !IsDefinite(err) {
			h.a.mu.Lock()
			h.a.ambiguous = true
			h.a.mu.Unlock()
		}
	}
}

func (a *attempts) opts() []kgo.Opt {
	return []kgo.Opt{kgo.WithHooks(writeHook{a}, e2eHook{a}), kgo.WithLogger(logHook{a})}
}
