package storage

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Batch attribute bits (Kafka's DefaultRecordBatch): a transactional batch belongs to the
// producer's ongoing transaction; a control batch holds one COMMIT or ABORT marker (KIP-98).
const (
	AttrTransactional int16 = 0x10
	AttrControl       int16 = 0x20
)

// IsTransactional reports whether the batch is part of a transaction.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports whether the batch is a control batch (a transaction marker).
func (h BatchHeader) IsControl() bool { return h.Attributes&AttrControl != 0 }

// Control record types (Kafka's ControlRecordType).
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// Marker is an end-transaction marker: Kafka's EndTransactionMarker, the one record of a control
// batch. Its key is (version 0, type); its value (version 0, coordinator epoch).
type Marker struct {
	Commit           bool
	CoordinatorEpoch int32
}

func (m Marker) String() string {
	if m.Commit {
		return "COMMIT"
	}
	return "ABORT"
}

// EncodeMarker builds the control batch a partition leader appends for a WriteTxnMarkers entry:
// transactional and control, the producer's id and epoch, no sequence (Kafka's
// MemoryRecords.withEndTransactionMarker). Offset and leader epoch are assigned at append.
func EncodeMarker(producerID int64, producerEpoch int16, m Marker, now time.Time) []byte {
	typ := controlAbort
	if m.Commit {
		typ = controlCommit
	}
	key := binary.BigEndian.AppendUint16(make([]byte, 2, 4), uint16(typ)) // version 0, type
	val := binary.BigEndian.AppendUint32(make([]byte, 2, 6), uint32(m.CoordinatorEpoch))
	return Batch{
		Timestamp: now.UnixMilli(), ProducerID: producerID, ProducerEpoch: producerEpoch, BaseSequence: -1,
		Attributes: AttrTransactional | AttrControl, Keys: [][]byte{key}, Values: [][]byte{val},
	}.Encode()
}

// ParseMarker decodes the marker of a whole control batch (control batches are never
// compressed). An empty control batch is an error: Kafka's cleaner leaves those, we never do.
func ParseMarker(h BatchHeader, batch []byte) (Marker, error) {
	if !h.IsControl() {
		return Marker{}, fmt.Errorf("%w: batch at %d is not a control batch", ErrCorrupt, h.BaseOffset)
	}
	if h.Attributes&0x07 != 0 || h.NumRecords < 1 || len(batch) <= BatchHeaderSize {
		return Marker{}, fmt.Errorf("%w: control batch at %d: compressed or empty", ErrCorrupt, h.BaseOffset)
	}
	r := batch[BatchHeaderSize:]
	var ok bool
	next := func() int64 {
		v, n := binary.Varint(r)
		if n <= 0 {
			ok = false
			return 0
		}
		r = r[n:]
		return v
	}
	ok = true
	next() // record length
	if len(r) < 1 {
		return Marker{}, fmt.Errorf("%w: control batch at %d: short record", ErrCorrupt, h.BaseOffset)
	}
	r = r[1:] // record attributes
	next()    // timestamp delta
	next()    // offset delta
	klen := next()
	if !ok || klen < 4 || int64(len(r)) < klen {
		return Marker{}, fmt.Errorf("%w: control batch at %d: bad key", ErrCorrupt, h.BaseOffset)
	}
	typ := int16(binary.BigEndian.Uint16(r[2:4]))
	r = r[klen:]
	vlen := next()
	if !ok || vlen < 6 || int64(len(r)) < vlen {
		return Marker{}, fmt.Errorf("%w: control batch at %d: bad value", ErrCorrupt, h.BaseOffset)
	}
	m := Marker{CoordinatorEpoch: int32(binary.BigEndian.Uint32(r[2:6]))}
	switch typ {
	case controlCommit:
		m.Commit = true
	case controlAbort:
	default:
		return Marker{}, fmt.Errorf("%w: control batch at %d: record type %d is no transaction marker", ErrCorrupt, h.BaseOffset, typ)
	}
	return m, nil
}
