package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	"gregor/internal/fsys"
)

// ErrOffsetOutOfRange is returned by Read for an offset below StartOffset or above LEO.
var ErrOffsetOutOfRange = errors.New("offset out of range")

// ErrClosed is returned by every call after Close or Crash.
var ErrClosed = errors.New("storage: log closed")

// Log is one partition's durable log: a directory of segments plus checkpoints. One writer at a
// time (Append, TruncateTo, retention: the caller's partition lock serializes them, and mu does
// too) and any number of concurrent readers.
type Log struct {
	fs   fsys.FS
	dir  string
	opts Options
	lg   *slog.Logger

	// mu guards everything below: writers take it exclusively, Read and friends shared.
	mu sync.RWMutex
	// segs holds the segments in offset order; the last is the active one.
	// Invariant (invariants.go, as are those of segment and epochCache): len(segs) >= 1 while
	// open; segs[i+1].base == segs[i].next; every segment but the last is non-empty and fully
	// synced.
	segs []*segment
	// logStart is the log start offset DeleteRecords moved (KIP-107), or 0:
	// it may lie inside the first segment. startOffset() = max(segs[0].base,
	// logStart) clamped to the LEO. Invariant: logStart >= 0; durable in
	// log-start-offset-checkpoint before it is used (logstart.go).
	logStart int64
	epochs   *epochCache
	// unsyncedRecords counts records appended since the last fsync, for FsyncEveryN.
	unsyncedRecords int64

	recoveredHW int64 // set once by Open
	hwMu        sync.Mutex

	closed    atomic.Bool
	stopWB    chan struct{} // closed to stop the LazyFS write-back goroutine
	wbDone    chan struct{} // closed when it has stopped; nil without one
	closeOnce sync.Once

	// fsyncs counts fsyncs of segment data: the test hook that makes the policy observable.
	fsyncs atomic.Int64
}

// Open opens the log in dir, creating dir and an empty log at offset 0 if needed. Without a
// clean-shutdown marker it recovers: see the package comment.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := &Log{fs: opts.FS, dir: dir, opts: opts, lg: opts.Logger.With("dir", dir)}
	err = l.load()
	if err == nil {
		err = l.loadLogStart()
	}
	if err != nil {
		for _, s := range l.segs {
			s.close()
		}
		return nil, err
	}
	l.assertInvariants() // the recovered log, epochs included (load checked the segments already)
	if opts.LazyFS && opts.WritebackDelay > 0 {
		l.stopWB, l.wbDone = make(chan struct{}), make(chan struct{})
		go l.writeback()
	}
	return l, nil
}

func (l *Log) usable() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }
func (l *Log) leo() int64       { return l.active().next }
func (l *Log) startOffset() int64 {
	return min(max(l.segs[0].base, l.logStart), l.leo())
}

// segFor returns the index of the segment holding offset (the last one starting at or before it).
// Callers ensure startOffset() <= offset.
func (l *Log) segFor(offset int64) int {
	return sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
}

// LEO is the log end offset: the offset the next appended record gets.
func (l *Log) LEO() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return -1
	}
	return l.leo()
}

// StartOffset is the first offset the log still holds (advanced by retention and
// TruncateFullyAndStartAt).
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return -1
	}
	return l.startOffset()
}

// Size is the total bytes of all segments, including LazyFS bytes not yet durable.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// NumSegments is the number of segment files.
func (l *Log) NumSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segs)
}

// Dir is the directory the log lives in.
func (l *Log) Dir() string { return l.dir }

func (l *Log) countFsync() { l.fsyncs.Add(1) }

// Sync makes everything appended durable: in LazyFS mode it writes back every pending byte, then
// fsyncs the active segment.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.assertInvariants()
	if err := l.usable(); err != nil {
		return err
	}
	return l.syncLocked()
}

func (l *Log) syncLocked() error {
	// Only the active segment can hold unsynced bytes (segments are synced when rolled).
	if err := l.active().sync(l.countFsync); err != nil {
		return err
	}
	l.unsyncedRecords = 0
	return nil
}

// stopWriteback stops the LazyFS goroutine and waits for it; it must be called without mu.
func (l *Log) stopWriteback() {
	if l.wbDone != nil {
		close(l.stopWB)
		<-l.wbDone
	}
}

// Close syncs everything, writes the clean-shutdown marker (so the next Open skips recovery) and
// closes the files. The Log is unusable afterwards.
func (l *Log) Close() error {
	err := ErrClosed
	l.closeOnce.Do(func() {
		l.stopWriteback()
		l.mu.Lock()
		defer l.mu.Unlock()
		err = l.syncLocked()
		if err == nil {
			err = l.active().syncIndex()
		}
		for _, s := range l.segs {
			if cerr := s.close(); err == nil {
				err = cerr
			}
		}
		l.closed.Store(true)
		if err == nil {
			err = writeFileAtomic(l.fs, l.dir, cleanShutdownFile, nil)
		}
	})
	return err
}

// Crash stops the Log the way SIGKILL plus a power cut would: nothing is flushed, LazyFS pending
// bytes are dropped, no clean-shutdown marker is written. The Log is unusable afterwards; Open
// the directory again to recover.
func (l *Log) Crash() {
	l.closeOnce.Do(func() {
		l.stopWriteback()
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, s := range l.segs {
			s.pending, s.marks = nil, nil
			s.close()
		}
		l.closed.Store(true)
		l.lg.Info("storage crashed: unsynced data dropped")
	})
}

// errf prefixes storage errors with the directory, so a broker's log names the partition.
func (l *Log) errf(format string, args ...any) error {
	return fmt.Errorf("storage %s: "+format, append([]any{l.dir}, args...)...)
}
