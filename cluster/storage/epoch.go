package storage

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"gregor/internal/fsys"
)

// EpochEntry says that leader epoch Epoch wrote its first record at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the leader-epoch cache, persisted like Kafka's leader-epoch-checkpoint.
// Invariant (epochCache.invariants): Epoch and StartOffset both strictly increase along entries,
// every Epoch is >= 0 and every StartOffset within [log start offset, LEO].
type epochCache struct {
	entries []EpochEntry
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign adds (epoch, start) when epoch is newer than the latest; entries starting at or after
// start are superseded (as in Kafka's LeaderEpochFileCache.assign). It reports a change.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if last, ok := c.latest(); ok && epoch <= last.Epoch {
		return false
	}
	c.truncateFromEnd(start)
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: start})
	return true
}

// truncateFromEnd removes entries starting at or after end (the new LEO).
func (c *epochCache) truncateFromEnd(end int64) bool {
	i := len(c.entries)
	for i > 0 && c.entries[i-1].StartOffset >= end {
		i--
	}
	changed := i < len(c.entries)
	c.entries = c.entries[:i]
	return changed
}

// truncateFromStart drops entries wholly before start (the new log start offset); the entry
// covering start is moved to begin there, as Kafka does after retention.
func (c *epochCache) truncateFromStart(start int64) bool {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= start {
		i++
	}
	changed := i > 0
	c.entries = c.entries[i:]
	if len(c.entries) > 0 && c.entries[0].StartOffset < start {
		c.entries[0].StartOffset = start
		changed = true
	}
	return changed
}

// endOffsetFor answers OffsetForLeaderEpoch; see Log.EndOffsetForEpoch.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	// i is the first entry with an epoch above the requested one.
	i, _ := slices.BinarySearchFunc(c.entries, epoch+1, func(e EpochEntry, t int32) int {
		return cmp.Compare(e.Epoch, t)
	})
	if epoch < 0 || i == 0 {
		return -1, -1
	}
	if i == len(c.entries) {
		return c.entries[i-1].Epoch, leo
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}

func loadEpochCache(fs fsys.FS, dir string) (*epochCache, error) {
	lines, _, err := readCheckpointLines(fs, filepath.Join(dir, epochCheckpointFile))
	if err != nil {
		return nil, err
	}
	c := &epochCache{}
	for _, f := range lines {
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: line %q: want \"epoch startOffset\"", epochCheckpointFile, f)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: line %q: not numbers", epochCheckpointFile, f)
		}
		c.entries = append(c.entries, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	if err := c.ordered(); err != nil {
		return nil, fmt.Errorf("%s: %w", epochCheckpointFile, err)
	}
	return c, nil
}

func (c *epochCache) save(fs fsys.FS, dir string) error {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return writeFileAtomic(fs, dir, epochCheckpointFile, formatCheckpoint(lines))
}

// AssignEpoch records that epoch starts at startOffset: a new leader calls it with its LEO when
// it takes over, before appending. It is a no-op when epoch is not newer than the latest entry.
// Entries starting at or after startOffset are superseded. The cache is persisted before return.
func (l *Log) AssignEpoch(epoch int32, startOffset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.assertInvariants()
	if err := l.usable(); err != nil {
		return err
	}
	if epoch < 0 {
		return fmt.Errorf("storage: negative leader epoch %d", epoch)
	}
	if leo := l.leo(); startOffset < l.startOffset() || startOffset > leo {
		return fmt.Errorf("storage: epoch %d start offset %d outside the log [%d, %d]", epoch, startOffset, l.startOffset(), leo)
	}
	if !l.epochs.assign(epoch, startOffset) {
		return nil
	}
	return l.epochs.save(l.fs, l.dir)
}

// Epochs returns a copy of the leader-epoch cache, oldest first.
func (l *Log) Epochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.epochs.entries)
}

// LatestEpoch is the newest epoch in the cache; false when the cache is empty.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279): foundEpoch is the largest
// epoch <= epoch that the cache knows, endOffset the start offset of the first epoch after it, or
// LEO when it is the latest. A follower truncates to min(its LEO, endOffset) after checking it
// holds foundEpoch. When epoch is below every entry (or negative, or the cache is empty) it
// returns (-1, -1), UNDEFINED.
//
// Two deliberate differences from Kafka's LeaderEpochFileCache.endOffsetFor: an epoch above the
// latest answers (latest, LEO) rather than UNDEFINED, and an epoch below the first entry answers
// UNDEFINED rather than (epoch, first start offset).
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.endOffsetFor(epoch, l.leo())
}
