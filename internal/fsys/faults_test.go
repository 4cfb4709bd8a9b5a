package fsys

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFaultyInjects: an armed fault fails exactly the operations it names,
// on the files Match selects, as many times as it says, on OS and on Mem;
// disarmed, the file works again.
func TestFaultyInjects(t *testing.T) {
	for name, inner := range map[string]FS{"os": OS{}, "mem": NewMem()} {
		t.Run(name, func(t *testing.T) {
			root := "/sim"
			if name == "os" {
				root = t.TempDir()
			}
			if err := inner.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			f := NewFaulty(inner, func(n string) bool { return strings.HasSuffix(n, ".log") })
			open := func(n string) File {
				h, err := f.OpenFile(filepath.Join(root, n), os.O_RDWR|os.O_CREATE, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { h.Close() })
				return h
			}
			seg, other := open("0.log"), open("cp")
			if err := f.Set([]Fault{{Op: OpWrite, Errno: EIO, Count: 1}, {Op: OpSync, Errno: EIO, Count: 2}}); err != nil {
				t.Fatal(err)
			}
			if _, err := other.WriteAt([]byte("x"), 0); err != nil {
				t.Fatalf("an unmatched file failed: %v", err)
			}
			if _, err := seg.WriteAt([]byte("abc"), 0); !errors.Is(err, syscall.EIO) {
				t.Fatalf("first write: %v, want EIO", err)
			}
			if _, err := seg.WriteAt([]byte("abc"), 0); err != nil {
				t.Fatalf("second write (count 1 spent): %v", err)
			}
			for i := range 2 {
				if err := seg.Sync(); !errors.Is(err, syscall.EIO) {
					t.Fatalf("fsync %d: %v, want EIO", i, err)
				}
			}
			if err := seg.Sync(); err != nil {
				t.Fatalf("third fsync: %v", err)
			}
			if f.Injected() != 3 {
				t.Fatalf("injected %d, want 3", f.Injected())
			}
			// A full disk: every write fails until disarmed; reads work.
			if err := f.Set([]Fault{{Op: OpWrite, Errno: ENOSPC}}); err != nil {
				t.Fatal(err)
			}
			for range 5 {
				if _, err := seg.Write([]byte("z")); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("write on a full disk: %v, want ENOSPC", err)
				}
			}
			buf := make([]byte, 3)
			if _, err := seg.ReadAt(buf, 0); err != nil || string(buf) != "abc" {
				t.Fatalf("read on a full disk: %q %v", buf, err)
			}
			if err := f.Set([]Fault{{Op: OpRead, Errno: EIO, Count: 1}}); err != nil {
				t.Fatal(err)
			}
			if _, err := seg.ReadAt(buf, 0); !errors.Is(err, syscall.EIO) {
				t.Fatalf("read: %v, want EIO", err)
			}
			if err := f.Set(nil); err != nil {
				t.Fatal(err)
			}
			if _, err := seg.WriteAt([]byte("d"), 3); err != nil {
				t.Fatalf("write after disarm: %v", err)
			}
		})
	}
}

// TestFaultCheck: a malformed fault is refused naming the fix, and Set
// keeps what was armed.
func TestFaultCheck(t *testing.T) {
	f := NewFaulty(NewMem(), nil)
	if err := f.Set([]Fault{{Op: OpRead, Errno: EIO, Count: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Fault{{Op: "truncate", Errno: EIO}, {Op: OpWrite, Errno: "EPERM"}, {Op: OpWrite, Errno: EIO, Count: -1}} {
		if err := f.Set([]Fault{bad}); err == nil || !strings.Contains(err.Error(), "choose") && !strings.Contains(err.Error(), "want") {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	if !f.armed.Load() || len(f.faults) != 1 {
		t.Fatalf("a refused Set changed the armed faults: %+v", f.faults)
	}
}
