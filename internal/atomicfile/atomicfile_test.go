package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists dir's names, to see that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// A write replaces the content whole (a longer file is not left with the
// old tail), with the mode asked, and leaves only the file behind.
func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cell.json")
	if err := WriteFile(path, []byte("a much longer first content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("short\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "short\n" {
		t.Fatalf("content %q (%v), want %q", b, err, "short\n")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v (%v), want 0640", fi.Mode().Perm(), err)
	}
	if es := entries(t, dir); len(es) != 1 || es[0] != "cell.json" {
		t.Fatalf("directory holds %v, want only cell.json", es)
	}
}

// A write that fails part-way leaves the old content and no temporary file;
// on a new path it leaves nothing.
func TestWriteErrorKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	half := func(w io.Writer) error {
		io.WriteString(w, "half of the ne")
		return boom
	}
	if err := Write(path, 0o644, half); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the writer's", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("content %q after a failed write, want the old one", b)
	}
	fresh := filepath.Join(dir, "fresh")
	if err := Write(fresh, 0o644, half); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the writer's", err)
	}
	if es := entries(t, dir); len(es) != 1 || es[0] != "state" {
		t.Fatalf("directory holds %v after failed writes, want only state", es)
	}
}

// A directory that does not exist is an error, not a file elsewhere.
func TestWriteMissingDir(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "no", "such"), []byte("x"), 0o644); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
	if es := entries(t, dir); len(es) != 0 {
		t.Fatalf("directory holds %v, want nothing", es)
	}
}

// The temporary file's name ends in TmpSuffix (cluster/storage's recovery
// removes leftovers by it) and is hidden in the target's directory.
func TestTempName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint")
	err := Write(path, 0o644, func(io.Writer) error {
		es := entries(t, dir)
		if len(es) != 1 || !strings.HasPrefix(es[0], ".checkpoint-") || !strings.HasSuffix(es[0], TmpSuffix) {
			t.Errorf("while writing the directory holds %v, want one .checkpoint-*%s", es, TmpSuffix)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
