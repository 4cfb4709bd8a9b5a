package storage

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"gregor/internal/fsys"
)

// indexEntry maps a batch's offset, relative to the segment base, to its byte position.
type indexEntry struct {
	rel uint32
	pos uint32
}

const indexEntrySize = 8

// pendMark records when the LazyFS pending bytes up to end were appended, so write-back can make
// old bytes durable and leave young ones pending, as the kernel does with dirty pages.
type pendMark struct {
	end int64 // file position right after the bytes this mark covers
	at  time.Time
}

// segment is one <base>.log file and its sparse <base>.index. The Log's mutex guards every field.
// segment.invariants (invariants.go) checks the invariants below.
type segment struct {
	base    int64
	logPath string
	idxPath string
	fs      fsys.FS
	f       fsys.File
	idxF    fsys.File

	// next is the offset after the segment's last batch. Invariant: next >= base, and
	// next == base iff size == 0.
	next int64
	// size counts every byte appended, pending or not. Invariant: synced <= flushed <= size and
	// flushed + len(pending) == size.
	size    int64
	flushed int64 // bytes written to the file
	synced  int64 // bytes covered by an fsync (or found on disk at Open)
	// pending holds LazyFS bytes [flushed, size): the model's page cache, lost by Crash or a kill.
	// Invariant: only the active (last) segment has pending bytes; a roll syncs the old one
	// (checked by Log.segmentInvariants).
	pending []byte
	// marks covers pending in append order. Invariant: ends strictly increase within
	// (flushed, size], and the last end is size when pending is not empty; no marks without
	// pending bytes. len(marks) is bounded by coalescing (see addPending), a bound that depends
	// on the clock and so is not checked.
	marks []pendMark

	// idx is the sparse offset index. Invariant: rel and pos strictly increase; pos < size; each
	// entry points at the start of a batch whose base offset is base+rel (checked for the last
	// entry, one read; earlier entries were the last one when they were made, and only
	// truncation removes entries).
	idx []indexEntry
	// idxPersisted entries of idx are in the index file. Invariant: idxPersisted <= len(idx), and
	// they point into flushed bytes. That the file holds exactly them is not checked: it would
	// read the file on every change; Open checks the file and rebuilds it when it is wrong.
	idxPersisted int
	// lastIndexedPos is the position of the last index entry (0 when none): the next entry is
	// due once a batch starts IndexIntervalBytes or more past it. Invariant: as said.
	lastIndexedPos int64

	// maxTs is the largest batch MaxTimestamp in the segment, valid when maxTsKnown (segments
	// found at Open learn it on first use: retention by time, ListOffsets by time).
	maxTs      int64
	maxTsKnown bool
}

func segmentPaths(dir string, base int64) (string, string) {
	name := fmt.Sprintf("%020d", base)
	return filepath.Join(dir, name+".log"), filepath.Join(dir, name+".index")
}

