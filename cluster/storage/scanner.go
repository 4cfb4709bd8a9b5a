package storage

import (
	"fmt"
	"io"
	"sync"

	"gregor/cluster/invariant"
)

// errTorn marks a batch cut short by the end of the data: the tail a crash leaves.
var errTorn = fmt.Errorf("%w: torn batch", ErrCorrupt)

// scanner walks the batches of a segment from a position, reading through a window buffer so a
// walk costs few ReadAt calls. It never reads past end.
type scanner struct {
	seg *segment
	pos int64 // position of the next batch
	end int64 // Invariant (checked by next when checks are on): pos <= end <= seg.size
	// buf[:n] holds segment bytes [winPos, winPos+n). Its capacity is the read chunk; it grows
	// only to hold one batch larger than the chunk, which end bounds.
	buf    []byte
	winPos int64
	n      int
	verify bool // check magic, offsets and CRC of each batch (reads whole batches)
}

func newScanner(seg *segment, from int64, buf []byte, verify bool) *scanner {
	return &scanner{seg: seg, pos: from, end: seg.size, buf: buf[:0], verify: verify}
}

// window returns segment bytes [pos, pos+n), refilling the buffer when they are not in it.
func (s *scanner) window(pos int64, n int) ([]byte, error) {
	if pos >= s.winPos && pos+int64(n) <= s.winPos+int64(s.n) {
		off := int(pos - s.winPos)
		return s.buf[off : off+n], nil
	}
	want := max(n, cap(s.buf))
	if rest := s.end - pos; int64(want) > rest {
		want = int(rest)
	}
	if want > cap(s.buf) {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	m, err := s.seg.readAt(s.buf, pos)
	s.winPos, s.n = pos, m
	if err != nil && err != io.EOF {
		return nil, err
	}
	if m < n {
		return nil, fmt.Errorf("%w: %d bytes at %d, wanted %d", errTorn, m, pos, n)
	}
	return s.buf[:n], nil
}

// next returns the batch at the scan position and its position. batch is nil unless withBody or
// verify; it is valid until the next call. At the end of the data it returns io.EOF; a batch cut
// by the end returns an error wrapping errTorn; a bad one an error wrapping ErrCorrupt.
func (s *scanner) next(withBody bool) (h BatchHeader, batch []byte, pos int64, err error) {
	pos = s.pos
	if invariant.On() && (pos > s.end || s.end > s.seg.size) {
		// Readers hold the Log's lock shared, so nothing may shrink the segment mid-scan.
		invariant.Must("storage scanner "+s.seg.logPath, fmt.Errorf("position %d, end %d, segment size %d", pos, s.end, s.seg.size))
	}
	if pos >= s.end {
		return h, nil, pos, io.EOF
	}
	if s.end-pos < BatchHeaderSize {
		return h, nil, pos, fmt.Errorf("%w: %d bytes at position %d, a header needs %d", errTorn, s.end-pos, pos, BatchHeaderSize)
	}
	hdr, err := s.window(pos, BatchHeaderSize)
	if err != nil {
		return h, nil, pos, err
	}
	if h, err = ParseBatchHeader(hdr); err != nil {
		return h, nil, pos, fmt.Errorf("position %d: %w", pos, err)
	}
	size := int64(h.Size())
	if pos+size > s.end {
		return h, nil, pos, fmt.Errorf("%w: batch at position %d (base offset %d) needs %d bytes, %d remain",
			errTorn, pos, h.BaseOffset, size, s.end-pos)
	}
	if withBody || s.verify {
		if batch, err = s.window(pos, int(size)); err != nil {
			return h, nil, pos, err
		}
		if s.verify {
			if err := checkBatch(h, batch); err != nil {
				return h, nil, pos, fmt.Errorf("position %d (base offset %d): %w", pos, h.BaseOffset, err)
			}
		}
	}
	s.pos = pos + size
	return h, batch, pos, nil
}

// Scan buffers: big for whole-segment walks, small for locating an offset from an index entry.
const (
	scanChunk   = 256 << 10
	locateChunk = 8 << 10
)

var locatePool = sync.Pool{New: func() any { b := make([]byte, locateChunk); return &b }}
