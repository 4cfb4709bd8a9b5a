package history

import (
	"bufio"
	"errors"
	"io"
	"sync"
	"time"
)

// DefaultFlushInterval bounds how long a written operation may sit in the
// buffer: a harness that crashes loses at most this much of its history, and
// the file it leaves is whole lines plus at most one truncated last line.
const DefaultFlushInterval = 100 * time.Millisecond

// Writer streams operations as JSON Lines. It is safe for concurrent use and
// assigns each operation its index, so the file's order is the index order.
type Writer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	line []byte
	next int64
	// every flushes after each line when FlushInterval is zero.
	interval time.Duration
	timer    *time.Timer   // armed while unflushed data exists; nil otherwise
	err      error         // first write error; sticky
	failed   chan struct{} // closed when err is set
	closed   bool
}

// NewWriter writes to w, flushing at most flushInterval after a write;
// flushInterval <= 0 flushes after every line.
func NewWriter(w io.Writer, flushInterval time.Duration) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), interval: flushInterval, failed: make(chan struct{})}
}

// fail records the first write error. Caller holds mu.
func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
		close(w.failed)
	}
}

// Failed is closed when a write fails: the history is incomplete from then
// on, and a run must stop rather than check it (a check of a history that
// lacks its final reads would report records as lost).
func (w *Writer) Failed() <-chan struct{} { return w.failed }

// Err is the first write error, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("history: writer closed")

// Write assigns op the next index, writes it and returns the index.
func (w *Writer) Write(op Op) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return -1, ErrClosed
	}
	if w.err != nil {
		return -1, w.err
	}
	op.Index = w.next
	w.line = append(AppendJSON(w.line[:0], &op), '\n')
	if _, err := w.w.Write(w.line); err != nil {
		w.fail(err)
		return -1, err
	}
	w.next++
	if w.interval <= 0 {
		if err := w.w.Flush(); err != nil {
			w.fail(err)
			return -1, err
		}
		return op.Index, nil
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(w.interval, w.timedFlush)
	}
	return op.Index, nil
}

func (w *Writer) timedFlush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if w.closed || w.err != nil {
		return
	}
	if err := w.w.Flush(); err != nil {
		w.fail(err)
	}
}

// Flush writes buffered lines now.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.fail(err)
	}
	return w.err
}

// Close flushes and stops the timer. It does not close the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.err == nil {
		if err := w.w.Flush(); err != nil {
			w.fail(err)
		}
	}
	return w.err
}
