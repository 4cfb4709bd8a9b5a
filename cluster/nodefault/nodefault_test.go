package nodefault

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gregor/internal/fsys"
)

// The control file arms the disk and the clock of a node; a flip is asked
// for once per ID, even after a restart (the events file remembers it);
// removing the file heals the node; a malformed file keeps what is armed.
func TestWatchAppliesControl(t *testing.T) {
	dir := t.TempDir()
	s := New(fsys.NewMem(), nil)
	flips := make(chan Flip, 4)
	errs := make(chan error, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Watch(ctx, s, dir, 5*time.Millisecond, func(f Flip) { flips <- f }, func(err error) { errs <- err })
		close(done)
	}()
	defer func() { cancel(); <-done }()
	path := filepath.Join(dir, FileName)
	c := Control{Disk: []fsys.Fault{{Op: fsys.OpWrite, Errno: fsys.ENOSPC}}, SkewMs: 3_600_000, Flip: &Flip{ID: "a", Pick: 7}}
	if err := WriteControl(path, c); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-flips:
		if f.ID != "a" || f.Pick != 7 {
			t.Fatalf("flip %+v", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the flip was never asked for")
	}
	waitFor(t, func() bool { return s.Clock.Skew() == time.Hour })
	if d := s.Clock.Now().Sub(time.Now()); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Fatalf("skewed clock %v ahead, want an hour", d)
	}
	h, err := s.Disk.OpenFile("/x", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write([]byte("x")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on the armed disk: %v", err)
	}
	// The flip recorded: the same control asks for it no more.
	if err := AppendEvent(filepath.Join(dir, EventsName), Event{Kind: EventFlip, ID: "a"}); err != nil {
		t.Fatal(err)
	}
	c.SkewMs = 1000
	if err := WriteControl(path, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.Clock.Skew() == time.Second })
	select {
	case f := <-flips:
		t.Fatalf("flip %s asked for twice", f.ID)
	default:
	}
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-errs:
	case <-time.After(5 * time.Second):
		t.Fatal("a malformed control file was not reported")
	}
	if s.Clock.Skew() != time.Second {
		t.Fatal("a malformed control file changed what is armed")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.Clock.Skew() == 0 })
	if _, err := h.Write([]byte("x")); err != nil {
		t.Fatalf("write after the file went: %v", err)
	}
	if es, err := ReadEvents(filepath.Join(dir, EventsName)); err != nil || len(es) != 1 {
		t.Fatalf("events %v %v", es, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A control out of bounds is refused naming the fix.
func TestControlCheck(t *testing.T) {
	for _, c := range []Control{
		{SkewMs: int64(25 * time.Hour / time.Millisecond)},
		{Flip: &Flip{}},
		{Disk: []fsys.Fault{{Op: "truncate", Errno: fsys.EIO}}},
	} {
		if err := c.Check(); err == nil {
			t.Errorf("%+v accepted", c)
		}
		if err := WriteControl(filepath.Join(t.TempDir(), FileName), c); err == nil {
			t.Errorf("%+v written", c)
		}
	}
}
