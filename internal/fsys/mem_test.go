package fsys

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestMemBehavesAsOS runs the same file operations on OS and on Mem and
// compares what they leave: the calls the cluster makes mean the same on both.
func TestMemBehavesAsOS(t *testing.T) {
	for name, f := range map[string]FS{"os": OS{}, "mem": NewMem()} {
		t.Run(name, func(t *testing.T) {
			root := "/sim"
			if name == "os" {
				root = t.TempDir()
			}
			dir := filepath.Join(root, "p-0")
			if err := f.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := f.OpenFile(filepath.Join(dir, "missing"), os.O_RDWR, 0); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("open missing: %v", err)
			}
			h, err := f.OpenFile(filepath.Join(dir, "a.log"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.WriteAt([]byte("hello world"), 0); err != nil {
				t.Fatal(err)
			}
			if err := h.Truncate(5); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Seek(0, io.SeekEnd); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Write([]byte("!")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 10)
			n, err := h.ReadAt(buf, 0)
			if string(buf[:n]) != "hello!" || err != io.EOF {
				t.Fatalf("read back %q, %v", buf[:n], err)
			}
			if st, err := h.Stat(); err != nil || st.Size() != 6 {
				t.Fatalf("stat %v, %v", st, err)
			}
			if err := errors.Join(h.Sync(), h.Close()); err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(f, filepath.Join(dir, "cp.tmp"), []byte("7\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := f.Rename(filepath.Join(dir, "cp.tmp"), filepath.Join(dir, "cp")); err != nil {
				t.Fatal(err)
			}
			if b, err := f.ReadFile(filepath.Join(dir, "cp")); err != nil || string(b) != "7\n" {
				t.Fatalf("renamed file %q, %v", b, err)
			}
			d, err := Open(f, dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(d.Sync(), d.Close()); err != nil {
				t.Fatalf("dir fsync: %v", err)
			}
			ents, err := f.ReadDir(dir)
			if err != nil || len(ents) != 2 || ents[0].Name() != "a.log" || ents[1].Name() != "cp" {
				t.Fatalf("readdir %v, %v", ents, err)
			}
			if err := f.Remove(filepath.Join(dir, "a.log")); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Stat(filepath.Join(dir, "a.log")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("stat removed: %v", err)
			}
			if err := f.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := f.ReadDir(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("readdir removed dir: %v", err)
			}
		})
	}
}
