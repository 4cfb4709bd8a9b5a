package storage

import (
	"errors"
	"testing"
)

// AdvanceStartOffset (DeleteRecords, KIP-107): the start moves up, durably,
// never back and never past the LEO; segments wholly below it go.
func TestAdvanceStartOffset(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 1200, IndexIntervalBytes: 150}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 1, 50, 2) // offsets 0..99, batches of 2
	segs := l.NumSegments()
	if segs < 3 {
		t.Fatalf("want several segments, have %d", segs)
	}
	if start, err := l.AdvanceStartOffset(51); err != nil || start != 51 || l.StartOffset() != 51 {
		t.Fatalf("advance to 51: start %d (%d), %v", start, l.StartOffset(), err)
	}
	if l.NumSegments() >= segs || l.segs[0].base > 51 {
		t.Fatalf("segments below 51 kept: %d of %d, first at %d", l.NumSegments(), segs, l.segs[0].base)
	}
	if start, err := l.AdvanceStartOffset(10); err != nil || start != 51 {
		t.Fatalf("a lower start moved it back: %d, %v", start, err)
	}
	if _, err := l.AdvanceStartOffset(101); !errors.Is(err, ErrOffsetOutOfRange) || l.StartOffset() != 51 {
		t.Fatalf("a start past the LEO: %v, start %d", err, l.StartOffset())
	}
	l.Crash()
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.StartOffset() != 51 || l.LEO() != 100 {
		t.Fatalf("after a crash: start %d, LEO %d; want 51, 100", l.StartOffset(), l.LEO())
	}
}

// A truncation below the log start lowers it to the truncation point, as
// Kafka's UnifiedLog.truncateTo and truncateFullyAndStartAt do: records
// appended again from there are readable, before and after a crash.
func TestTruncateBelowStartLowersIt(t *testing.T) {
	for _, c := range []struct {
		name  string
		trunc func(l *Log) error
	}{
		{"TruncateTo", func(l *Log) error { return l.TruncateTo(40) }},
		{"TruncateFullyAndStartAt", func(l *Log) error { return l.TruncateFullyAndStartAt(40) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentBytes: 1200, IndexIntervalBytes: 150}
			l := openLog(t, dir, opts)
			appendBatches(t, l, 1, 50, 2)
			if _, err := l.AdvanceStartOffset(60); err != nil {
				t.Fatal(err)
			}
			if err := c.trunc(l); err != nil {
				t.Fatal(err)
			}
			appendBatches(t, l, 2, 10, 2) // offsets 40..59 again
			if l.StartOffset() != 40 || l.LEO() != 60 {
				t.Fatalf("start %d, LEO %d; want 40, 60", l.StartOffset(), l.LEO())
			}
			l.Crash()
			l = openLog(t, dir, opts)
			defer l.Close()
			if l.StartOffset() != 40 {
				t.Fatalf("after a crash the start is %d, want 40", l.StartOffset())
			}
			b, err := l.Read(40, 1<<20, l.LEO())
			if err != nil || len(b) == 0 {
				t.Fatalf("read at the new start: %d bytes, %v", len(b), err)
			}
		})
	}
}
