package storage

import "time"

// The LazyFS model: appended bytes wait in the active segment's pending buffer (the page cache)
// and reach the file only on fsync (policy, Sync, roll, Close), when older than WritebackDelay
// (this goroutine, like the kernel's dirty_expire), or when more than LazyMaxPendingBytes wait
// (like dirty_bytes). The file is the disk: Crash or a kill loses pending bytes only.

// markCoalesce is the age granularity of pending bytes: appends closer together than this share
// one mark, which bounds the marks to about 16 per WritebackDelay.
func (l *Log) markCoalesce() time.Duration {
	if l.opts.WritebackDelay <= 0 {
		return time.Hour // no write-back by age: one mark is enough
	}
	return max(l.opts.WritebackDelay/16, time.Millisecond)
}

// writebackTick is how often the goroutine looks for expired bytes.
func (l *Log) writebackTick() time.Duration {
	return min(max(l.opts.WritebackDelay/4, time.Millisecond), time.Second)
}

func (l *Log) writeback() {
	defer close(l.wbDone)
	t := time.NewTicker(l.writebackTick())
	defer t.Stop()
	for {
		select {
		case <-l.stopWB:
			return
		case <-t.C:
			if err := l.writebackExpired(); err != nil {
				l.lg.Error("lazyfs write-back failed", "err", err)
			}
		}
	}
}

// writebackExpired writes back the pending bytes older than WritebackDelay.
func (l *Log) writebackExpired() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.assertInvariants()
	if l.closed.Load() {
		return nil
	}
	seg := l.active()
	cutoff := l.opts.now().Add(-l.opts.WritebackDelay)
	end := seg.flushed
	for _, m := range seg.marks {
		if m.at.After(cutoff) {
			break
		}
		end = m.end
	}
	return seg.flushTo(end)
}

// limitPending writes back the oldest pending bytes until at most LazyMaxPendingBytes wait.
func (l *Log) limitPending(seg *segment) error {
	if len(seg.pending) <= l.opts.LazyMaxPendingBytes {
		return nil
	}
	end := seg.size
	for _, m := range seg.marks {
		if seg.size-m.end <= int64(l.opts.LazyMaxPendingBytes) {
			end = m.end
			break
		}
	}
	return seg.flushTo(end)
}
