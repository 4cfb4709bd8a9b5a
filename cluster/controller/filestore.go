package controller

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"gregor/internal/atomicfile"
	"gregor/internal/fsys"
)

// fileStore is raft's LogStore and StableStore, in files: an append-only
// log file of CRC-framed records (store entry / delete range) replayed into
// memory at open, and a small stable file rewritten atomically on each Set.
//
// It exists because raft-boltdb v1 (boltdb/bolt 1.3.1) aborts under
// go test -race (checkptr: "converted pointer straddles multiple
// allocations"). This is storage only; consensus is hashicorp/raft's.
//
// Memory holds every live entry; raft snapshots plus TrailingLogs bound
// how many stay live.
type fileStore struct {
	fs  fsys.FS
	dir string

	mu      sync.Mutex
	logs    map[uint64]raft.Log
	first   uint64 // 0 when empty
	last    uint64
	f       fsys.File
	records int // records in the log file, live or dead; drives compaction
	stable  map[string][]byte
}

const (
	logFileName    = "raft.log"
	stableFileName = "raft.stable"
	opStore        = 1
	opDelete       = 2
	// maxRecordBytes bounds one record read back at open, so a corrupt
	// length cannot make us allocate without limit.
	maxRecordBytes = 64 << 20
	// compactMin: do not rewrite the log file before it holds this many
	// dead records.
	compactMin = 1024
)

var (
	crcTable       = crc32.MakeTable(crc32.Castagnoli)
	errKeyNotFound = errors.New("not found") // raft compares this text
)

func openFileStore(fs fsys.FS, dir string) (*fileStore, error) {
	fs = fsys.Or(fs)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &fileStore{fs: fs, dir: dir, logs: map[uint64]raft.Log{}, stable: map[string][]byte{}}
	if err := s.loadStable(); err != nil {
		return nil, err
	}
	if err := s.replay(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *fileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// replay reads the log file, truncating a torn or corrupt tail (a crash
// mid-append), and leaves it open for appending.
func (s *fileStore) replay() error {
	path := filepath.Join(s.dir, logFileName)
	f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	r := bufio.NewReader(f)
	var good int64
	for {
		payload, n, err := readRecord(r)
		if err != nil {
			break // EOF or torn tail: keep what precedes it
		}
		if err := s.applyPayload(payload); err != nil {
			break
		}
		good += n
		s.records++
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	s.f = f
	return nil
}

func readRecord(r io.Reader) ([]byte, int64, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, err
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if size > maxRecordBytes {
		return nil, 0, fmt.Errorf("record size %d", size)
	}
	payload := make([]byte, size)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, 0, err
	}
	if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(hdr[4:]) {
		return nil, 0, errors.New("crc mismatch")
	}
	return payload, int64(8 + size), nil
}

func frame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, crcTable))
	return append(dst, payload...)
}

func encodeStore(l *raft.Log) []byte {
	b := []byte{opStore}
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.BigEndian.AppendUint64(b, uint64(l.AppendedAt.UnixNano()))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	return append(b, l.Extensions...)
}

func encodeDelete(min, max uint64) []byte {
	b := []byte{opDelete}
	b = binary.BigEndian.AppendUint64(b, min)
	return binary.BigEndian.AppendUint64(b, max)
}

var errBadPayload = errors.New("bad log record payload")

func (s *fileStore) applyPayload(p []byte) error {
	if len(p) == 0 {
		return errBadPayload
	}
	switch p[0] {
	case opDelete:
		if len(p) != 17 {
			return errBadPayload
		}
		s.deleteMem(binary.BigEndian.Uint64(p[1:]), binary.BigEndian.Uint64(p[9:]))
		return nil
	case opStore:
		p = p[1:]
		if len(p) < 29 {
			return errBadPayload
		}
		l := raft.Log{Index: binary.BigEndian.Uint64(p), Term: binary.BigEndian.Uint64(p[8:]),
			Type: raft.LogType(p[16]), AppendedAt: time.Unix(0, int64(binary.BigEndian.Uint64(p[17:])))}
		p = p[25:]
		var ok bool
		if l.Data, p, ok = lenPrefixed(p); !ok {
			return errBadPayload
		}
		if l.Extensions, _, ok = lenPrefixed(p); !ok {
			return errBadPayload
		}
		s.storeMem(l)
		return nil
	}
	return errBadPayload
}

