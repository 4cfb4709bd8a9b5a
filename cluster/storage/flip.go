package storage

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
)

// errInvalidAppend marks an Append refused before anything was written
// (the caller's batches, not the disk, were at fault).
var errInvalidAppend = errors.New("invalid append")

// IsLogDirFailure reports whether err, returned by a Log, means the disk
// under it failed: an I/O error (EIO), a full disk (ENOSPC), a read-only
// file system, or a stored batch that does not match its CRC. Kafka turns
// such an IOException into a KafkaStorageException and hands the log
// directory to its LogDirFailureChannel (KIP-112); gregor counts a CRC
// mismatch found on read the same way (DESIGN.md section 2, Disk faults).
// Out-of-range reads, a closed log and a refused append are not failures
// of the disk.
func IsLogDirFailure(err error) bool {
	if err == nil || errors.Is(err, ErrOffsetOutOfRange) || errors.Is(err, ErrClosed) || errors.Is(err, errInvalidAppend) {
		return false
	}
	return errors.Is(err, ErrCorrupt) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EROFS)
}

// IsSegmentFile reports whether name is a partition log's segment file
// (<base, 20 digits>.log): the files the disk-fault nemesis hits
// (internal/fsys.Faulty's Match), not the checkpoints or the controller's
// raft log, so that a fault lands where Kafka's LogDirFailureChannel sees
// it, on a partition's log.
func IsSegmentFile(name string) bool {
	base := filepath.Base(name)
	digits, ok := strings.CutSuffix(base, ".log")
	if !ok || len(digits) != 20 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Flipped is where FlipBit flipped a bit.
type Flipped struct {
	Segment  int64 `json:"segment"`  // the segment's base offset
	Offset   int64 `json:"offset"`   // the base offset of the batch hit
	Position int64 `json:"position"` // the byte's position in the segment file
	Bit      int   `json:"bit"`
}

// FlipBit flips one bit at rest in a batch of the active segment that is
// already in its file (FAST'17's corruption of a stored block: the disk
// returns other bytes than were written), chosen by pick. The bit lies at
// or past the batch's CRC field, so the CRC-32C no longer matches: a read
// refuses the batch (Read) and recovery cuts the log there. Only the
// active segment is hit: it is past the recovery point, so the unclean
// recovery after the broker halts scans it (Kafka's LogLoader scans from
// the recovery point too, and would miss an older segment's flip).
func (l *Log) FlipBit(pick uint64) (Flipped, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return Flipped{}, err
	}
	seg := l.active()
	type at struct{ base, pos, size int64 }
	var batches []at
	sc := newScanner(seg, 0, make([]byte, scanChunk), false)
	// Bound: the scanner advances a whole batch a step and stops at the
	// segment's end; only batches wholly in the file count.
	for {
		h, _, pos, err := sc.next(false)
		if err == io.EOF || err == nil && pos+int64(h.Size()) > seg.flushed {
			break
		}
		if err != nil {
			return Flipped{}, l.errf("flip: %w", err)
		}
		batches = append(batches, at{h.BaseOffset, pos, int64(h.Size())})
	}
	if len(batches) == 0 {
		return Flipped{}, l.errf("flip: no batch in the file of segment %d yet", seg.base)
	}
	b := batches[pick%uint64(len(batches))]
	pos := b.pos + offCRC + int64((pick>>20)%uint64(b.size-offCRC))
	bit := int((pick >> 8) % 8)
	one := make([]byte, 1)
	if _, err := seg.f.ReadAt(one, pos); err != nil {
		return Flipped{}, l.errf("flip: read %d: %w", pos, err)
	}
	one[0] ^= 1 << bit
	if _, err := seg.f.WriteAt(one, pos); err != nil {
		return Flipped{}, l.errf("flip: write %d: %w", pos, err)
	}
	l.lg.Warn("disk fault: bit flipped at rest", "segment", seg.base, "batch", b.base, "position", pos, "bit", bit)
	return Flipped{Segment: seg.base, Offset: b.base, Position: pos, Bit: bit}, nil
}

// String names the flipped bit.
func (f Flipped) String() string {
	return fmt.Sprintf("batch %d of segment %d, byte %d bit %d", f.Offset, f.Segment, f.Position, f.Bit)
}
