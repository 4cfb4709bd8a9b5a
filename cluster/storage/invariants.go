package storage

import (
	"errors"
	"fmt"

	"gregor/cluster/invariant"
)

// The invariants written next to the fields of Log, segment and epochCache,
// as code. Open runs the segment part on every recovered log (a log that
// breaks it is refused, whatever the checks switch says); with checks on
// (tests), every change (Append and its roll, TruncateTo,
// TruncateFullyAndStartAt, retention, AssignEpoch, Sync, LazyFS write-back)
// runs all of it before releasing the lock. Reading the last index entry's
// batch header is the one I/O: one small read per segment.

// assertInvariants panics on a broken invariant when checks are on. Writers
// defer it right after taking mu, so it runs before the unlock. A closed log
// (a failed write may close it) is not checked.
func (l *Log) assertInvariants() {
	if !invariant.On() || l.closed.Load() {
		return
	}
	invariant.Must("storage "+l.dir, l.invariants())
}

// invariants returns the first broken invariant, or nil. Caller holds mu.
func (l *Log) invariants() error {
	if err := l.segmentInvariants(); err != nil {
		return err
	}
	if l.unsyncedRecords < 0 {
		return l.errf("%d unsynced records", l.unsyncedRecords)
	}
	if err := l.epochs.invariants(l.startOffset(), l.leo()); err != nil {
		return l.errf("leader epochs: %w", err)
	}
	return nil
}

// segmentInvariants checks the segment list and every segment.
func (l *Log) segmentInvariants() error {
	if len(l.segs) == 0 {
		return l.errf("no segment")
	}
	for i, s := range l.segs {
		if i > 0 && l.segs[i-1].next != s.base {
			return l.errf("segment %d does not continue %d (ends at %d)", s.base, l.segs[i-1].base, l.segs[i-1].next)
		}
		last := i == len(l.segs)-1
		if !last && (s.size == 0 || s.synced != s.size || len(s.pending) > 0) {
			return l.errf("closed segment %d: size %d, synced %d, %d bytes pending: only the active one may be empty or unsynced",
				s.base, s.size, s.synced, len(s.pending))
		}
		if err := s.invariants(); err != nil {
			return l.errf("segment %d: %w", s.base, err)
		}
	}
	return nil
}

// invariants checks one segment's offsets, byte counts, LazyFS marks and
// index. Caller holds the Log's mu.
func (s *segment) invariants() error {
	if s.next < s.base || (s.size == 0) != (s.next == s.base) {
		return fmt.Errorf("size %d but offsets [%d, %d)", s.size, s.base, s.next)
	}
	if s.synced < 0 || s.synced > s.flushed || s.flushed > s.size || s.flushed+int64(len(s.pending)) != s.size {
		return fmt.Errorf("synced %d, flushed %d, pending %d, size %d: want synced <= flushed <= size = flushed + pending",
			s.synced, s.flushed, len(s.pending), s.size)
	}
	if len(s.pending) == 0 && len(s.marks) > 0 {
		return fmt.Errorf("%d write-back marks without pending bytes", len(s.marks))
	}
	for i, m := range s.marks {
		if m.end <= s.flushed || m.end > s.size || (i > 0 && m.end <= s.marks[i-1].end) {
			return fmt.Errorf("write-back mark %d ends at %d: marks must increase within (flushed %d, size %d]", i, m.end, s.flushed, s.size)
		}
	}
	if n := len(s.marks); len(s.pending) > 0 && (n == 0 || s.marks[n-1].end != s.size) {
		return fmt.Errorf("pending bytes up to %d not covered by a write-back mark", s.size)
	}
	return s.indexInvariants()
}

// indexInvariants: entries increase in offset and position, point inside
// the data, the persisted prefix points into flushed bytes, and the last
// entry points at the batch it names.
func (s *segment) indexInvariants() error {
	if s.idxPersisted < 0 || s.idxPersisted > len(s.idx) {
		return fmt.Errorf("%d index entries persisted of %d", s.idxPersisted, len(s.idx))
	}
	for i, e := range s.idx {
		if int64(e.pos) >= s.size {
			return fmt.Errorf("index entry %d points at %d, past the size %d", i, e.pos, s.size)
		}
		if i > 0 && (e.rel <= s.idx[i-1].rel || e.pos <= s.idx[i-1].pos) {
			return fmt.Errorf("index entry %d (offset %d at %d) does not increase", i, s.base+int64(e.rel), e.pos)
		}
		if i < s.idxPersisted && int64(e.pos) >= s.flushed {
			return fmt.Errorf("persisted index entry %d points at %d, past the flushed %d", i, e.pos, s.flushed)
		}
	}
	n := len(s.idx)
	if n == 0 {
		if s.lastIndexedPos != 0 {
			return fmt.Errorf("no index entry, yet the last was at %d", s.lastIndexedPos)
		}
		return nil
	}
	last := s.idx[n-1]
	if s.lastIndexedPos != int64(last.pos) {
		return fmt.Errorf("last index entry at %d, remembered at %d", last.pos, s.lastIndexedPos)
	}
	var hdr [BatchHeaderSize]byte
	if m, err := s.readAt(hdr[:], int64(last.pos)); m < BatchHeaderSize {
		return fmt.Errorf("last index entry at %d: header unreadable (%d bytes, %v)", last.pos, m, err)
	}
	h, err := ParseBatchHeader(hdr[:])
	if err != nil || h.BaseOffset != s.base+int64(last.rel) {
		return fmt.Errorf("last index entry says offset %d at %d, the batch there is %d (%v)",
			s.base+int64(last.rel), last.pos, h.BaseOffset, err)
	}
	return nil
}

// invariants: ordered, and every start offset within [log start, LEO].
func (c *epochCache) invariants(start, leo int64) error {
	if c == nil {
		return errors.New("no epoch cache")
	}
	if err := c.ordered(); err != nil {
		return err
	}
	for _, e := range c.entries {
		if e.StartOffset < start || e.StartOffset > leo {
			return fmt.Errorf("epoch %d starts at %d, outside the log [%d, %d]", e.Epoch, e.StartOffset, start, leo)
		}
	}
	return nil
}

// ordered: epochs are >= 0 and start offsets >= 0, both strictly
// increasing. The part a checkpoint file can be held to when it is read,
// before the log it describes is recovered.
func (c *epochCache) ordered() error {
	for i, e := range c.entries {
		if e.Epoch < 0 || e.StartOffset < 0 {
			return fmt.Errorf("negative epoch entry %v", e)
		}
		if i > 0 {
			if p := c.entries[i-1]; e.Epoch <= p.Epoch || e.StartOffset <= p.StartOffset {
				return fmt.Errorf("entry %d (epoch %d at %d) does not follow (epoch %d at %d)", i, e.Epoch, e.StartOffset, p.Epoch, p.StartOffset)
			}
		}
	}
	return nil
}
