package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gregor/internal/fsys"
)

// listSegments returns the base offsets of dir's segment logs in order, and removes leftovers:
// index files without a log (a crash between the two removals) and temporary checkpoint files.
func listSegments(fs fsys.FS, dir string) ([]int64, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	logs := map[int64]bool{}
	var bases []int64
	for _, e := range ents {
		if b, ok := parseSegmentName(e.Name(), ".log"); ok {
			logs[b] = true
			bases = append(bases, b)
		}
	}
	for _, e := range ents {
		name := e.Name()
		if b, ok := parseSegmentName(name, ".index"); ok && !logs[b] || strings.HasSuffix(name, tmpSuffix) {
			if err := fs.Remove(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(bases)
	return bases, nil
}

func parseSegmentName(name, ext string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, ext)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	b, err := strconv.ParseInt(stem, 10, 64)
	return b, err == nil && b >= 0
}

// load opens the segments and checkpoints, recovering after an unclean shutdown.
//
// Recovery choice: a roll fsyncs the old segment and then persists the new segment's base as
// the recovery point, so after a crash only segments from the one holding the recovery point
// on can hold unsynced or torn bytes. Those are scanned batch by batch (framing, magic, CRC,
// offset continuity) and their index is rebuilt; earlier ones only get the cheap checks (index
// sanity and a framing walk of the tail after the last index entry). Without a recovery point
// every segment is scanned. At the first bad batch the file is cut there and later segments
// are deleted.
func (l *Log) load() error {
	bases, err := listSegments(l.fs, l.dir)
	if err != nil {
		return err
	}
	markerPath := filepath.Join(l.dir, cleanShutdownFile)
	_, statErr := l.fs.Stat(markerPath)
	clean := statErr == nil
	if clean {
		// Gone before anything else changes, so a crash from here on is seen as unclean.
		if err := l.fs.Remove(markerPath); err != nil {
			return err
		}
		if err := syncDir(l.fs, l.dir); err != nil {
			return err
		}
	}
	rp, haveRP, err := readOffsetCheckpoint(l.fs, l.dir, recoveryPointFile)
	if err != nil {
		l.lg.Warn("recovery point unreadable; scanning every segment", "err", err)
		haveRP = false
	}
	scanFrom := len(bases) // clean: scan nothing
	if !clean {
		scanFrom = 0
		if haveRP {
			// The segment holding rp (the last starting at or before it) and all later ones.
			for i, b := range bases {
				if b <= rp {
					scanFrom = i
				}
			}
		}
		l.lg.Info("unclean shutdown: recovering", "segments", len(bases), "scanFrom", scanFrom, "recoveryPoint", rp)
	}

	for i, base := range bases {
		seg, rawIdx, err := openSegment(l.fs, l.dir, base)
		if err != nil {
			return err
		}
		if n := len(l.segs); n > 0 && l.segs[n-1].next != base {
			prev := l.segs[n-1]
			seg.close()
			l.lg.Warn("segment does not continue its predecessor; deleting it and later segments",
				"segment", base, "previousEnd", prev.next)
			if err := l.deleteSegmentFiles(bases[i:]); err != nil {
				return err
			}
			break
		}
		l.segs = append(l.segs, seg)
		var cut error
		if i >= scanFrom {
			cut = l.recoverSegment(seg)
		} else {
			cut = l.loadSegment(seg, rawIdx)
		}
		if cut != nil {
			if !errors.Is(cut, ErrCorrupt) {
				return cut
			}
			if i+1 < len(bases) {
				l.lg.Warn("deleting segments after the cut", "segments", bases[i+1:])
				if err := l.deleteSegmentFiles(bases[i+1:]); err != nil {
					return err
				}
			}
			break
		}
	}
	if len(l.segs) == 0 {
		seg, err := createSegment(l.fs, l.dir, 0)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		if err := syncDir(l.fs, l.dir); err != nil {
			return err
		}
	}
	// Only the active segment may grow; the others must be synced (rolls guarantee it on disk).
	if err := l.segmentInvariants(); err != nil {
		return err
	}

	if l.epochs, err = loadEpochCache(l.fs, l.dir); err != nil {
		return err
	}
	leo := l.leo()
	changed := l.epochs.truncateFromEnd(leo)
	if changed {
		l.lg.Warn("leader epoch entries beyond the recovered log end dropped", "leo", leo)
	}
	if l.epochs.truncateFromStart(l.startOffset()) || changed {
		if err := l.epochs.save(l.fs, l.dir); err != nil {
			return err
		}
	}

	hw, _, err := readOffsetCheckpoint(l.fs, l.dir, hwCheckpointFile)
	if err != nil {
		l.lg.Warn("high watermark checkpoint unreadable; starting from 0", "err", err)
		hw = 0
	}
	l.recoveredHW = min(max(hw, l.startOffset()), leo)
	return nil
}

// deleteSegmentFiles removes segments newest first, so a crash midway leaves a prefix of the log.
func (l *Log) deleteSegmentFiles(bases []int64) error {
	for i := len(bases) - 1; i >= 0; i-- {
		logPath, idxPath := segmentPaths(l.dir, bases[i])
		for _, p := range []string{logPath, idxPath} {
			if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return syncDir(l.fs, l.dir)
}

// recoverSegment scans every batch of seg with full checks, rebuilding its index and learning its
// end offset and max timestamp. At the first bad or torn batch it cuts the file there (durably)
// and returns an error wrapping ErrCorrupt that says what was cut; I/O errors are returned as is.
func (l *Log) recoverSegment(seg *segment) error {
	return l.walkSegment(seg, 0, seg.base, true, nil)
}

// loadSegment trusts a segment that was fully synced: it checks the index file cheaply (order,
// bounds, and the last entry against the batch it points at), rebuilding it if that fails, then
// walks the batches after the last index entry to find the segment's end.
func (l *Log) loadSegment(seg *segment, raw []indexEntry) error {
	if reason := l.indexProblem(seg, raw); reason != "" {
		l.lg.Info("rebuilding offset index", "segment", seg.base, "reason", reason)
		return l.walkSegment(seg, 0, seg.base, false, nil)
	}
	seg.idx = raw
	seg.idxPersisted = len(raw)
	from, next := int64(0), seg.base
	if n := len(raw); n > 0 {
		from, next = int64(raw[n-1].pos), seg.base+int64(raw[n-1].rel)
		seg.lastIndexedPos = from
	}
	return l.walkSegment(seg, from, next, false, raw)
}

// indexProblem says why an index file cannot be trusted, or "" when it looks right.
func (l *Log) indexProblem(seg *segment, raw []indexEntry) string {
	if fi, err := seg.idxF.Stat(); err != nil || fi.Size()%indexEntrySize != 0 {
		return "size is not a whole number of entries"
	}
	if len(raw) == 0 {
		return "" // the walk from position 0 rebuilds whatever is missing
	}
	for i, e := range raw {
		if int64(e.pos) >= seg.size || e.pos == 0 {
			return fmt.Sprintf("entry %d points at %d, outside (0, %d)", i, e.pos, seg.size)
		}
		if i > 0 && (e.rel <= raw[i-1].rel || e.pos <= raw[i-1].pos) {
			return fmt.Sprintf("entry %d does not increase", i)
		}
	}
	last := raw[len(raw)-1]
	var hdr [BatchHeaderSize]byte
	if n, _ := seg.readAt(hdr[:], int64(last.pos)); n < BatchHeaderSize {
		return "last entry points past the data"
	}
	h, err := ParseBatchHeader(hdr[:])
	if err != nil || h.BaseOffset != seg.base+int64(last.rel) {
		return fmt.Sprintf("last entry (offset %d) does not match the batch it points at", seg.base+int64(last.rel))
	}
	return ""
}

// walkSegment walks seg's batches from position from, where offset next is expected, adding
// index entries and tracking the max timestamp (known only when the walk starts at 0). verify
// adds magic and CRC checks. On a bad batch it cuts the segment there. kept is the index prefix
// already valid (nil to rebuild the index file from scratch).
func (l *Log) walkSegment(seg *segment, from, next int64, verify bool, kept []indexEntry) error {
	seg.idx = kept
	if kept == nil {
		seg.lastIndexedPos = 0
	}
	seg.maxTs = -1
	sc := newScanner(seg, from, make([]byte, scanChunk), verify)
	var cut error
	// Bound: each step advances the scanner by at least one header, and end is fixed.
	for {
		h, _, pos, err := sc.next(false)
		if err == io.EOF {
			break
		}
		if err == nil && h.BaseOffset != next {
			err = fmt.Errorf("%w: batch at position %d has base offset %d, expected %d", ErrCorrupt, pos, h.BaseOffset, next)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return err
			}
			cut = l.cutSegment(seg, pos, next, err)
			break
		}
		if pos-seg.lastIndexedPos >= int64(l.opts.IndexIntervalBytes) {
			seg.idx = append(seg.idx, indexEntry{rel: uint32(h.BaseOffset - seg.base), pos: uint32(pos)})
			seg.lastIndexedPos = pos
		}
		seg.maxTs = max(seg.maxTs, h.MaxTimestamp)
		next = h.NextOffset()
	}
	seg.next = next
	seg.maxTsKnown = from == 0
	if kept == nil || len(seg.idx) != len(kept) {
		if err := seg.rewriteIndex(); err != nil {
			return err
		}
	}
	if cut != nil {
		return cut
	}
	return nil
}

// cutSegment truncates seg at pos after a bad batch, durably, and logs what was lost.
func (l *Log) cutSegment(seg *segment, pos, next int64, why error) error {
	lost := seg.size - pos
	l.lg.Warn("truncating log at bad batch", "segment", seg.base, "position", pos,
		"offset", next, "bytesCut", lost, "reason", why.Error())
	if err := seg.f.Truncate(pos); err != nil {
		return err
	}
	if err := seg.f.Sync(); err != nil {
		return err
	}
	seg.size, seg.flushed, seg.synced = pos, pos, pos
	keep := 0
	for keep < len(seg.idx) && int64(seg.idx[keep].pos) < pos {
		keep++
	}
	seg.idx = seg.idx[:keep]
	seg.lastIndexedPos = 0
	if keep > 0 {
		seg.lastIndexedPos = int64(seg.idx[keep-1].pos)
	}
	return fmt.Errorf("segment %d cut at position %d (offset %d, %d bytes): %w", seg.base, pos, next, lost, why)
}
