// Package nodefault holds a node's own disk and clock faults, which a
// process signal cannot make (issue 29): the disk under its partition logs
// (internal/fsys.Faulty: EIO on the next write, fsync or read, ENOSPC on
// every write), a bit flipped at rest in a stored batch
// (storage.Log.FlipBit), and its wall clock skewed by D. The harness arms
// them through the runtime's control channel: the process runtime writes
// the node's control file (Control, FileName), which the broker polls
// (Watch); the simulation sets the node's State directly.
package nodefault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gregor/internal/atomicfile"
	"gregor/internal/fsys"
	"gregor/internal/jsonl"
)

// FileName is the control file in a broker's data directory, replaced
// whole by the harness (WriteControl) and polled by the broker, like
// faultnet's rules and the fault points' control file.
const FileName = "nodefaults.json"

// EventsName is the events file beside it: one JSON line (Event) per
// flip made and per log-directory failure, appended by the broker.
const EventsName = "nodefaults.events.jsonl"

// MaxSkew bounds a clock skew either way.
const MaxSkew = 24 * time.Hour

// Control is what the harness arms on a node.
type Control struct {
	// Disk are the faults of the disk under the partition logs (none:
	// a healthy disk).
	Disk []fsys.Fault `json:"disk,omitempty"`
	// Flip, when set, asks for one bit flipped at rest; the broker makes
	// each ID's flip once, across restarts (its event says so).
	Flip *Flip `json:"flip,omitempty"`
	// SkewMs is the wall clock's offset from the host's, in milliseconds.
	SkewMs int64 `json:"skew_ms,omitempty"`
}

// Flip names one bit flip: Pick chooses the partition, the batch and the
// bit (drawn from the run's seed).
type Flip struct {
	ID   string `json:"id"`
	Pick uint64 `json:"pick"`
}

// Check says what is wrong with c, naming the fix.
func (c Control) Check() error {
	for _, f := range c.Disk {
		if err := f.Check(); err != nil {
			return err
		}
	}
	if c.Flip != nil && c.Flip.ID == "" {
		return errors.New("node faults: a flip needs an id")
	}
	if d := time.Duration(c.SkewMs) * time.Millisecond; d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("node faults: clock skew %v outside +-%v", d, MaxSkew)
	}
	return nil
}

// Event kinds.
const (
	EventFlip          = "flip"           // a bit was flipped (Topic, Partition, Flipped...)
	EventFlipFailed    = "flip-failed"    // a flip could not be made (Error)
	EventLogDirFailure = "log-dir-failed" // the log directory went offline: the broker halts (Error)
)

// Event is one line of the events file.
type Event struct {
	Time      int64  `json:"time"` // Unix nanoseconds, the host's clock
	Kind      string `json:"kind"`
	ID        string `json:"id,omitempty"` // the flip's
	Node      int32  `json:"node"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset,omitempty"` // the flipped batch's base offset
	Position  int64  `json:"position,omitempty"`
	Bit       int    `json:"bit,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Clock is a node's wall clock: the host's, offset by the armed skew. Its
// readings keep their monotonic part shifted by the same offset, so a
// change of skew is a jump both ways of measuring (as a stepped NTP clock
// is to Kafka's System.currentTimeMillis, which Kafka's wall-clock rules
// read). Timers (time.AfterFunc, tickers) are not skewed: Kafka's are
// monotonic (System.nanoTime, the timer wheel).
type Clock struct{ skew atomic.Int64 }

// Now is the skewed wall clock.
func (c *Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return time.Now().Add(time.Duration(c.skew.Load()))
}

// Skew is the offset in force.
func (c *Clock) Skew() time.Duration { return time.Duration(c.skew.Load()) }

// SetSkew sets the offset.
func (c *Clock) SetSkew(d time.Duration) { c.skew.Store(int64(d)) }

// State is one node's disk and clock: it outlives the node's restarts in
// the simulation (as the control file does in the process runtime).
type State struct {
	Disk  *fsys.Faulty
	Clock *Clock

	mu     sync.Mutex // held only while events is copied
	events []Event
}

// MaxEvents bounds the events a State keeps.
const MaxEvents = 10000

// Record keeps e (the simulation's events file); past MaxEvents the oldest
// go.
func (s *State) Record(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) >= MaxEvents {
		s.events = s.events[1:]
	}
	s.events = append(s.events, e)
}

// Events are the events recorded so far, in order.
func (s *State) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// New is a healthy disk over inner whose faults hit the files match
// selects (the partition logs' segments), and an unskewed clock.
func New(inner fsys.FS, match func(string) bool) *State {
	return &State{Disk: fsys.NewFaulty(inner, match), Clock: &Clock{}}
}

// Apply arms c's disk faults and skew (not its flip, which the broker
// makes).
func (s *State) Apply(c Control) error {
	if err := c.Check(); err != nil {
		return err
	}
	if err := s.Disk.Set(c.Disk); err != nil {
		return err
	}
	s.Clock.SetSkew(time.Duration(c.SkewMs) * time.Millisecond)
	return nil
}

// WriteControl replaces a node's control file whole (internal/atomicfile).
func WriteControl(path string, c Control) error {
	b, err := EncodeControl(c)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// EncodeControl checks c and returns the control file's contents, for a
// runtime that puts the file in place itself (the docker runtime copies
// it into the container).
func EncodeControl(c Control) ([]byte, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// AppendEvent appends e to the events file at path in one write
// (internal/jsonl): a halt right after leaves it in the page cache.
func AppendEvent(path string, e Event) error { return jsonl.Append(path, e) }

// ReadEvents reads an events file; a missing file has none, a torn last
// line is skipped.
func ReadEvents(path string) ([]Event, error) { return jsonl.Read[Event](path) }

// ParseEvents reads an events file's contents, as ReadEvents.
func ParseEvents(b []byte) ([]Event, error) { return jsonl.Parse[Event](b) }

// Watch applies dir's control file to s, polled every interval until ctx
// ends, and calls flip for each flip ID not yet in the events file. A
// missing file is a healthy node; a malformed one keeps what is armed and
// calls onErr.
func Watch(ctx context.Context, s *State, dir string, interval time.Duration, flip func(Flip), onErr func(error)) {
	path, events := filepath.Join(dir, FileName), filepath.Join(dir, EventsName)
	var last []byte
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if last != nil {
				_ = s.Apply(Control{})
			}
			last = nil
		case err != nil:
			onErr(err)
		case !bytes.Equal(b, last):
			var c Control
			if err := json.Unmarshal(b, &c); err != nil {
				onErr(fmt.Errorf("%s: %w", path, err))
				break
			}
			if err := s.Apply(c); err != nil {
				onErr(fmt.Errorf("%s: %w", path, err))
				break
			}
			last = b
			if c.Flip != nil && !flipped(events, c.Flip.ID, onErr) {
				flip(*c.Flip)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// flipped reports whether the events file records flip id (made or
// failed): a restarted broker does not flip again.
func flipped(events, id string, onErr func(error)) bool {
	es, err := ReadEvents(events)
	if err != nil {
		onErr(err)
	}
	for _, e := range es {
		if e.ID == id && (e.Kind == EventFlip || e.Kind == EventFlipFailed) {
			return true
		}
	}
	return false
}
