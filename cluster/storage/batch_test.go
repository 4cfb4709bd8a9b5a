package storage

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestNewBatchDecodesWithKmsg(t *testing.T) {
	b := NewBatchAt(42, 7, 1234, []byte("a"), []byte("bc"), nil)
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 42 || h.PartitionLeaderEpoch != 7 || h.LastOffset() != 44 || h.NumRecords != 3 ||
		h.Size() != len(b) || h.MaxTimestamp != 1234 || h.Magic != 2 || h.ProducerID != -1 {
		t.Fatalf("header %+v", h)
	}
	base, vals, err := decodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if base != 42 || len(vals) != 3 || string(vals[0]) != "a" || string(vals[1]) != "bc" || vals[2] != nil {
		t.Fatalf("decoded base %d values %q", base, vals)
	}
}

func TestForEachBatchSplitsAndValidates(t *testing.T) {
	b1, b2 := batchAt(0, 0, 2), batchAt(2, 0, 3)
	all := append(append([]byte(nil), b1...), b2...)
	var bases []int64
	if err := ForEachBatch(all, func(h BatchHeader, b []byte) error {
		bases = append(bases, h.BaseOffset)
		if len(b) != h.Size() {
			t.Errorf("batch slice %d bytes, header says %d", len(b), h.Size())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(bases) != 2 || bases[0] != 0 || bases[1] != 2 {
		t.Fatalf("bases %v", bases)
	}

	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), all...)) }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"partial trailing batch", all[:len(all)-5], "trailing bytes"},
		{"partial header", all[:len(b1)+20], "trailing bytes"},
		{"crc", mutate(func(b []byte) []byte { b[len(b1)+70] ^= 1; return b }), "CRC-32C mismatch"},
		{"magic", mutate(func(b []byte) []byte { b[offMagic] = 1; return b }), "magic 1"},
		{"length too small", mutate(func(b []byte) []byte { put32(b[offLength:], 10); return b }), "batch length 10"},
		{"negative length", mutate(func(b []byte) []byte { put32(b[offLength:], 0xffffffff); return b }), "batch length -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ForEachBatch(c.data, nil)
			if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrCorrupt mentioning %q", err, c.want)
			}
		})
	}

	n, err := ForEachBatchLenient(all[:len(all)-5], nil)
	if err != nil || n != len(b1) {
		t.Fatalf("lenient: %d, %v; want %d, nil", n, err, len(b1))
	}
}

func TestSetHeaderFieldsKeepCRC(t *testing.T) {
	b := NewBatchAt(0, 0, 5000, []byte("x"), []byte("y"), []byte("z"), []byte("w"))
	orig := append([]byte(nil), b...)
	SetBaseOffset(b, 1<<40)
	SetPartitionLeaderEpoch(b, 99)
	var got BatchHeader
	if err := ForEachBatch(b, func(h BatchHeader, _ []byte) error { got = h; return nil }); err != nil {
		t.Fatalf("after rewriting header fields: %v", err)
	}
	if got.BaseOffset != 1<<40 || got.PartitionLeaderEpoch != 99 || got.LastOffset() != 1<<40+3 {
		t.Fatalf("header %+v", got)
	}
	if !bytes.Equal(b[offMagic:], orig[offMagic:]) {
		t.Fatal("rewriting offset and epoch touched other bytes")
	}
}
