package storage

import (
	"encoding/binary"
	"hash/crc32"
	"time"
)

// Batch describes an uncompressed v2 batch to encode: the group coordinator writes its records
// to __consumer_offsets with it, and tests of every package build valid batches with it without a
// producer.
type Batch struct {
	BaseOffset    int64
	LeaderEpoch   int32
	Timestamp     int64 // milliseconds; every record gets it (timestamp delta 0)
	ProducerID    int64 // -1 when not idempotent
	ProducerEpoch int16 // -1 when not idempotent
	BaseSequence  int32 // -1 when not idempotent
	Attributes    int16 // AttrTransactional, AttrControl; never a codec: records are uncompressed
	Keys          [][]byte
	Values        [][]byte // one record per value; Keys, if set, pairs with Values by index
}

// NewBatch builds a valid uncompressed v2 batch holding one record per value, at baseOffset,
// stamped with the current time and no producer id. It panics without values: Kafka has no empty
// produce batches.
func NewBatch(baseOffset int64, epoch int32, values ...[]byte) []byte {
	return Batch{
		BaseOffset: baseOffset, LeaderEpoch: epoch, Timestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Values: values,
	}.Encode()
}

// NewBatchAt is NewBatch with a given timestamp (milliseconds), for retention and ListOffsets
// tests.
func NewBatchAt(baseOffset int64, epoch int32, timestampMs int64, values ...[]byte) []byte {
	return Batch{
		BaseOffset: baseOffset, LeaderEpoch: epoch, Timestamp: timestampMs,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Values: values,
	}.Encode()
}

// Encode lays the batch out as on the wire: header, varint-encoded records, CRC-32C.
func (t Batch) Encode() []byte {
	if len(t.Values) == 0 {
		panic("storage.Batch: a batch needs at least one record")
	}
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(t.Values)*32)
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(t.BaseOffset))
	be.PutUint32(b[offLeaderEpoch:], uint32(t.LeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(t.Attributes&^0x07))
	be.PutUint32(b[offLastOffsetDelta:], uint32(len(t.Values)-1))
	be.PutUint64(b[offFirstTimestamp:], uint64(t.Timestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(t.Timestamp))
	be.PutUint64(b[offProducerID:], uint64(t.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(t.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(t.BaseSequence))
	be.PutUint32(b[offNumRecords:], uint32(len(t.Values)))

	var body []byte
	for i, v := range t.Values {
		var key []byte
		if i < len(t.Keys) {
			key = t.Keys[i]
		}
		body = body[:0]
		body = append(body, 0)                     // record attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = appendVarintBytes(body, key)
		body = appendVarintBytes(body, v)
		body = binary.AppendVarint(body, 0) // header count
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	be.PutUint32(b[offLength:], uint32(len(b)-batchOverhead))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// appendVarintBytes writes Kafka's nullable varint-length bytes: length -1 for nil.
func appendVarintBytes(dst, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(v)))
	return append(dst, v...)
}