func lenPrefixed(p []byte) ([]byte, []byte, bool) {
	if len(p) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(p)
	if uint64(n) > uint64(len(p)-4) {
		return nil, nil, false
	}
	if n == 0 {
		return nil, p[4:], true
	}
	return append([]byte(nil), p[4:4+n]...), p[4+n:], true
}

func (s *fileStore) storeMem(l raft.Log) {
	s.logs[l.Index] = l
	if s.first == 0 || l.Index < s.first {
		s.first = l.Index
	}
	if l.Index > s.last {
		s.last = l.Index
	}
}

func (s *fileStore) deleteMem(min, max uint64) {
	if s.first == 0 {
		return
	}
	lo, hi := max64(min, s.first), min64(max, s.last)
	for i := lo; i <= hi && hi >= lo; i++ {
		delete(s.logs, i)
	}
	// Recompute the bounds from what is left: O(live entries), and
	// deletes are rare (one per snapshot, or a conflict truncation).
	s.first, s.last = 0, 0
	for i := range s.logs {
		if s.first == 0 || i < s.first {
			s.first = i
		}
		if i > s.last {
			s.last = i
		}
	}
}

func min64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// append writes framed payloads and fsyncs: raft relies on a stored entry
// surviving a crash.
func (s *fileStore) append(payloads ...[]byte) error {
	if s.f == nil {
		return errors.New("controller: log store closed")
	}
	var buf []byte
	for _, p := range payloads {
		buf = frame(buf, p)
	}
	if _, err := s.f.Write(buf); err != nil {
		return err
	}
	s.records += len(payloads)
	return s.f.Sync()
}

// FirstIndex implements raft.LogStore.
func (s *fileStore) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, nil
}

// LastIndex implements raft.LogStore.
func (s *fileStore) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, nil
}

// GetLog implements raft.LogStore.
func (s *fileStore) GetLog(index uint64, log *raft.Log) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[index]
	if !ok {
		return raft.ErrLogNotFound
	}
	*log = l
	return nil
}

// StoreLog implements raft.LogStore.
func (s *fileStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore.
func (s *fileStore) StoreLogs(logs []*raft.Log) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	payloads := make([][]byte, len(logs))
	for i, l := range logs {
		payloads[i] = encodeStore(l)
	}
	if err := s.append(payloads...); err != nil {
		return err
	}
	for _, l := range logs {
		c := *l
		c.Data = append([]byte(nil), l.Data...)
		c.Extensions = append([]byte(nil), l.Extensions...)
		s.storeMem(c)
	}
	return nil
}

// DeleteRange implements raft.LogStore.
func (s *fileStore) DeleteRange(min, max uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.append(encodeDelete(min, max)); err != nil {
		return err
	}
	s.deleteMem(min, max)
	if s.records > compactMin+2*len(s.logs) {
		return s.compact()
	}
	return nil
}

// compact rewrites the log file with only the live entries, atomically
// (internal/atomicfile), and appends to the new file from then on.
func (s *fileStore) compact() error {
	path := filepath.Join(s.dir, logFileName)
	n := 0
	err := atomicfile.WriteFS(s.fs, path, 0o644, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		for i := s.first; s.first != 0 && i <= s.last; i++ {
			if l, ok := s.logs[i]; ok {
				w.Write(frame(nil, encodeStore(&l)))
				n++
			}
		}
		return w.Flush()
	})
	if err != nil {
		return err
	}
	f, err := s.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.f.Close()
	s.f = f
	s.records = n
	return nil
}
