package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// val is the value stored at offset off in these tests, so any read can be checked.
func val(off int64) []byte { return fmt.Appendf(nil, "value-%08d", off) }

// batchAt builds a batch of n records for offsets [base, base+n) with their val values.
func batchAt(base int64, epoch int32, n int) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = val(base + int64(i))
	}
	return NewBatch(base, epoch, vals...)
}

// appendBatches appends count batches of perBatch records at LEO, one Append each.
func appendBatches(t testing.TB, l *Log, epoch int32, count, perBatch int) {
	t.Helper()
	for range count {
		if err := l.Append(batchAt(l.LEO(), epoch, perBatch)); err != nil {
			t.Fatalf("Append at %d: %v", l.LEO(), err)
		}
	}
}

// decodeBatch decodes a batch with kmsg (an independent codec) and returns its values.
func decodeBatch(batch []byte) (base int64, vals [][]byte, err error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		return 0, nil, fmt.Errorf("kmsg decode batch: %w", err)
	}
	rest := rb.Records
	for i := 0; i < int(rb.NumRecords); i++ {
		n, w := binary.Varint(rest)
		if w <= 0 || int(n)+w > len(rest) {
			return 0, nil, fmt.Errorf("record %d: bad length varint", i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(rest[:w+int(n)]); err != nil {
			return 0, nil, fmt.Errorf("kmsg decode record %d: %w", i, err)
		}
		if int64(r.OffsetDelta) != int64(i) {
			return 0, nil, fmt.Errorf("record %d has offset delta %d", i, r.OffsetDelta)
		}
		vals = append(vals, r.Value)
		rest = rest[w+int(n):]
	}
	return rb.FirstOffset, vals, nil
}

// verifyRecords checks that data holds whole valid batches, contiguous, the first containing
// from, with the val values; it returns the offset after the last record. Safe off the test
// goroutine.
func verifyRecords(data []byte, from int64) (int64, error) {
	next := int64(-1)
	err := ForEachBatch(data, func(h BatchHeader, b []byte) error {
		base, vals, err := decodeBatch(b)
		if err != nil {
			return err
		}
		if next >= 0 && base != next {
			return fmt.Errorf("batch at %d after %d: not contiguous", base, next)
		}
		if next < 0 && (base > from || h.LastOffset() < from) {
			return fmt.Errorf("first batch [%d, %d] does not contain %d", base, h.LastOffset(), from)
		}
		for i, v := range vals {
			if want := val(base + int64(i)); string(v) != string(want) {
				return fmt.Errorf("offset %d holds %q, want %q", base+int64(i), v, want)
			}
		}
		next = h.NextOffset()
		return nil
	})
	return next, err
}

func checkRecords(t testing.TB, data []byte, from int64) int64 {
	t.Helper()
	next, err := verifyRecords(data, from)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// readAllFrom reads the whole log from offset with reads of maxBytes, checking every record.
func readAllFrom(t testing.TB, l *Log, from int64, maxBytes int) int64 {
	t.Helper()
	off := from
	for i := 0; off < l.LEO(); i++ {
		if i > 1_000_000 {
			t.Fatal("read loop does not progress")
		}
		data, err := l.Read(off, maxBytes, l.LEO())
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(data) == 0 {
			t.Fatalf("Read(%d) below LEO %d returned nothing", off, l.LEO())
		}
		off = checkRecords(t, data, off)
	}
	return off
}

func segFiles(t testing.TB, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
