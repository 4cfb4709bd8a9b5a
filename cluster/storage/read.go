package storage

import (
	"fmt"
	"io"
)

// Read returns whole batches starting with the one that contains offset, in offset order, and
// stops before any batch whose base offset is >= upTo (consumers pass the high watermark,
// followers LEO) or that would take the result past maxBytes. The first batch is returned even
// when larger than maxBytes (KIP-74), so a fetch always progresses. A read may span segments.
// It returns ErrOffsetOutOfRange when offset < StartOffset or offset > LEO, and (nil, nil) when
// offset == LEO or offset >= upTo. The result is a fresh slice the caller owns; its size is at
// most max(maxBytes, first batch).
func (l *Log) Read(offset int64, maxBytes int, upTo int64) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	leo := l.leo()
	if offset < l.startOffset() || offset > leo {
		return nil, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, l.startOffset(), leo)
	}
	if offset == leo || offset >= upTo {
		return nil, nil
	}
	i := l.segFor(offset)
	seg := l.segs[i]
	first, pos, err := l.locate(seg, offset)
	if err != nil {
		return nil, err
	}
	// Size the buffer once: the budget (or the first batch), capped by what the log holds.
	want := max(int64(maxBytes), int64(first.Size()))
	avail := seg.size - pos
	for _, s := range l.segs[i+1:] {
		if avail >= want {
			break
		}
		avail += s.size
	}
	out := make([]byte, 0, min(want, avail))
	// Bound: one iteration per segment, and the loop ends once a segment is cut short.
	firstSize := first.Size()
	for {
		var more bool
		if out, more, err = collect(seg, pos, out, maxBytes, firstSize, upTo); err != nil {
			return nil, err
		}
		i++
		if !more || i == len(l.segs) {
			break
		}
		seg, pos, firstSize = l.segs[i], 0, 0
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// locate finds the batch of seg containing offset: index lookup, then a header walk through a
// small pooled buffer. Callers ensure seg.base <= offset < seg.next.
func (l *Log) locate(seg *segment, offset int64) (BatchHeader, int64, error) {
	bufp := locatePool.Get().(*[]byte)
	defer locatePool.Put(bufp)
	sc := newScanner(seg, seg.lookup(offset), *bufp, false)
	// Bound: the scanner advances at least one header per step and stops at the segment end.
	for {
		h, _, pos, err := sc.next(false)
		if err == io.EOF {
			return h, 0, l.errf("offset %d not found in segment %d (ends at %d)", offset, seg.base, seg.next)
		}
		if err != nil {
			return h, 0, l.errf("locate offset %d: %w", offset, err)
		}
		if h.LastOffset() >= offset {
			return h, pos, nil
		}
	}
}

// collect appends to out the whole batches of seg from position pos while they stay under upTo
// and maxBytes; firstSize, the size of the Read's first batch (0 after it), lets that batch in
// whatever the budget. more reports that the segment was exhausted with budget left, so the read
// may continue in the next segment.
func collect(seg *segment, pos int64, out []byte, maxBytes, firstSize int, upTo int64) ([]byte, bool, error) {
	avail := seg.size - pos
	room := max(int64(maxBytes-len(out)), int64(firstSize))
	n := min(room, avail)
	if n < BatchHeaderSize {
		return out, avail == 0, nil
	}
	start := len(out)
	if int64(cap(out)-start) < n {
		grown := make([]byte, start, int64(start)+n)
		copy(grown, out)
		out = grown
	}
	region := out[start : int64(start)+n]
	if m, err := seg.readAt(region, pos); err != nil || int64(m) < n {
		return out, false, fmt.Errorf("read segment %d at %d: %d of %d bytes: %v", seg.base, pos, m, n, err)
	}
	keep := 0
	// Bound: each step consumes one whole batch of region.
	for len(region)-keep >= BatchHeaderSize {
		h, err := ParseBatchHeader(region[keep:])
		if err != nil {
			return out, false, fmt.Errorf("segment %d position %d: %w", seg.base, pos+int64(keep), err)
		}
		if h.BaseOffset >= upTo {
			return out[:start+keep], false, nil
		}
		if h.Size() > len(region)-keep {
			break // over the budget: it waits for the next Read
		}
		// A batch is never served with a CRC mismatch (a bit flipped at
		// rest): Kafka's broker serves FileRecords unchecked and leaves it to
		// the consumer's check.crcs and the follower's
		// CorruptRecordException; gregor checks here, so neither a consumer
		// nor a follower ever gets the bytes (DESIGN.md section 2, Disk
		// faults).
		if err := checkBatch(h, region[keep:keep+h.Size()]); err != nil {
			return out, false, fmt.Errorf("segment %d position %d: %w", seg.base, pos+int64(keep), err)
		}
		keep += h.Size()
	}
	out = out[:start+keep]
	return out, int64(keep) == avail, nil
}

// ScanBatches calls fn with the header of every batch from the one containing from, in offset
// order, until fn returns false or the log ends (from below StartOffset starts at StartOffset;
// from at or past LEO calls fn never). It holds the read lock throughout, so fn must not
// call the Log.
func (l *Log) ScanBatches(from int64, fn func(h BatchHeader) bool) error {
	return l.scan(from, false, func(h BatchHeader, _ *Marker) bool { return fn(h) })
}

// ScanProducerBatches is ScanBatches that also decodes the marker of every control batch
// (reading only those batches' bodies): what rebuilding producer and transaction state at
// start needs (Kafka's ProducerStateManager reload).
func (l *Log) ScanProducerBatches(from int64, fn func(h BatchHeader, marker *Marker) bool) error {
	return l.scan(from, true, fn)
}

func (l *Log) scan(from int64, markers bool, fn func(h BatchHeader, marker *Marker) bool) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.usable(); err != nil {
		return err
	}
	from = max(from, l.startOffset())
	if from >= l.leo() {
		return nil
	}
	i := l.segFor(from)
	_, pos, err := l.locate(l.segs[i], from)
	if err != nil {
		return err
	}
	buf := make([]byte, scanChunk)
	for ; i < len(l.segs); i, pos = i+1, 0 {
		sc := newScanner(l.segs[i], pos, buf, false)
		// Bound: the scanner stops at the segment end.
		for {
			h, _, at, err := sc.next(false)
			if err == io.EOF {
				break
			}
			if err != nil {
				return l.errf("scan segment %d: %w", l.segs[i].base, err)
			}
			var m *Marker
			if markers && h.IsControl() {
				body, err := sc.window(at, h.Size())
				if err != nil {
					return l.errf("scan segment %d: control batch at %d: %w", l.segs[i].base, h.BaseOffset, err)
				}
				mk, err := ParseMarker(h, body)
				if err != nil {
					return l.errf("scan segment %d: %w", l.segs[i].base, err)
				}
				m = &mk
			}
			if !fn(h, m) {
				return nil
			}
		}
		buf = sc.buf[:cap(sc.buf)]
	}
	return nil
}

