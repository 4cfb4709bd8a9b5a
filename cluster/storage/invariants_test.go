package storage

import (
	"fmt"
	"strings"
	"testing"
)

// brokenLog is a log with three closed segments and an active one holding
// LazyFS pending bytes and index entries, in two leader epochs.
func brokenLog(t *testing.T) *Log {
	t.Helper()
	l := openLog(t, t.TempDir(), Options{SegmentBytes: 1024, IndexIntervalBytes: 100, LazyFS: true})
	t.Cleanup(l.Crash) // Close would sync whatever state a case broke
	appendBatches(t, l, 0, 20, 2)
	appendBatches(t, l, 1, 20, 2)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.invariants(); err != nil {
		t.Fatalf("healthy log: %v", err)
	}
	a := l.active()
	if len(l.segs) < 3 || len(a.pending) == 0 || len(a.idx) < 2 || a.idxPersisted != 0 || len(l.epochs.entries) != 2 {
		t.Fatalf("setup: %d segments, active has %d pending bytes, %d index entries (%d persisted), %d epochs",
			len(l.segs), len(a.pending), len(a.idx), a.idxPersisted, len(l.epochs.entries))
	}
	return l
}

// TestStorageInvariantsCatch breaks each storage invariant on purpose and
// sees the check name it.
func TestStorageInvariantsCatch(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(l *Log, a *segment)
		want   string
	}{
		{"no segment", func(l *Log, a *segment) { l.segs = nil }, "no segment"},
		{"offsets not contiguous", func(l *Log, a *segment) { l.segs[0].next++ }, "does not continue"},
		{"closed segment unsynced", func(l *Log, a *segment) { l.segs[1].synced-- }, "only the active one"},
		{"closed segment pending", func(l *Log, a *segment) { l.segs[1].pending = []byte{1} }, "only the active one"},
		{"empty closed segment", func(l *Log, a *segment) {
			s := l.segs[0]
			s.size, s.flushed, s.synced, s.next = 0, 0, 0, s.base
			l.segs[1].base = s.base
		}, "only the active one"},
		{"size without offsets", func(l *Log, a *segment) { a.next = a.base }, "but offsets"},
		{"flushed past size", func(l *Log, a *segment) { a.flushed = a.size + 1 }, "want synced <= flushed"},
		{"synced past flushed", func(l *Log, a *segment) { a.synced = a.flushed + 1 }, "want synced <= flushed"},
		{"pending not counted", func(l *Log, a *segment) { a.pending = a.pending[1:] }, "want synced <= flushed"},
		{"marks not increasing", func(l *Log, a *segment) { a.marks = []pendMark{{end: a.size}, {end: a.size}} }, "marks must increase"},
		{"mark past size", func(l *Log, a *segment) { a.marks = []pendMark{{end: a.size + 1}} }, "marks must increase"},
		{"pending without mark", func(l *Log, a *segment) { a.marks = nil }, "not covered"},
		{"mark without pending", func(l *Log, a *segment) {
			a.flushed, a.pending = a.size, nil
		}, "marks without pending"},
		{"persisted past entries", func(l *Log, a *segment) { a.idxPersisted = len(a.idx) + 1 }, "persisted of"},
		{"persisted entry past flushed", func(l *Log, a *segment) { a.idxPersisted = len(a.idx) }, "past the flushed"},
		{"entry past size", func(l *Log, a *segment) { a.idx[len(a.idx)-1].pos = uint32(a.size) }, "past the size"},
		{"entries not increasing", func(l *Log, a *segment) { a.idx[1].rel = a.idx[0].rel }, "does not increase"},
		{"last entry forgotten", func(l *Log, a *segment) { a.lastIndexedPos++ }, "remembered at"},
		{"no entry but a last one", func(l *Log, a *segment) { a.idx = nil }, "no index entry"},
		{"entry names the wrong batch", func(l *Log, a *segment) { a.idx[len(a.idx)-1].rel++ }, "the batch there is"},
		{"negative unsynced", func(l *Log, a *segment) { l.unsyncedRecords = -1 }, "unsynced records"},
		{"epochs not increasing", func(l *Log, a *segment) { l.epochs.entries[1].Epoch = 0 }, "does not follow"},
		{"epoch past LEO", func(l *Log, a *segment) { l.epochs.entries[1].StartOffset = a.next + 1 }, "outside the log"},
		{"negative epoch start", func(l *Log, a *segment) { l.epochs.entries[0].StartOffset = -1 }, "negative epoch entry"},
		{"negative epoch", func(l *Log, a *segment) { l.epochs.entries[0].Epoch = -2 }, "negative epoch entry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := brokenLog(t)
			l.mu.Lock()
			defer l.mu.Unlock()
			c.break_(l, l.active())
			err := l.invariants()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("check said %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// An epoch entry before the log start (retention moved the start past it
// without trimming the cache) is caught.
func TestEpochBeforeLogStartCaught(t *testing.T) {
	c := &epochCache{entries: []EpochEntry{{Epoch: 1, StartOffset: 5}}}
	if err := c.invariants(10, 20); err == nil || !strings.Contains(err.Error(), "outside the log [10, 20]") {
		t.Fatalf("entry at 5 in a log starting at 10: %v", err)
	}
}

// TestStorageInvariantHookRuns: with checks on, a change made on a broken
// log stops at the check, before the lock is released.
func TestStorageInvariantHookRuns(t *testing.T) {
	for _, op := range []struct {
		name string
		do   func(l *Log) error
	}{
		{"append", func(l *Log) error { return l.Append(batchAt(l.leo(), 1, 1)) }},
		{"truncate", func(l *Log) error { return l.TruncateTo(l.leo() - 1) }},
		{"sync", func(l *Log) error { return l.Sync() }},
		{"assign epoch", func(l *Log) error { return l.AssignEpoch(2, l.leo()) }},
	} {
		t.Run(op.name, func(t *testing.T) {
			l := brokenLog(t)
			l.segs[1].synced-- // a closed segment that is not durable
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), "only the active one") {
					t.Fatalf("%s on a broken log: %v", op.name, r)
				}
			}()
			_ = op.do(l)
		})
	}
}