// createSegment makes an empty segment at base, replacing files a crash may have left there.
func createSegment(fs fsys.FS, dir string, base int64) (*segment, error) {
	logPath, idxPath := segmentPaths(dir, base)
	f, err := fs.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	idxF, err := fs.OpenFile(idxPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &segment{fs: fs, base: base, logPath: logPath, idxPath: idxPath, f: f, idxF: idxF,
		next: base, maxTs: -1, maxTsKnown: true}, nil
}

// openSegment opens an existing segment and reads its index file raw; callers validate it.
func openSegment(fs fsys.FS, dir string, base int64) (*segment, []indexEntry, error) {
	logPath, idxPath := segmentPaths(dir, base)
	f, err := fs.OpenFile(logPath, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	idxF, err := fs.OpenFile(idxPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(idxF, maxSegmentBytes))
	if err != nil {
		f.Close()
		idxF.Close()
		return nil, nil, err
	}
	entries := make([]indexEntry, len(raw)/indexEntrySize)
	for i := range entries {
		e := raw[i*indexEntrySize:]
		entries[i] = indexEntry{rel: be32(e[0:]), pos: be32(e[4:])}
	}
	s := &segment{fs: fs, base: base, logPath: logPath, idxPath: idxPath, f: f, idxF: idxF,
		next: base, size: st.Size(), flushed: st.Size(), synced: st.Size(), maxTs: -1}
	return s, entries, nil
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func put32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// readAt copies segment bytes [pos, pos+len(p)) into p, from the file and then from pending. It
// reads less only at the end of the segment.
func (s *segment) readAt(p []byte, pos int64) (int, error) {
	if pos >= s.size {
		return 0, io.EOF
	}
	if rest := s.size - pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	n := 0
	if pos < s.flushed {
		fileN := min(int64(len(p)), s.flushed-pos)
		m, err := s.f.ReadAt(p[:fileN], pos)
		n += m
		if err != nil && !(err == io.EOF && int64(m) == fileN) {
			return n, fmt.Errorf("read %s at %d: %w", s.logPath, pos, err)
		}
	}
	if n < len(p) {
		n += copy(p[n:], s.pending[pos+int64(n)-s.flushed:])
	}
	return n, nil
}

// addIndexEntries indexes the batches of b, which is about to be written at position s.size.
func (s *segment) addIndexEntries(b []byte, interval int) {
	pos := s.size
	// Bound: b was validated by the caller; each step advances by one batch.
	for len(b) >= BatchHeaderSize {
		h, _ := ParseBatchHeader(b)
		if pos-s.lastIndexedPos >= int64(interval) {
			s.idx = append(s.idx, indexEntry{rel: uint32(h.BaseOffset - s.base), pos: uint32(pos)})
			s.lastIndexedPos = pos
		}
		pos += int64(h.Size())
		b = b[h.Size():]
	}
}

// lookup returns the position of the last indexed batch starting at or before offset.
func (s *segment) lookup(offset int64) int64 {
	rel := offset - s.base
	i := sort.Search(len(s.idx), func(i int) bool { return int64(s.idx[i].rel) > rel })
	if i == 0 {
		return 0
	}
	return int64(s.idx[i-1].pos)
}

// persistIndex writes index entries that point into flushed data to the index file. The index is
// a hint rebuilt at Open when missing or inconsistent, so it is fsynced only on roll and Close.
func (s *segment) persistIndex() error {
	end := s.idxPersisted
	for end < len(s.idx) && int64(s.idx[end].pos) < s.flushed {
		end++
	}
	if end == s.idxPersisted {
		return nil
	}
	buf := make([]byte, (end-s.idxPersisted)*indexEntrySize)
	for i, e := range s.idx[s.idxPersisted:end] {
		put32(buf[i*indexEntrySize:], e.rel)
		put32(buf[i*indexEntrySize+4:], e.pos)
	}
	if _, err := s.idxF.WriteAt(buf, int64(s.idxPersisted)*indexEntrySize); err != nil {
		return fmt.Errorf("write index %s: %w", s.idxPath, err)
	}
	s.idxPersisted = end
	return nil
}

// rewriteIndex replaces the index file with the in-memory index (after a rebuild or truncation).
func (s *segment) rewriteIndex() error {
	s.idxPersisted = 0
	if err := s.idxF.Truncate(0); err != nil {
		return fmt.Errorf("truncate index %s: %w", s.idxPath, err)
	}
	return s.persistIndex()
}

// addPending queues b in the LazyFS page cache. Marks closer together than coalesce share one
// entry, which bounds len(marks) by about WritebackDelay/coalesce.
func (s *segment) addPending(b []byte, now time.Time, coalesce time.Duration) {
	s.pending = append(s.pending, b...)
	s.size += int64(len(b))
	if n := len(s.marks); n > 0 && now.Sub(s.marks[n-1].at) < coalesce {
		s.marks[n-1].end = s.size
		return
	}
	s.marks = append(s.marks, pendMark{end: s.size, at: now})
}

// writeFile appends b to the file directly (no LazyFS).
func (s *segment) writeFile(b []byte) error {
	if _, err := s.f.WriteAt(b, s.size); err != nil {
		// A short write leaves bytes past size; the next write or recovery overwrites/cuts them.
		return fmt.Errorf("write %s: %w", s.logPath, err)
	}
	s.size += int64(len(b))
	s.flushed = s.size
	return nil
}

// flushTo writes pending bytes up to position end (a mark boundary or size) into the file: in
// the LazyFS model that makes them durable.
func (s *segment) flushTo(end int64) error {
	if end <= s.flushed {
		return nil
	}
	n := end - s.flushed
	if _, err := s.f.WriteAt(s.pending[:n], s.flushed); err != nil {
		return fmt.Errorf("write back %s: %w", s.logPath, err)
	}
	s.flushed = end
	if end == s.size {
		s.pending = s.pending[:0]
	} else {
		s.pending = s.pending[n:]
	}
	i := 0
	for i < len(s.marks) && s.marks[i].end <= end {
		i++
	}
	s.marks = s.marks[i:]
	return s.persistIndex()
}

// sync makes every byte of the segment durable.
func (s *segment) sync(count func()) error {
	if err := s.flushTo(s.size); err != nil {
		return err
	}
	if err := s.persistIndex(); err != nil {
		return err
	}
	if s.synced == s.size {
		return nil
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", s.logPath, err)
	}
	count()
	s.synced = s.size
	return nil
}

// syncIndex fsyncs the index file (on roll and Close, when the segment stops changing).
func (s *segment) syncIndex() error {
	if err := s.persistIndex(); err != nil {
		return err
	}
	if err := s.idxF.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", s.idxPath, err)
	}
	return nil
}

// truncate cuts the segment at pos, a batch boundary, whose batch offset is next, and makes the
// cut durable.
func (s *segment) truncate(pos, next int64) error {
	if pos >= s.flushed {
		// The cut is inside the page cache: nothing on disk to undo.
		s.pending = s.pending[:pos-s.flushed]
		// Keep the age of the bytes that stay: clip the mark covering pos, drop later ones.
		i := 0
		for i < len(s.marks) && s.marks[i].end < pos {
			i++
		}
		if i < len(s.marks) && len(s.pending) > 0 {
			s.marks[i].end = pos
			i++
		}
		s.marks = s.marks[:i]
	} else {
		s.pending, s.marks = s.pending[:0], s.marks[:0]
		if err := s.f.Truncate(pos); err != nil {
			return fmt.Errorf("truncate %s to %d: %w", s.logPath, pos, err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", s.logPath, err)
		}
		s.flushed = pos
		s.synced = min(s.synced, pos)
	}
	s.size, s.next = pos, next
	keep := sort.Search(len(s.idx), func(i int) bool { return int64(s.idx[i].pos) >= pos })
	s.idx = s.idx[:keep]
	s.lastIndexedPos = 0
	if keep > 0 {
		s.lastIndexedPos = int64(s.idx[keep-1].pos)
	}
	if keep < s.idxPersisted {
		if err := s.rewriteIndex(); err != nil {
			return err
		}
	}
	s.maxTsKnown = s.size == 0
	s.maxTs = -1
	return nil
}

func (s *segment) close() error {
	err1 := s.f.Close()
	err2 := s.idxF.Close()
	if err1 != nil {
		return err1
	}
	return err2
}

// remove closes and deletes the segment's files, the log first so that a crash in between leaves
// an orphan index (ignored at Open) rather than a log without its index.
func (s *segment) remove() error {
	s.close()
	if err := s.fs.Remove(s.logPath); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := s.fs.Remove(s.idxPath); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
