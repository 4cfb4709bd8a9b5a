package fsys

import (
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// Disk faults below the storage layer, the classes of Trogdor's Kibosh
// and of the FAST'17 study "Redundancy Does Not Imply Fault Tolerance":
// the next write, fsync or read of a file returns EIO, or the disk is full
// (ENOSPC on every write until disarmed). Faulty wraps any FS (the host's
// or Mem), so the process and simulation runtimes inject the same faults.
// A flipped bit at rest is not an error the file system returns: storage
// makes it (storage.Log.FlipBit), through the same FS.

// Op is the file operation a Fault hits.
type Op string

const (
	OpWrite Op = "write" // Write, WriteAt
	OpSync  Op = "fsync" // Sync
	OpRead  Op = "read"  // Read, ReadAt
)

// Errno names the error a Fault returns.
type Errno string

const (
	EIO    Errno = "EIO"    // an I/O error: a bad sector, a failed device
	ENOSPC Errno = "ENOSPC" // the disk is full: a write cannot allocate
)

func (e Errno) errno() syscall.Errno {
	if e == ENOSPC {
		return syscall.ENOSPC
	}
	return syscall.EIO
}

// Fault is one armed fault: the next Count operations Op on a matching
// file fail with Errno; Count 0 fails them all until the fault is disarmed
// (a full disk).
type Fault struct {
	Op    Op    `json:"op"`
	Errno Errno `json:"errno"`
	Count int   `json:"count,omitempty"`
}

// MaxFaultCount bounds Fault.Count.
const MaxFaultCount = 1 << 20

// Check says what is wrong with f, naming the fix.
func (f Fault) Check() error {
	switch f.Op {
	case OpWrite, OpSync, OpRead:
	default:
		return fmt.Errorf("disk fault op %q: choose write, fsync or read", f.Op)
	}
	if f.Errno != EIO && f.Errno != ENOSPC {
		return fmt.Errorf("disk fault errno %q: choose EIO or ENOSPC", f.Errno)
	}
	if f.Count < 0 || f.Count > MaxFaultCount {
		return fmt.Errorf("disk fault count %d: want 0 (until disarmed) to %d", f.Count, MaxFaultCount)
	}
	return nil
}

// Faulty is an FS whose files matching Match fail as the armed Faults say.
// Unarmed it costs one atomic load per operation. Its lock is held only
// while a fault is counted, never across the wrapped FS's calls.
type Faulty struct {
	FS
	// Match selects the files faults hit (nil: every file).
	Match func(name string) bool

	armed    atomic.Bool
	mu       sync.Mutex
	faults   []armedFault
	injected atomic.Int64
}

type armedFault struct {
	Fault
	left int // faults still to inject; -1: until disarmed
}

// NewFaulty wraps inner; match selects the files faults hit (nil: all).
func NewFaulty(inner FS, match func(name string) bool) *Faulty {
	return &Faulty{FS: Or(inner), Match: match}
}

// Set replaces the armed faults with faults (none: disarm). Every fault is
// checked first; on an error nothing changes.
func (f *Faulty) Set(faults []Fault) error {
	var next []armedFault
	for _, x := range faults {
		if err := x.Check(); err != nil {
			return err
		}
		left := x.Count
		if left == 0 {
			left = -1
		}
		next = append(next, armedFault{Fault: x, left: left})
	}
	f.mu.Lock()
	f.faults = next
	f.armed.Store(len(next) > 0)
	f.mu.Unlock()
	return nil
}

// Armed reports whether any fault is armed.
func (f *Faulty) Armed() bool { return f.armed.Load() }

// Injected counts the errors returned so far.
func (f *Faulty) Injected() int64 { return f.injected.Load() }

// hit returns the error op on name must fail with, or nil.
func (f *Faulty) hit(op Op, name string) error {
	if !f.armed.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.faults {
		x := &f.faults[i]
		if x.Op != op || x.left == 0 {
			continue
		}
		if x.left > 0 {
			x.left--
		}
		f.injected.Add(1)
		return &fs.PathError{Op: string(op), Path: name, Err: x.Errno.errno()}
	}
	return nil
}

// OpenFile implements FS: a matching file's operations go through the
// armed faults.
func (f *Faulty) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	h, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || (f.Match != nil && !f.Match(name)) {
		return h, err
	}
	return &faultyFile{File: h, f: f, name: name}, nil
}

type faultyFile struct {
	File
	f    *Faulty
	name string
}

func (h *faultyFile) Write(p []byte) (int, error) {
	if err := h.f.hit(OpWrite, h.name); err != nil {
		return 0, err
	}
	return h.File.Write(p)
}

func (h *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if err := h.f.hit(OpWrite, h.name); err != nil {
		return 0, err
	}
	return h.File.WriteAt(p, off)
}

func (h *faultyFile) Read(p []byte) (int, error) {
	if err := h.f.hit(OpRead, h.name); err != nil {
		return 0, err
	}
	return h.File.Read(p)
}

func (h *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if err := h.f.hit(OpRead, h.name); err != nil {
		return 0, err
	}
	return h.File.ReadAt(p, off)
}

func (h *faultyFile) Sync() error {
	if err := h.f.hit(OpSync, h.name); err != nil {
		return err
	}
	return h.File.Sync()
}
