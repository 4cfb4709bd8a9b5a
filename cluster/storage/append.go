package storage

import (
	"fmt"
	"math"
)

// Append adds one or more v2 batches whose offsets are already assigned. The first base offset
// must equal LEO and each batch must start right after the previous one: a gap or overlap is an
// error, never written. Every batch is checked (framing, magic, CRC) before anything is written,
// so an Append lands whole or not at all (a crash mid-write can tear it; recovery cuts the tear).
// A batch whose PartitionLeaderEpoch is newer than the latest cached epoch starts a new
// leader-epoch entry at its base offset. The fsync policy is applied before returning.
func (l *Log) Append(batches []byte) error {
	if len(batches) == 0 {
		return nil
	}
	if len(batches) > maxAppendBytes {
		return l.errf("append of %d bytes exceeds %d", len(batches), maxAppendBytes)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.assertInvariants()
	if err := l.usable(); err != nil {
		return err
	}
	leo := l.leo()
	next := leo
	var records int64
	maxTs := int64(-1)
	// New leader epochs seen in the batches, in order; usually none.
	var newEpochs []EpochEntry
	latestEpoch := int32(-1)
	if last, ok := l.epochs.latest(); ok {
		latestEpoch = last.Epoch
	}
	err := ForEachBatch(batches, func(h BatchHeader, _ []byte) error {
		if h.BaseOffset != next {
			return fmt.Errorf("batch base offset %d, expected %d (LEO %d): appends must be contiguous", h.BaseOffset, next, leo)
		}
		if h.PartitionLeaderEpoch > latestEpoch {
			newEpochs = append(newEpochs, EpochEntry{Epoch: h.PartitionLeaderEpoch, StartOffset: h.BaseOffset})
			latestEpoch = h.PartitionLeaderEpoch
		}
		next = h.NextOffset()
		records += int64(h.NumRecords)
		maxTs = max(maxTs, h.MaxTimestamp)
		return nil
	})
	if err != nil {
		return l.errf("append at LEO %d: %w: %w", leo, errInvalidAppend, err)
	}

	if err := l.maybeRoll(int64(len(batches)), next); err != nil {
		return err
	}
	// Epochs are saved before the data, as Kafka does: a crash in between leaves an entry past
	// the log end, which recovery drops; the other order could leave data without its epoch.
	if len(newEpochs) > 0 {
		for _, e := range newEpochs {
			l.epochs.assign(e.Epoch, e.StartOffset)
		}
		if err := l.epochs.save(l.fs, l.dir); err != nil {
			l.epochs.truncateFromEnd(leo)
			return l.errf("save leader epochs: %w", err)
		}
	}
	seg := l.active()
	idxLen, lastIndexed := len(seg.idx), seg.lastIndexedPos
	seg.addIndexEntries(batches, l.opts.IndexIntervalBytes)
	if l.opts.LazyFS {
		seg.addPending(batches, l.opts.now(), l.markCoalesce())
	} else if err := seg.writeFile(batches); err != nil {
		// The bytes may be partly in the file: cut them so the file matches what we report.
		seg.idx, seg.lastIndexedPos = seg.idx[:idxLen], lastIndexed
		if l.epochs.truncateFromEnd(leo) {
			_ = l.epochs.save(l.fs, l.dir) // best effort: recovery drops entries past LEO anyway
		}
		if terr := seg.f.Truncate(seg.size); terr != nil {
			l.closed.Store(true)
			return l.errf("%v; cutting the partial write failed too (%v): log closed", err, terr)
		}
		return l.errf("%w", err)
	}
	seg.next = next
	seg.maxTs = max(seg.maxTs, maxTs)
	if l.opts.LazyFS {
		if err := l.limitPending(seg); err != nil {
			return err
		}
	} else if err := seg.persistIndex(); err != nil {
		return l.errf("%w", err)
	}

	l.unsyncedRecords += records
	switch l.opts.Fsync.Mode {
	case FsyncAlways:
		return l.syncLocked()
	case FsyncEveryN:
		if l.unsyncedRecords >= int64(l.opts.Fsync.N) {
			return l.syncLocked()
		}
	}
	return nil
}

// maybeRoll starts a new segment when appending n bytes would take the active one past
// SegmentBytes, or relative offsets up to last would overflow the index's uint32. An empty
// active segment is never rolled, so one oversized Append gets a segment of its own.
func (l *Log) maybeRoll(n int64, next int64) error {
	seg := l.active()
	if seg.size == 0 || (seg.size+n <= l.opts.SegmentBytes && next-seg.base <= math.MaxUint32) {
		return nil
	}
	return l.roll()
}

// roll syncs the active segment (data and index), creates the next one at LEO, and records the
// new base as the recovery point: everything before it is durable.
func (l *Log) roll() error {
	old := l.active()
	if err := old.sync(l.countFsync); err != nil {
		return l.errf("roll: %w", err)
	}
	l.unsyncedRecords = 0
	if err := old.syncIndex(); err != nil {
		return l.errf("roll: %w", err)
	}
	seg, err := createSegment(l.fs, l.dir, old.next)
	if err != nil {
		return l.errf("roll: %w", err)
	}
	l.segs = append(l.segs, seg)
	if err := syncDir(l.fs, l.dir); err != nil {
		return l.errf("roll: %w", err)
	}
	if err := writeOffsetCheckpoint(l.fs, l.dir, recoveryPointFile, seg.base); err != nil {
		return l.errf("roll: recovery point: %w", err)
	}
	l.lg.Debug("rolled segment", "base", seg.base)
	if l.opts.Rolled != nil {
		l.opts.Rolled(seg.base)
	}
	return nil
}
