package storage

import (
	"path/filepath"
	"testing"
)

func TestHWCheckpoint(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{LazyFS: true})
	if l.RecoveredHW() != 0 {
		t.Fatalf("fresh log recovered HW %d", l.RecoveredHW())
	}
	appendBatches(t, l, 0, 10, 2)
	if err := l.CheckpointHW(15); err != nil {
		t.Fatal(err)
	}
	if err := l.CheckpointHW(-1); err == nil {
		t.Fatal("negative HW accepted")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+tmpSuffix)); len(left) > 0 {
		t.Fatalf("temporary checkpoint files left behind: %v", left)
	}
	l = openLog(t, dir, Options{LazyFS: true})
	if l.RecoveredHW() != 15 {
		t.Fatalf("recovered HW %d, want 15", l.RecoveredHW())
	}
	// A checkpoint past what survives a power cut is clamped to the recovered LEO.
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, l, 0, 5, 2) // pending only: [20, 30)
	if err := l.CheckpointHW(28); err != nil {
		t.Fatal(err)
	}
	l.Crash()
	if err := l.CheckpointHW(3); err == nil {
		t.Fatal("CheckpointHW after Crash succeeded")
	}
	l = openLog(t, dir, Options{LazyFS: true})
	defer l.Close()
	if l.LEO() != 20 || l.RecoveredHW() != 20 {
		t.Fatalf("LEO %d, recovered HW %d; want 20, 20", l.LEO(), l.RecoveredHW())
	}
}

func TestOffsetForTimestampAndScanBatches(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 700}
	l := openLog(t, dir, opts)
	for i := range 20 { // batch i has timestamp 100*(i+1), offsets [2i, 2i+2)
		off := l.LEO()
		if err := l.Append(NewBatchAt(off, 0, int64(100*(i+1)), val(off), val(off+1))); err != nil {
			t.Fatal(err)
		}
	}
	check := func(l *Log) {
		t.Helper()
		for _, c := range []struct{ ts, wantOff, wantTs int64 }{
			{0, 0, 100}, {100, 0, 100}, {101, 2, 200}, {1000, 18, 1000}, {1999, 38, 2000},
		} {
			off, ts, ok := l.OffsetForTimestamp(c.ts)
			if !ok || off != c.wantOff || ts != c.wantTs {
				t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d", c.ts, off, ts, ok, c.wantOff, c.wantTs)
			}
		}
		if _, _, ok := l.OffsetForTimestamp(2001); ok {
			t.Error("found a batch newer than any")
		}
	}
	check(l)
	l.Close()
	l = openLog(t, dir, opts)
	defer l.Close()
	check(l)

	var bases []int64
	if err := l.ScanBatches(13, func(h BatchHeader) bool {
		bases = append(bases, h.BaseOffset)
		return len(bases) < 5
	}); err != nil {
		t.Fatal(err)
	}
	if len(bases) != 5 || bases[0] != 12 || bases[4] != 20 {
		t.Fatalf("scanned %v", bases)
	}
	bases = bases[:0]
	if err := l.ScanBatches(0, func(h BatchHeader) bool { bases = append(bases, h.BaseOffset); return true }); err != nil {
		t.Fatal(err)
	}
	if len(bases) != 20 || bases[19] != 38 {
		t.Fatalf("full scan %v", bases)
	}
}