// OffsetForTimestamp finds the first batch whose MaxTimestamp is >= ts and returns its base
// offset and that MaxTimestamp (Kafka's ListOffsets by timestamp, at batch granularity); ok is
// false when no batch is that recent. Segments whose max timestamp is below ts are skipped.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	// Learning a segment's max timestamp writes it into the segment: take the write lock.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return -1, -1, false
	}
	buf := make([]byte, scanChunk)
	for _, seg := range l.segs {
		if err := l.learnMaxTs(seg, buf); err != nil || seg.maxTs < ts {
			if err != nil {
				l.lg.Warn("timestamp lookup: segment unreadable", "segment", seg.base, "err", err)
			}
			continue
		}
		sc := newScanner(seg, 0, buf, false)
		for {
			h, _, _, err := sc.next(false)
			if err != nil {
				break
			}
			if h.MaxTimestamp >= ts {
				return h.BaseOffset, h.MaxTimestamp, true
			}
		}
	}
	return -1, -1, false
}

// learnMaxTs computes seg.maxTs by walking its headers, once. Callers hold mu exclusively.
func (l *Log) learnMaxTs(seg *segment, buf []byte) error {
	if seg.maxTsKnown {
		return nil
	}
	maxTs := int64(-1)
	sc := newScanner(seg, 0, buf, false)
	for {
		h, _, _, err := sc.next(false)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		maxTs = max(maxTs, h.MaxTimestamp)
	}
	seg.maxTs, seg.maxTsKnown = maxTs, true
	return nil
}
