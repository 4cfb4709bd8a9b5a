package queue

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/workloads/kit"
)

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
		if err, ok := keyvals[i+1].(error); ok && !kit.IsDefinite(err) {
			h.a.mu.Lock()
			h.a.ambiguous = true
			h.a.mu.Unlock()
		}
	}
}

func (a *attempts) opts() []kgo.Opt {
	return []kgo.Opt{kgo.WithHooks(writeHook{a}, e2eHook{a}), kgo.WithLogger(logHook{a})}
}
