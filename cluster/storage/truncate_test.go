package storage

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTruncateTo(t *testing.T) {
	cases := []struct {
		name    string
		lazy    bool
		to      int64
		wantLEO int64
	}{
		{"at a batch boundary in the active segment", false, 96, 96},
		{"inside a batch drops the whole batch", false, 97, 96},
		{"across segments", false, 30, 30},
		{"at a segment base", false, -1, -1}, // filled in below from the segment layout
		{"to zero", false, 0, 0},
		{"at LEO is a no-op", false, 100, 100},
		{"past LEO is a no-op", false, 150, 100},
		{"lazy: inside pending bytes", true, 96, 96},
		{"lazy: across segments", true, 31, 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentBytes: 1200, IndexIntervalBytes: 150, LazyFS: c.lazy}
			l := openLog(t, dir, opts)
			appendBatches(t, l, 3, 50, 2) // offsets 0..99, batches of 2, epoch 3
			if l.NumSegments() < 3 {
				t.Fatalf("want several segments, have %d", l.NumSegments())
			}
			to, want := c.to, c.wantLEO
			if to < 0 {
				to = l.segs[2].base
				want = to
			}
			segsBefore := l.segFor(min(to, 99))
			if err := l.TruncateTo(to); err != nil {
				t.Fatal(err)
			}
			if l.LEO() != want {
				t.Fatalf("LEO %d, want %d", l.LEO(), want)
			}
			if want < 100 && l.NumSegments() != segsBefore+1 {
				t.Fatalf("%d segments after truncating into segment #%d", l.NumSegments(), segsBefore)
			}
			if got := len(segFiles(t, dir, ".log")); got != l.NumSegments() {
				t.Fatalf("%d .log files for %d segments", got, l.NumSegments())
			}
			if want > 0 {
				if got := readAllFrom(t, l, 0, 400); got != want {
					t.Fatalf("read to %d", got)
				}
			}
			if _, err := l.Read(want+1, 100, 1000); err == nil && want < 100 {
				t.Fatal("read past the truncated LEO succeeded")
			}
			// Appending continues at the new LEO, and all of it survives a crash once synced.
			appendBatches(t, l, 7, 5, 2)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			l.Crash()
			l = openLog(t, dir, opts)
			defer l.Close()
			if l.LEO() != want+10 {
				t.Fatalf("LEO %d after crash, want %d", l.LEO(), want+10)
			}
			if got := readAllFrom(t, l, 0, 400); got != want+10 {
				t.Fatalf("read to %d", got)
			}
			// Epoch 3 covered [0, want); epoch 7 starts at want.
			eps := l.Epochs()
			if want == 0 {
				if len(eps) != 1 || eps[0] != (EpochEntry{7, 0}) {
					t.Fatalf("epochs %v", eps)
				}
			} else if len(eps) != 2 || eps[0] != (EpochEntry{3, 0}) || eps[1] != (EpochEntry{7, want}) {
				t.Fatalf("epochs %v", eps)
			}
		})
	}
}

func TestTruncateIsDurableAgainstCrash(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentBytes: 1000})
	appendBatches(t, l, 0, 30, 2)
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	l.Crash()
	l = openLog(t, dir, Options{SegmentBytes: 1000})
	defer l.Close()
	if l.LEO() != 10 {
		t.Fatalf("truncated records came back: LEO %d", l.LEO())
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 1000}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 2, 30, 2)
	if err := l.TruncateFullyAndStartAt(500); err != nil {
		t.Fatal(err)
	}
	if l.LEO() != 500 || l.StartOffset() != 500 || l.NumSegments() != 1 || len(l.Epochs()) != 0 {
		t.Fatalf("LEO %d start %d segments %d epochs %v", l.LEO(), l.StartOffset(), l.NumSegments(), l.Epochs())
	}
	if _, err := l.Read(10, 100, 1000); err == nil {
		t.Fatal("read below the new start succeeded")
	}
	if err := l.Append(batchAt(0, 2, 1)); err == nil {
		t.Fatal("append at the old offsets accepted")
	}
	appendBatches(t, l, 4, 3, 2)
	l.Crash()
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000500.log")); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.StartOffset() != 500 || l.LEO() != 506 {
		t.Fatalf("after reopen start %d LEO %d", l.StartOffset(), l.LEO())
	}
	if got := readAllFrom(t, l, 500, 1000); got != 506 {
		t.Fatalf("read to %d", got)
	}
	if eps := l.Epochs(); len(eps) != 1 || eps[0] != (EpochEntry{4, 500}) {
		t.Fatalf("epochs %v", eps)
	}
	// Truncating below the start offset empties the log the same way.
	if err := l.TruncateTo(100); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 100 || l.LEO() != 100 {
		t.Fatalf("start %d LEO %d", l.StartOffset(), l.LEO())
	}
}
