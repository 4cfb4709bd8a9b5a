package storage

// TruncateTo removes every record at offset >= offset, so LEO becomes offset. offset should be a
// batch boundary (followers truncate to an epoch's end offset, which is one); when it falls inside
// a batch, that whole batch goes too and LEO becomes its base offset, below offset — batches are
// never split. An offset at or past LEO is a no-op; one below StartOffset empties the log and
// starts it at offset (TruncateFullyAndStartAt). Leader-epoch entries starting at or after the
// new LEO are removed. The truncation is durable before TruncateTo returns.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.assertInvariants()
	if err := l.usable(); err != nil {
		return err
	}
	if offset >= l.leo() {
		return nil
	}
	if offset < l.startOffset() {
		return l.truncateFullyLocked(offset)
	}
	i := l.segFor(offset)
	seg := l.segs[i]
	var pos, newLEO int64
	if offset == seg.base {
		pos, newLEO = 0, seg.base
	} else {
		h, p, err := l.locate(seg, offset)
		if err != nil {
			return err
		}
		pos, newLEO = p, h.BaseOffset
		if h.BaseOffset < offset {
			l.lg.Info("truncation offset inside a batch: dropping the whole batch",
				"offset", offset, "batchBase", h.BaseOffset, "batchLast", h.LastOffset())
		}
	}
	// Newest first, so a crash midway leaves a prefix of the log.
	for j := len(l.segs) - 1; j > i; j-- {
		if err := l.segs[j].remove(); err != nil {
			return l.errf("truncate: %w", err)
		}
		l.segs = l.segs[:j]
	}
	if len(l.segs) > i+1 {
		l.segs = l.segs[:i+1]
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return l.errf("truncate: %w", err)
	}
	if err := seg.truncate(pos, newLEO); err != nil {
		return l.errf("truncate: %w", err)
	}
	l.lg.Info("log truncated", "offset", offset, "leo", newLEO)
	if l.epochs.truncateFromEnd(newLEO) {
		if err := l.epochs.save(l.fs, l.dir); err != nil {
			return l.errf("truncate: save leader epochs: %w", err)
		}
	}
	return nil
}

// TruncateFullyAndStartAt empties the log and starts it (and its log start offset) at offset: a follower whose LEO is below
// the leader's start offset does this. The leader-epoch cache is cleared, as in Kafka.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.assertInvariants()
	if err := l.usable(); err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	if offset < 0 {
		return l.errf("start offset %d is negative", offset)
	}
	// The log starts at offset now, so a start DeleteRecords moved above it
	// comes down to it (Kafka's truncateFullyAndStartAt sets logStartOffset
	// to the new offset; truncateTo lowers it to the target), else records
	// appended again from offset would be hidden. Durable first: a crash
	// after it keeps a start at or below the log, which hides nothing.
	if l.logStart > offset {
		if err := writeOffsetCheckpoint(l.fs, l.dir, logStartFile, offset); err != nil {
			return l.errf("truncate fully: log start checkpoint: %w", err)
		}
		l.logStart = offset
	}
	// Newest first, so a crash midway leaves a prefix of the old log.
	for j := len(l.segs) - 1; j >= 0; j-- {
		if err := l.segs[j].remove(); err != nil {
			return l.errf("truncate fully: %w", err)
		}
		l.segs = l.segs[:j]
	}
	seg, err := createSegment(l.fs, l.dir, offset)
	if err != nil {
		// Without a segment the Log cannot keep its invariants: it closes itself.
		l.closed.Store(true)
		return l.errf("truncate fully: %w (log closed)", err)
	}
	l.segs = append(l.segs, seg)
	if err := syncDir(l.fs, l.dir); err != nil {
		return l.errf("truncate fully: %w", err)
	}
	if err := writeOffsetCheckpoint(l.fs, l.dir, recoveryPointFile, offset); err != nil {
		return l.errf("truncate fully: recovery point: %w", err)
	}
	l.unsyncedRecords = 0
	l.epochs.entries = nil
	if err := l.epochs.save(l.fs, l.dir); err != nil {
		return l.errf("truncate fully: save leader epochs: %w", err)
	}
	l.lg.Info("log emptied", "startOffset", offset)
	return nil
}
