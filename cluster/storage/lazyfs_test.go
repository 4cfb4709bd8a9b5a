package storage

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func activeFile(dir string) string { return filepath.Join(dir, "00000000000000000000.log") }

func TestLazyFSCrashLosesOnlyPending(t *testing.T) {
	dir := t.TempDir()
	opts := Options{LazyFS: true}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 0, 5, 2)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	synced := l.Size()
	appendBatches(t, l, 0, 5, 2)
	if got := fileSize(t, activeFile(dir)); got != synced {
		t.Fatalf("file holds %d bytes, want only the %d synced", got, synced)
	}
	// Reads see the page cache.
	if got := readAllFrom(t, l, 0, 1<<20); got != 20 {
		t.Fatalf("read to %d", got)
	}
	l.Crash()
	if _, err := l.Read(0, 100, 10); err == nil {
		t.Fatal("Read after Crash succeeded")
	}
	if err := l.Append(batchAt(20, 0, 1)); err == nil {
		t.Fatal("Append after Crash succeeded")
	}
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.LEO() != 10 || l.Size() != synced {
		t.Fatalf("after power cut LEO %d size %d, want 10 and %d", l.LEO(), l.Size(), synced)
	}
	readAllFrom(t, l, 0, 1<<20)
}

func TestLazyFSCloseKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	opts := Options{LazyFS: true, SegmentBytes: 2000}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 0, 40, 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.LEO() != 80 {
		t.Fatalf("LEO %d after clean close", l.LEO())
	}
	readAllFrom(t, l, 0, 700)
}

func TestLazyFSWritebackAfterDelay(t *testing.T) {
	dir := t.TempDir()
	opts := Options{LazyFS: true, WritebackDelay: 20 * time.Millisecond}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 0, 10, 2)
	want := l.Size()
	deadline := time.Now().Add(10 * time.Second)
	for fileSize(t, activeFile(dir)) != want {
		if time.Now().After(deadline) {
			t.Fatalf("pending bytes not written back: file %d of %d bytes", fileSize(t, activeFile(dir)), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.Crash()
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.LEO() != 20 {
		t.Fatalf("LEO %d: written-back data lost", l.LEO())
	}
}

// fakeClock is a settable clock for LazyFS ages.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestLazyFSWritebackOnlyOldBytes(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	opts := Options{LazyFS: true, WritebackDelay: time.Hour, now: clock.now}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 0, 3, 2) // old
	old := l.Size()
	clock.add(40 * time.Minute)
	appendBatches(t, l, 0, 3, 2) // young
	clock.add(21 * time.Minute)  // the first appends are 61 min old, the rest 21
	if err := l.writebackExpired(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, activeFile(dir)); got != old {
		t.Fatalf("file %d bytes after write-back, want the %d old ones", got, old)
	}
	l.Crash()
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.LEO() != 6 {
		t.Fatalf("LEO %d, want 6", l.LEO())
	}
}

func TestLazyFSPendingIsBounded(t *testing.T) {
	dir := t.TempDir()
	opts := Options{LazyFS: true, LazyMaxPendingBytes: 1000}
	l := openLog(t, dir, opts)
	defer l.Close()
	appendBatches(t, l, 0, 50, 2)
	if pending := l.Size() - fileSize(t, activeFile(dir)); pending > 1000 || pending < 0 {
		t.Fatalf("%d bytes pending, bound 1000", pending)
	}
	if len(l.active().marks) > 20 {
		t.Fatalf("%d pending marks", len(l.active().marks))
	}
}

func TestLazyFSTornWritebackRecovered(t *testing.T) {
	// A write-back cut short (a kill mid-write) leaves a torn batch: recovery removes it.
	dir := t.TempDir()
	opts := Options{LazyFS: true}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 0, 4, 2)
	seg := l.active()
	l.mu.Lock()
	if err := seg.flushTo(seg.size - 10); err != nil {
		t.Fatal(err)
	}
	l.mu.Unlock()
	l.Crash()
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.LEO() != 6 {
		t.Fatalf("LEO %d, want 6", l.LEO())
	}
}
