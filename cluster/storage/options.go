package storage

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gregor/internal/fsys"
)

// FsyncMode says when appended data is fsynced.
type FsyncMode int

const (
	// FsyncNever relies on the page cache and replication (Kafka's default). Segments are still
	// fsynced when they are rolled, on Sync and on Close.
	FsyncNever FsyncMode = iota
	// FsyncEveryN fsyncs once N records were appended since the last fsync.
	FsyncEveryN
	// FsyncAlways fsyncs every Append before it returns.
	FsyncAlways
)

// FsyncPolicy is a FsyncMode with its parameter.
type FsyncPolicy struct {
	Mode FsyncMode
	N    int // records between fsyncs for FsyncEveryN; Invariant (checked by Options.withDefaults): N >= 1 when Mode == FsyncEveryN
}

// String renders the policy in the form ParseFsyncPolicy accepts.
func (p FsyncPolicy) String() string {
	switch p.Mode {
	case FsyncAlways:
		return "always"
	case FsyncEveryN:
		return "every:" + strconv.Itoa(p.N)
	default:
		return "never"
	}
}

// ParseFsyncPolicy accepts "never", "always" and "every:N" with N >= 1 records.
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	const forms = `accepted forms: "never", "always", "every:N" (N >= 1 records between fsyncs)`
	switch t := strings.ToLower(strings.TrimSpace(s)); {
	case t == "never" || t == "":
		return FsyncPolicy{Mode: FsyncNever}, nil
	case t == "always":
		return FsyncPolicy{Mode: FsyncAlways}, nil
	case strings.HasPrefix(t, "every:"):
		n, err := strconv.Atoi(strings.TrimPrefix(t, "every:"))
		if err != nil || n < 1 {
			return FsyncPolicy{}, fmt.Errorf("fsync policy %q: bad record count; %s", s, forms)
		}
		return FsyncPolicy{Mode: FsyncEveryN, N: n}, nil
	default:
		return FsyncPolicy{}, fmt.Errorf("fsync policy %q not understood; %s", s, forms)
	}
}

// Defaults and hard limits of Options.
const (
	DefaultSegmentBytes       = 64 << 20
	DefaultIndexIntervalBytes = 4096
	DefaultWritebackDelay     = 5 * time.Second
	DefaultLazyMaxPending     = 64 << 20
	// maxSegmentBytes keeps every file position of a segment below 2^31, so index positions
	// (uint32) never overflow even when one Append overshoots the limit.
	maxSegmentBytes = 1 << 30
	// maxAppendBytes bounds one Append for the same reason.
	maxAppendBytes = 1 << 30
)

// Options configure a Log. The zero value is usable: Open fills in the defaults below.
type Options struct {
	SegmentBytes       int64 // roll the active segment past this size (default 64 MiB, at most 1 GiB)
	IndexIntervalBytes int   // sparse offset index entry every N bytes (default 4096)
	RetentionBytes     int64 // < 0: unlimited; delete oldest closed segments beyond this total size. 0 means unlimited too.
	RetentionMs        int64 // < 0: unlimited; delete closed segments whose max timestamp is older. 0 means unlimited too.
	Fsync              FsyncPolicy

	// LazyFS keeps bytes not yet fsynced in this process's memory, as a page cache that a power
	// cut empties (see the package comment).
	LazyFS bool
	// WritebackDelay: in LazyFS mode, unsynced data is written back (made durable) once this old,
	// like the kernel's dirty_expire. 0 (or negative) = never by time. Open does not fill it in:
	// callers wanting the kernel-like default pass DefaultWritebackDelay (5s).
	WritebackDelay time.Duration
	// LazyMaxPendingBytes bounds the unsynced bytes held in LazyFS mode; past it the oldest are
	// written back at once, like the kernel's dirty_bytes threshold (default 64 MiB).
	LazyMaxPendingBytes int

	Logger *slog.Logger // may be nil

	// Rolled, when set, is called after a roll with the new segment's base,
	// the log's lock held (the broker's segment-rolled fault point).
	Rolled func(base int64)

	// FS holds the log's files (nil: the host's; the simulation's is fsys.Mem).
	FS fsys.FS

	// now is the clock for LazyFS ages (tests may replace it).
	now func() time.Time
}

func (o Options) withDefaults() (Options, error) {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SegmentBytes < BatchHeaderSize || o.SegmentBytes > maxSegmentBytes {
		return o, fmt.Errorf("storage: SegmentBytes %d outside [%d, %d]", o.SegmentBytes, BatchHeaderSize, maxSegmentBytes)
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.IndexIntervalBytes < 1 {
		return o, fmt.Errorf("storage: IndexIntervalBytes %d must be positive", o.IndexIntervalBytes)
	}
	if o.Fsync.Mode == FsyncEveryN && o.Fsync.N < 1 {
		return o, fmt.Errorf("storage: fsync policy every:%d needs N >= 1", o.Fsync.N)
	}
	if o.Fsync.Mode < FsyncNever || o.Fsync.Mode > FsyncAlways {
		return o, fmt.Errorf("storage: unknown fsync mode %d", o.Fsync.Mode)
	}
	if o.LazyMaxPendingBytes <= 0 {
		o.LazyMaxPendingBytes = DefaultLazyMaxPending
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.FS = fsys.Or(o.FS)
	if o.now == nil {
		o.now = time.Now
	}
	return o, nil
}
