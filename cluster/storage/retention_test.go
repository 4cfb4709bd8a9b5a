package storage

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestRetentionBySize(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 1000, RetentionBytes: 2500}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 1, 20, 2)
	if err := l.AssignEpoch(2, l.LEO()); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, l, 2, 20, 2)
	before, sizes := l.NumSegments(), []int64{}
	for _, s := range l.segs {
		sizes = append(sizes, s.size)
	}
	n, err := l.EnforceRetention(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || l.NumSegments() != before-n || len(segFiles(t, dir, ".log")) != before-n {
		t.Fatalf("deleted %d of %d segments; %d remain, files %d", n, before, l.NumSegments(), len(segFiles(t, dir, ".log")))
	}
	// Kafka's rule: what remains still holds RetentionBytes, and one segment fewer would not.
	if l.Size() < 2500 || l.Size()-l.segs[0].size >= 2500 {
		t.Fatalf("%d bytes remain, first segment %d: retention rule broken (sizes were %v)", l.Size(), l.segs[0].size, sizes)
	}
	start := l.StartOffset()
	if start != l.segs[0].base || start == 0 {
		t.Fatalf("start offset %d, first segment %d", start, l.segs[0].base)
	}
	if _, err := l.Read(start-1, 100, l.LEO()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if got := readAllFrom(t, l, start, 500); got != 80 {
		t.Fatalf("read to %d", got)
	}
	// Epoch entries before the start are trimmed (epoch 1 now starts at the start offset).
	if eps := l.Epochs(); eps[0].StartOffset != min(start, 40) {
		t.Fatalf("epochs %v after retention to %d", eps, start)
	}
	// Idempotent, and it survives a reopen.
	if n, err := l.EnforceRetention(time.Now()); n != 0 || err != nil {
		t.Fatalf("second pass deleted %d, %v", n, err)
	}
	l.Close()
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.StartOffset() != start {
		t.Fatalf("start offset %d after reopen, want %d", l.StartOffset(), start)
	}
}

func TestRetentionNeverDeletesActiveSegment(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentBytes: 1000, RetentionBytes: 1, RetentionMs: 1})
	defer l.Close()
	appendBatches(t, l, 0, 30, 2)
	n, err := l.EnforceRetention(time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 1 || n == 0 {
		t.Fatalf("%d segments remain after deleting %d", l.NumSegments(), n)
	}
	if l.StartOffset() != l.active().base || l.LEO() != 60 {
		t.Fatalf("start %d LEO %d", l.StartOffset(), l.LEO())
	}
}

func TestRetentionByTime(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 600, RetentionMs: 1000}
	l := openLog(t, dir, opts)
	bs := int64(len(NewBatchAt(0, 0, 0, val(0), val(1))))
	perSeg := 600 / bs // batches per segment
	// Segment timestamps (ms): old, old, new, old, then the active segment (old).
	stamps := []int64{100, 200, 5000, 300, 400}
	for _, ts := range stamps {
		for range perSeg {
			if err := l.Append(NewBatchAt(l.LEO(), 0, ts, val(l.LEO()), val(l.LEO()+1))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l.NumSegments() != len(stamps) {
		t.Fatalf("%d segments, want %d", l.NumSegments(), len(stamps))
	}
	bases := []int64{}
	for _, s := range l.segs {
		bases = append(bases, s.base)
	}
	l.Close()
	l = openLog(t, dir, opts) // max timestamps must be learned from disk
	defer l.Close()
	now := time.UnixMilli(5500)
	n, err := l.EnforceRetention(now)
	if err != nil {
		t.Fatal(err)
	}
	// Only the prefix of expired segments goes: the old segment after the new one stays.
	if n != 2 || l.StartOffset() != bases[2] {
		t.Fatalf("deleted %d, start %d; want 2 and %d", n, l.StartOffset(), bases[2])
	}
	var left []int64
	for _, s := range l.segs {
		left = append(left, s.base)
	}
	if !slices.Equal(left, bases[2:]) {
		t.Fatalf("segments %v, want %v", left, bases[2:])
	}
}
