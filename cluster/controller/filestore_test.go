package controller

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

func storeN(t *testing.T, s *fileStore, from, to uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}

func bounds(t *testing.T, s *fileStore) (uint64, uint64) {
	t.Helper()
	f, _ := s.FirstIndex()
	l, _ := s.LastIndex()
	return f, l
}

func TestFileStoreSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := openFileStore(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	storeN(t, s, 1, 10)
	if err := s.DeleteRange(1, 4); err != nil { // snapshot compaction
		t.Fatal(err)
	}
	if err := s.DeleteRange(9, 10); err != nil { // conflict truncation
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = openFileStore(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if f, l := bounds(t, s); f != 5 || l != 8 {
		t.Fatalf("bounds after reopen %d..%d, want 5..8", f, l)
	}
	var l raft.Log
	if err := s.GetLog(6, &l); err != nil || l.Term != 1 || !bytes.Equal(l.Data, []byte{6}) {
		t.Fatalf("GetLog(6) = %+v, %v", l, err)
	}
	if err := s.GetLog(4, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("deleted entry: %v", err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("term %d %v", v, err)
	}
	if v, err := s.GetUint64([]byte("missing")); err != nil || v != 0 {
		t.Fatalf("missing uint64: %d %v", v, err)
	}
	if _, err := s.Get([]byte("missing")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key error %v: raft expects \"not found\"", err)
	}
}

func TestFileStoreTruncatesTornTail(t *testing.T) {
	dir := t.TempDir()
	s, _ := openFileStore(nil, dir)
	storeN(t, s, 1, 3)
	s.Close()
	path := filepath.Join(dir, logFileName)
	b, _ := os.ReadFile(path)
	// A crash mid-append: half a record, then a corrupt one.
	torn := append(append([]byte(nil), b...), b[:len(b)/5]...)
	os.WriteFile(path, torn, 0o644)
	s, err := openFileStore(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if f, l := bounds(t, s); f != 1 || l != 3 {
		t.Fatalf("bounds %d..%d, want 1..3", f, l)
	}
	storeN(t, s, 4, 4) // appends after the good prefix, not after garbage
	s.Close()
	s, _ = openFileStore(nil, dir)
	defer s.Close()
	if _, l := bounds(t, s); l != 4 {
		t.Fatalf("last %d after append past torn tail, want 4", l)
	}
}

func TestFileStoreCompacts(t *testing.T) {
	dir := t.TempDir()
	s, _ := openFileStore(nil, dir)
	// Bounded: 40 rounds of 100 entries, each followed by a snapshot-style
	// prefix delete keeping the last 50 live.
	for r := uint64(0); r < 40; r++ {
		storeN(t, s, r*100+1, r*100+100)
		if err := s.DeleteRange(1, r*100+50); err != nil {
			t.Fatal(err)
		}
	}
	if s.records > compactMin+2*len(s.logs)+1 {
		t.Fatalf("%d records for %d live entries: never compacted", s.records, len(s.logs))
	}
	s.Close()
	s, _ = openFileStore(nil, dir)
	defer s.Close()
	if f, l := bounds(t, s); f != 3951 || l != 4000 {
		t.Fatalf("bounds %d..%d after compaction and reopen, want 3951..4000", f, l)
	}
}
