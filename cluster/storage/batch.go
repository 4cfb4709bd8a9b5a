package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Record batch v2 header layout (Kafka's DefaultRecordBatch). All integers are big-endian.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// BatchHeaderSize is the size of a v2 batch header, up to and including the record count.
	BatchHeaderSize = 61
	// batchOverhead is what precedes the bytes counted by Length: baseOffset and Length itself.
	batchOverhead = 12
	// minBatchLength is the smallest Length a v2 batch can declare (a header with no records).
	minBatchLength = BatchHeaderSize - batchOverhead
	// MaxBatchLength bounds Length so that Size() fits an int32 and a garbage length read from a
	// torn file cannot make a reader allocate gigabytes.
	MaxBatchLength = math.MaxInt32 - batchOverhead
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every framing, magic and CRC error, so callers can tell corrupt data from
// I/O errors with errors.Is.
var ErrCorrupt = errors.New("corrupt record batch")

// BatchHeader is the fixed part of a v2 record batch; records themselves are never decoded here.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // bytes after the Length field; Invariant (checked by ParseBatchHeader): minBatchLength <= Length <= MaxBatchLength
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32 // CRC-32C over attributes..end of batch
	Attributes           int16
	LastOffsetDelta      int32 // Invariant (checked by checkBatch, under ForEachBatch and recovery): >= 0
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset right after the batch: what LEO becomes once it is appended.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Size is the number of bytes the whole batch takes: 12 + Length.
func (h BatchHeader) Size() int { return batchOverhead + int(h.Length) }

// ParseBatchHeader decodes the header at the start of b. It checks that b holds a whole header and
// that Length is plausible; it does not check magic, CRC, or that b holds the whole batch.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, a v2 batch header needs %d", ErrCorrupt, len(b), BatchHeaderSize)
	}
	be := binary.BigEndian
	h := BatchHeader{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		Length:               int32(be.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(be.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(be.Uint32(b[offNumRecords:])),
	}
	if h.Length < minBatchLength || h.Length > MaxBatchLength {
		return h, fmt.Errorf("%w: batch length %d outside [%d, %d]", ErrCorrupt, h.Length, minBatchLength, MaxBatchLength)
	}
	return h, nil
}

// checkBatch validates everything about one batch whose header parsed: magic, offsets, CRC.
// batch must be exactly h.Size() bytes.
func checkBatch(h BatchHeader, batch []byte) error {
	if h.Magic != 2 {
		return fmt.Errorf("%w: magic %d, only v2 batches are stored", ErrCorrupt, h.Magic)
	}
	if h.LastOffsetDelta < 0 {
		return fmt.Errorf("%w: negative lastOffsetDelta %d", ErrCorrupt, h.LastOffsetDelta)
	}
	if h.BaseOffset < 0 || h.LastOffset() < h.BaseOffset {
		return fmt.Errorf("%w: offsets [%d, %d] out of range", ErrCorrupt, h.BaseOffset, h.LastOffset())
	}
	if got := crc32.Checksum(batch[offAttributes:], castagnoli); got != h.CRC {
		return fmt.Errorf("%w: CRC-32C mismatch: header says %#08x, data gives %#08x", ErrCorrupt, h.CRC, got)
	}
	return nil
}

// ForEachBatch splits records, a concatenation of v2 batches, and calls fn with each header and the
// batch's bytes (a subslice of records: fn must copy what it keeps). It stops at the first error
// from fn, or at the first batch with bad framing, magic, offsets or CRC; a trailing partial batch
// is an error too. The error says at which byte and why.
func ForEachBatch(records []byte, fn func(h BatchHeader, batch []byte) error) error {
	valid, err := forEachValidBatch(records, fn)
	if err != nil {
		return err
	}
	if valid != len(records) {
		return fmt.Errorf("%w: %d trailing bytes at byte %d are not a whole batch", ErrCorrupt, len(records)-valid, valid)
	}
	return nil
}

// ForEachBatchLenient is ForEachBatch except that a trailing partial batch (a fetch response cut at
// its byte limit, as Kafka brokers may send) ends the walk without error. It returns how many bytes
// of whole, valid batches it walked.
func ForEachBatchLenient(records []byte, fn func(h BatchHeader, batch []byte) error) (int, error) {
	return forEachValidBatch(records, fn)
}

// forEachValidBatch walks whole batches; it returns the byte count of the valid prefix. A partial
// batch at the end is not an error (valid < len(records) tells the caller); anything invalid is.
func forEachValidBatch(records []byte, fn func(h BatchHeader, batch []byte) error) (int, error) {
	pos := 0
	// Bound: every iteration advances pos by at least BatchHeaderSize.
	for pos < len(records) {
		rest := records[pos:]
		if len(rest) < BatchHeaderSize {
			return pos, nil
		}
		h, err := ParseBatchHeader(rest)
		if err != nil {
			return pos, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if h.Size() > len(rest) {
			return pos, nil
		}
		batch := rest[:h.Size()]
		if err := checkBatch(h, batch); err != nil {
			return pos, fmt.Errorf("batch at byte %d (base offset %d): %w", pos, h.BaseOffset, err)
		}
		if fn != nil {
			if err := fn(h, batch); err != nil {
				return pos, err
			}
		}
		pos += h.Size()
	}
	return pos, nil
}

// SetBaseOffset rewrites the batch's base offset in place. The field is outside the CRC.
func SetBaseOffset(batch []byte, off int64) {
	binary.BigEndian.PutUint64(batch[offBaseOffset:], uint64(off))
}

// AttrLogAppendTime is the attributes bit of the timestamp type: set, the
// batch's MaxTimestamp is the time the leader appended it.
const AttrLogAppendTime int16 = 0x08

// SetLogAppendTime stamps the batch with the leader's append time, in
// place: the timestamp-type bit and MaxTimestamp rewritten and the CRC
// computed again (Kafka's LogValidator with message.timestamp.type
// LogAppendTime: DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, now)).
func SetLogAppendTime(batch []byte, ms int64) {
	be := binary.BigEndian
	be.PutUint16(batch[offAttributes:], be.Uint16(batch[offAttributes:])|uint16(AttrLogAppendTime))
	be.PutUint64(batch[offMaxTimestamp:], uint64(ms))
	be.PutUint32(batch[offCRC:], crc32.Checksum(batch[offAttributes:], castagnoli))
}

// SetPartitionLeaderEpoch rewrites the batch's leader epoch in place. The field is outside the CRC.
func SetPartitionLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[offLeaderEpoch:], uint32(epoch))
}

// EndOffset is the offset after the last whole batch of records (a Read's result), found by
// walking headers only; -1 when records holds no whole batch.
func EndOffset(records []byte) int64 {
	end := int64(-1)
	// Bound: every step advances by at least one header.
	for len(records) >= BatchHeaderSize {
		h, err := ParseBatchHeader(records)
		if err != nil || h.Size() > len(records) {
			break
		}
		end = h.NextOffset()
		records = records[h.Size():]
	}
	return end
}
