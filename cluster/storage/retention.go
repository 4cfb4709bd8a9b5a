package storage

import "time"

// EnforceRetention deletes the oldest closed segments (never the active one) that retention
// allows, and returns how many went. By size (RetentionBytes > 0): a segment goes while the log
// without it still holds at least RetentionBytes, Kafka's rule. By time (RetentionMs > 0): a
// segment goes when its largest batch timestamp is older than now - RetentionMs. Only a prefix
// of the log is deleted; StartOffset advances to the first remaining segment, and leader-epoch
// entries before it are trimmed.
//
// Retention does not know the high watermark; the caller must not let it delete unreplicated
// data (Kafka only deletes below the HW): keep retention well above replication lag.
func (l *Log) EnforceRetention(now time.Time) (deletedSegments int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.assertInvariants()
	if err := l.usable(); err != nil {
		return 0, err
	}
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	cutoff := now.UnixMilli() - l.opts.RetentionMs
	buf := []byte(nil)
	n := 0
	// Bound: at most len(segs)-1 closed segments.
	for n < len(l.segs)-1 {
		seg := l.segs[n]
		bySize := l.opts.RetentionBytes > 0 && total-seg.size >= l.opts.RetentionBytes
		byTime := false
		if l.opts.RetentionMs > 0 && !bySize {
			if buf == nil {
				buf = make([]byte, scanChunk)
			}
			if err := l.learnMaxTs(seg, buf); err != nil {
				return n, l.errf("retention: %w", err)
			}
			byTime = seg.maxTs < cutoff
		}
		if !bySize && !byTime {
			break
		}
		total -= seg.size
		n++
	}
	if n == 0 {
		return 0, nil
	}
	// Oldest first, so a crash midway leaves a suffix of the log starting at a segment base.
	for j := 0; j < n; j++ {
		l.lg.Info("retention: deleting segment", "base", l.segs[j].base, "bytes", l.segs[j].size)
		if err := l.segs[j].remove(); err != nil {
			l.segs = l.segs[j:]
			return j, l.errf("retention: %w", err)
		}
	}
	l.segs = append([]*segment(nil), l.segs[n:]...)
	if err := syncDir(l.fs, l.dir); err != nil {
		return n, l.errf("retention: %w", err)
	}
	if l.epochs.truncateFromStart(l.startOffset()) {
		if err := l.epochs.save(l.fs, l.dir); err != nil {
			return n, l.errf("retention: save leader epochs: %w", err)
		}
	}
	return n, nil
}
