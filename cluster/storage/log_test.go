package storage

import (
	"errors"
	"sync"
	"testing"
)

func TestRoundTripAcrossSegmentRolls(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 2000, IndexIntervalBytes: 300}
	l := openLog(t, dir, opts)
	// Batches of 1..5 records, so batch boundaries fall at varied offsets.
	for i := range 60 {
		if err := l.Append(batchAt(l.LEO(), 0, 1+i%5)); err != nil {
			t.Fatal(err)
		}
	}
	leo := l.LEO()
	if leo != 180 {
		t.Fatalf("LEO %d, want 180", leo)
	}
	if l.NumSegments() < 4 {
		t.Fatalf("only %d segments after %d bytes with SegmentBytes 2000", l.NumSegments(), l.Size())
	}
	if got := len(segFiles(t, dir, ".log")); got != l.NumSegments() {
		t.Fatalf("%d .log files for %d segments", got, l.NumSegments())
	}
	// Every offset, read with a small and a large budget, starts at its batch and checks out.
	for off := int64(0); off < leo; off++ {
		for _, maxBytes := range []int{1, 700, 1 << 20} {
			data, err := l.Read(off, maxBytes, leo)
			if err != nil {
				t.Fatalf("Read(%d, %d): %v", off, maxBytes, err)
			}
			if maxBytes > 1 && len(data) > maxBytes {
				t.Fatalf("Read(%d, %d) returned %d bytes", off, maxBytes, len(data))
			}
			checkRecords(t, data, off)
		}
	}
	// A big read crosses segments and returns everything.
	all, err := l.Read(0, 1<<20, leo)
	if err != nil {
		t.Fatal(err)
	}
	if next := checkRecords(t, all, 0); next != leo || int64(len(all)) != l.Size() {
		t.Fatalf("full read ends at %d with %d bytes; log has LEO %d, %d bytes", next, len(all), leo, l.Size())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen (clean) and read it all again, with and without the index.
	l = openLog(t, dir, opts)
	if l.LEO() != leo || l.StartOffset() != 0 {
		t.Fatalf("after reopen LEO %d start %d", l.LEO(), l.StartOffset())
	}
	if got := readAllFrom(t, l, 0, 500); got != leo {
		t.Fatalf("read to %d", got)
	}
	appendBatches(t, l, 0, 3, 2)
	if got := readAllFrom(t, l, 170, 500); got != leo+6 {
		t.Fatalf("read to %d after appending", got)
	}
	l.Close()
}

func TestReadEdges(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	if data, err := l.Read(0, 100, 0); data != nil || err != nil {
		t.Fatalf("empty log Read(0) = %d bytes, %v", len(data), err)
	}
	b1, b2, b3 := batchAt(0, 0, 3), batchAt(3, 0, 3), batchAt(6, 0, 3)
	for _, b := range [][]byte{b1, b2, b3} {
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	s := len(b1) // all three have the same size
	cases := []struct {
		name           string
		off            int64
		maxBytes       int
		upTo           int64
		wantFirst      int64 // base of the first batch returned, -1 for none
		wantBatches    int
		wantOutOfRange bool
	}{
		{"all", 0, 10 * s, 9, 0, 3, false},
		{"mid batch starts at its base", 4, 10 * s, 9, 3, 2, false},
		{"upTo cuts at batch base", 0, 10 * s, 6, 0, 2, false},
		{"upTo inside a batch keeps it", 0, 10 * s, 7, 0, 3, false},
		{"upTo just after offset's batch base", 3, 10 * s, 4, 3, 1, false},
		{"offset at upTo: empty", 3, 10 * s, 3, -1, 0, false},
		{"offset above upTo: empty", 5, 10 * s, 3, -1, 0, false},
		{"budget exactly two", 0, 2 * s, 9, 0, 2, false},
		{"budget just under two", 0, 2*s - 1, 9, 0, 1, false},
		{"at least one batch (KIP-74)", 0, 1, 9, 0, 1, false},
		{"zero budget still one", 7, 0, 9, 6, 1, false},
		{"at LEO: empty", 9, 100, 9, -1, 0, false},
		{"past LEO", 10, 100, 100, -1, 0, true},
		{"negative", -1, 100, 100, -1, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := l.Read(c.off, c.maxBytes, c.upTo)
			if c.wantOutOfRange {
				if !errors.Is(err, ErrOffsetOutOfRange) {
					t.Fatalf("err = %v, want ErrOffsetOutOfRange", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var bases []int64
			if err := ForEachBatch(data, func(h BatchHeader, _ []byte) error {
				bases = append(bases, h.BaseOffset)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(bases) != c.wantBatches || (c.wantBatches > 0 && bases[0] != c.wantFirst) {
				t.Fatalf("batches at %v, want %d starting at %d", bases, c.wantBatches, c.wantFirst)
			}
			if c.wantBatches == 0 && data != nil {
				t.Fatalf("want nil, got %d bytes", len(data))
			}
		})
	}
}

func TestAppendRejectsGapsAndBadBatches(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	appendBatches(t, l, 0, 1, 3)
	bad := map[string][]byte{
		"gap":                      batchAt(4, 0, 1),
		"overlap":                  batchAt(2, 0, 1),
		"second batch not follows": append(batchAt(3, 0, 2), batchAt(6, 0, 1)...),
		"crc":                      func() []byte { b := batchAt(3, 0, 1); b[len(b)-1] ^= 0xff; return b }(),
		"partial":                  batchAt(3, 0, 2)[:70],
	}
	for name, b := range bad {
		if err := l.Append(b); err == nil {
			t.Errorf("%s: Append accepted it", name)
		}
	}
	if l.LEO() != 3 {
		t.Fatalf("rejected appends moved LEO to %d", l.LEO())
	}
	// Two contiguous batches in one Append are fine.
	if err := l.Append(append(batchAt(3, 0, 2), batchAt(5, 0, 1)...)); err != nil {
		t.Fatal(err)
	}
	if got := readAllFrom(t, l, 0, 1<<20); got != 6 {
		t.Fatalf("read to %d", got)
	}
}

func TestConcurrentReadersDuringAppend(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentBytes: 4096, IndexIntervalBytes: 256, LazyFS: true})
	defer l.Close()
	const total = 400
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(0)
			// Bound: readers stop once they reach the final LEO or after many rounds.
			for i := 0; off < total && i < 1_000_000; i++ {
				data, err := l.Read(off, 300+r*200, l.LEO())
				if err != nil {
					errs <- err
					return
				}
				if len(data) > 0 {
					if off, err = verifyRecords(data, off); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for range total / 2 {
		if err := l.Append(batchAt(l.LEO(), 0, 2)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
