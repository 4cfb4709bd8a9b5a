package storage

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"gregor/internal/fsys"
)

// TestFlipBitNeverServed: a bit flipped at rest in a stored batch makes
// every read that reaches the batch fail with ErrCorrupt (its bytes are
// never returned), reads below it still work, and the unclean recovery
// after a crash cuts the log at that batch.
func TestFlipBitNeverServed(t *testing.T) {
	for _, pick := range []uint64{0, 3, 7<<20 | 5<<8 | 9, 1<<40 + 12345} {
		dir := filepath.Join(t.TempDir(), "p")
		mem := fsys.NewMem()
		l := openLog(t, dir, Options{FS: mem})
		appendBatches(t, l, 0, 10, 3)
		f, err := l.FlipBit(pick)
		if err != nil {
			t.Fatal(err)
		}
		if f.Offset < 0 || f.Offset >= 30 || f.Offset%3 != 0 {
			t.Fatalf("flipped %v: not a batch of the log", f)
		}
		if _, err := l.Read(0, 1<<20, l.LEO()); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("pick %d: a read over the flipped batch (%v) returned %v, want ErrCorrupt", pick, f, err)
		}
		if _, err := l.Read(f.Offset, 1, l.LEO()); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("pick %d: reading the flipped batch itself: %v, want ErrCorrupt", pick, err)
		}
		if f.Offset > 0 {
			recs, err := l.Read(0, 1<<20, f.Offset)
			if err != nil || EndOffset(recs) != f.Offset {
				t.Fatalf("pick %d: the batches below the flip: end %d, %v; want end %d", pick, EndOffset(recs), err, f.Offset)
			}
		}
		l.Crash()
		l = openLog(t, dir, Options{FS: mem})
		if l.LEO() != f.Offset {
			t.Fatalf("pick %d: recovery kept the log to %d, want it cut at the flipped batch %d", pick, l.LEO(), f.Offset)
		}
		l.Crash()
	}
}

// TestDiskErrorsSurface: EIO on a segment's write, fsync or read and
// ENOSPC on its write reach the caller as the errno (what the broker's
// log-dir failure handling classifies), and a failed append leaves the
// log as it was.
func TestDiskErrorsSurface(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	disk := fsys.NewFaulty(fsys.NewMem(), IsSegmentFile)
	l := openLog(t, dir, Options{FS: disk, Fsync: FsyncPolicy{Mode: FsyncAlways}})
	defer l.Crash()
	appendBatches(t, l, 0, 2, 1)
	for _, c := range []struct {
		fault fsys.Fault
		errno syscall.Errno
	}{
		{fsys.Fault{Op: fsys.OpWrite, Errno: fsys.EIO, Count: 1}, syscall.EIO},
		{fsys.Fault{Op: fsys.OpWrite, Errno: fsys.ENOSPC}, syscall.ENOSPC},
		{fsys.Fault{Op: fsys.OpSync, Errno: fsys.EIO, Count: 1}, syscall.EIO},
	} {
		if err := disk.Set([]fsys.Fault{c.fault}); err != nil {
			t.Fatal(err)
		}
		leo := l.LEO()
		err := l.Append(batchAt(leo, 0, 1))
		if !errors.Is(err, c.errno) {
			t.Fatalf("%+v: append returned %v, want %v", c.fault, err, c.errno)
		}
		if c.fault.Op == fsys.OpWrite && l.LEO() != leo {
			t.Fatalf("%+v: a failed append moved the LEO %d -> %d", c.fault, leo, l.LEO())
		}
		if err := disk.Set(nil); err != nil {
			t.Fatal(err)
		}
		if l.LEO() == leo {
			appendBatches(t, l, 0, 1, 1)
		}
	}
	if err := disk.Set([]fsys.Fault{{Op: fsys.OpRead, Errno: fsys.EIO, Count: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 1<<20, l.LEO()); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read: %v, want EIO", err)
	}
	if !IsSegmentFile("/d/t-0/00000000000000000042.log") || IsSegmentFile("/d/raft.log") || IsSegmentFile("/d/t-0/00000000000000000042.index") {
		t.Fatal("IsSegmentFile matches the wrong files")
	}
}
