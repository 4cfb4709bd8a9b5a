// Package atomicfile is the tree's one way to replace a file whole: a crash,
// a power cut or a full disk leaves the old content or the new, never a mix
// and never half a file. The new content goes to a temporary file in the
// same directory (so the rename cannot cross filesystems), which is fsynced,
// renamed over the target, and the directory is fsynced so that the rename
// itself survives a power cut.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// TmpSuffix ends every temporary file's name: a directory's own recovery
// (cluster/storage) may delete leftovers of a crash by it.
const TmpSuffix = ".tmp"

// Write replaces path with what write writes, made durable before Write
// returns. On an error path keeps its old content (or stays absent) and the
// temporary file is removed. The file gets mode perm.
func Write(path string, perm os.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*"+TmpSuffix)
	if err != nil {
		return err
	}
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		if err = tmp.Sync(); err != nil {
			err = fmt.Errorf("fsync %s: %w", tmp.Name(), err)
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return SyncDir(dir)
}

// WriteFile replaces path with data (Write).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SyncDir makes the renames, creations and removals in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
