package storage

import "fmt"

// logStartFile holds the log start offset DeleteRecords moved, as Kafka's
// log-start-offset-checkpoint does.
const logStartFile = "log-start-offset-checkpoint"

// loadLogStart reads the checkpointed log start offset after load. One the
// recovered log no longer reaches (its tail was lost) is clamped by
// startOffset to the LEO.
func (l *Log) loadLogStart() error {
	v, ok, err := readOffsetCheckpoint(l.fs, l.dir, logStartFile)
	if err != nil {
		return fmt.Errorf("%s: %w (delete it to keep every record)", logStartFile, err)
	}
	if ok {
		l.logStart = v
	}
	return nil
}

// AdvanceStartOffset moves the log start offset up to offset (DeleteRecords,
// KIP-107; a follower following its leader's): records below it are no
// longer read, and segments wholly below it are deleted. The new start is
// durable before it takes effect. It never moves the start back and never
// past the LEO (ErrOffsetOutOfRange). It returns the start offset after.
func (l *Log) AdvanceStartOffset(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.assertInvariants()
	if err := l.usable(); err != nil {
		return -1, err
	}
	if offset > l.leo() {
		return l.startOffset(), fmt.Errorf("%w: start offset %d past the log end %d", ErrOffsetOutOfRange, offset, l.leo())
	}
	if offset <= l.startOffset() {
		return l.startOffset(), nil
	}
	if err := writeOffsetCheckpoint(l.fs, l.dir, logStartFile, offset); err != nil {
		return l.startOffset(), l.errf("log start checkpoint: %w", err)
	}
	l.logStart = offset
	// Closed segments whose every record is below the start go, oldest
	// first; the active one stays. Bounded by the segment count.
	n := 0
	for n < len(l.segs)-1 && l.segs[n].next <= offset {
		if err := l.segs[n].remove(); err != nil {
			l.segs = l.segs[n:]
			return l.startOffset(), l.errf("delete records: %w", err)
		}
		n++
	}
	if n > 0 {
		l.segs = append([]*segment(nil), l.segs[n:]...)
		if err := syncDir(l.fs, l.dir); err != nil {
			return l.startOffset(), l.errf("delete records: %w", err)
		}
	}
	if l.epochs.truncateFromStart(l.startOffset()) {
		if err := l.epochs.save(l.fs, l.dir); err != nil {
			return l.startOffset(), l.errf("delete records: save leader epochs: %w", err)
		}
	}
	return l.startOffset(), nil
}
