package storage

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// syncBuffer collects slog output from the Log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// crashWith writes 10 batches of 3 records into one segment, crashes, damages the segment file
// with damage(path, batchSize), and reopens. It returns the reopened log and its log output.
func crashWith(t *testing.T, damage func(path string, batchSize int64)) (*Log, string) {
	t.Helper()
	dir := t.TempDir()
	l := openLog(t, dir, Options{IndexIntervalBytes: 200})
	appendBatches(t, l, 0, 10, 3)
	l.Crash()
	damage(filepath.Join(dir, "00000000000000000000.log"), int64(len(batchAt(0, 0, 3))))
	var logs syncBuffer
	l2, err := Open(dir, Options{IndexIntervalBytes: 200, Logger: testLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close() })
	return l2, logs.String()
}

func TestRecoveryCutsTornTail(t *testing.T) {
	for _, cut := range []struct {
		name string
		keep func(bs int64) int64 // bytes of the file to keep
	}{
		{"mid batch body", func(bs int64) int64 { return 9*bs + bs/2 }},
		{"mid batch header", func(bs int64) int64 { return 9*bs + 20 }},
		{"one byte short", func(bs int64) int64 { return 10*bs - 1 }},
	} {
		t.Run(cut.name, func(t *testing.T) {
			var bs int64
			l, logs := crashWith(t, func(path string, batchSize int64) {
				bs = batchSize
				if err := os.Truncate(path, cut.keep(batchSize)); err != nil {
					t.Fatal(err)
				}
			})
			if l.LEO() != 27 {
				t.Fatalf("LEO %d after a torn 10th batch, want 27", l.LEO())
			}
			if got := readAllFrom(t, l, 0, 1<<20); got != 27 {
				t.Fatalf("read to %d", got)
			}
			if l.Size() != 9*bs {
				t.Fatalf("size %d, want %d (whole batches only)", l.Size(), 9*bs)
			}
			if !strings.Contains(logs, "truncating log at bad batch") || !strings.Contains(logs, "torn") {
				t.Fatalf("recovery did not log the cut:\n%s", logs)
			}
			// The log goes on from the cut.
			appendBatches(t, l, 0, 1, 3)
			if got := readAllFrom(t, l, 20, 1<<20); got != 30 {
				t.Fatalf("read to %d after appending", got)
			}
		})
	}
}

func TestRecoveryCutsBadCRC(t *testing.T) {
	l, logs := crashWith(t, func(path string, bs int64) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[9*bs+BatchHeaderSize+5] ^= 0x40 // a record byte of the last batch
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if l.LEO() != 27 {
		t.Fatalf("LEO %d, want 27", l.LEO())
	}
	if got := readAllFrom(t, l, 0, 1000); got != 27 {
		t.Fatalf("read to %d", got)
	}
	if !strings.Contains(logs, "CRC-32C mismatch") {
		t.Fatalf("recovery did not log the CRC failure:\n%s", logs)
	}
}

func TestRecoveryCutsMidLogAndDeletesLaterSegments(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 1000, IndexIntervalBytes: 200}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 0, 40, 2)
	if l.NumSegments() < 4 {
		t.Fatalf("want at least 4 segments, have %d", l.NumSegments())
	}
	l.Crash()
	logs := segFiles(t, dir, ".log")
	// Flip a byte of the second batch of the second segment.
	second := logs[1]
	base, _ := parseSegmentName(filepath.Base(second), ".log")
	data, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	bs := len(batchAt(0, 0, 2))
	data[bs+BatchHeaderSize+3] ^= 1
	if err := os.WriteFile(second, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The recovery point says everything before the last roll is durable; without it, recovery
	// checks every segment.
	if err := os.Remove(filepath.Join(dir, recoveryPointFile)); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, opts)
	defer l.Close()
	if want := base + 2; l.LEO() != want {
		t.Fatalf("LEO %d, want %d (end of the first batch of segment %d)", l.LEO(), want, base)
	}
	if n := l.NumSegments(); n != 2 || len(segFiles(t, dir, ".log")) != 2 || len(segFiles(t, dir, ".index")) != 2 {
		t.Fatalf("%d segments, files %v: later segments should be gone", n, segFiles(t, dir, ""))
	}
	if got := readAllFrom(t, l, 0, 333); got != base+2 {
		t.Fatalf("read to %d", got)
	}
	appendBatches(t, l, 0, 5, 2)
	if got := readAllFrom(t, l, 0, 333); got != base+12 {
		t.Fatalf("read to %d after appending", got)
	}
}

func TestRecoveryAfterCleanCloseKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 1500, IndexIntervalBytes: 100}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 0, 30, 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after Close: %v", err)
	}
	l = openLog(t, dir, opts)
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("marker still there after Open: %v", err)
	}
	if l.LEO() != 60 {
		t.Fatalf("LEO %d", l.LEO())
	}
	readAllFrom(t, l, 0, 250)
	l.Close()
}

func TestIndexRebuiltWhenMissingOrCorrupt(t *testing.T) {
	damages := map[string]func(t *testing.T, path string){
		"missing": func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
		"short": func(t *testing.T, path string) {
			if err := os.Truncate(path, fileSize(t, path)-3); err != nil {
				t.Fatal(err)
			}
		},
		"last entry wrong": func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			put32(data[len(data)-4:], be32(data[len(data)-4:])+7) // position off a batch start
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"garbage": func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte{0xff}, 64), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"truncated to half": func(t *testing.T, path string) {
			if err := os.Truncate(path, fileSize(t, path)/16*8); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentBytes: 3000, IndexIntervalBytes: 150}
			l := openLog(t, dir, opts)
			appendBatches(t, l, 0, 50, 2)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			indexes := segFiles(t, dir, ".index")
			sizes := map[string]int64{}
			for _, p := range indexes {
				sizes[p] = fileSize(t, p)
				if sizes[p] == 0 {
					t.Fatalf("index %s empty after Close", p)
				}
				damage(t, p)
			}
			var logs syncBuffer
			opts.Logger = testLogger(&logs)
			l = openLog(t, dir, opts)
			defer l.Close()
			if l.LEO() != 100 {
				t.Fatalf("LEO %d", l.LEO())
			}
			for off := int64(0); off < 100; off += 3 {
				data, err := l.Read(off, 200, 100)
				if err != nil {
					t.Fatal(err)
				}
				checkRecords(t, data, off)
			}
			for _, p := range indexes {
				if got := fileSize(t, p); got != sizes[p] {
					t.Errorf("index %s has %d bytes after rebuild, had %d", p, got, sizes[p])
				}
			}
			for _, s := range l.segs {
				if len(s.idx) == 0 {
					t.Errorf("segment %d has no index entries after rebuild", s.base)
				}
			}
		})
	}
}
