// Package atomicfile is the tree's one way to replace a file whole: a crash,
// a power cut or a full disk leaves the old content or the new, never a mix
// and never half a file. The new content goes to a temporary file in the
// same directory (so the rename cannot cross filesystems), which is fsynced,
// renamed over the target, and the directory is fsynced so that the rename
// itself survives a power cut. It works on any file system of the seam
// (internal/fsys): the host's, or the simulation's in-memory disk.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"gregor/internal/fsys"
)

// TmpSuffix ends every temporary file's name: a directory's own recovery
// (cluster/storage) may delete leftovers of a crash by it.
const TmpSuffix = ".tmp"

// tmpSeq makes concurrent replacements of one path use distinct
// temporary files.
var tmpSeq atomic.Uint64

// Write replaces path with what write writes, made durable before Write
// returns. On an error path keeps its old content (or stays absent) and the
// temporary file is removed. The file gets mode perm.
func Write(path string, perm os.FileMode, write func(io.Writer) error) error {
	return WriteFS(fsys.OS{}, path, perm, write)
}

// WriteFile replaces path with data (Write).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteFileFS(fsys.OS{}, path, data, perm)
}

// WriteFileFS is WriteFile on file system f.
func WriteFileFS(f fsys.FS, path string, data []byte, perm os.FileMode) error {
	return WriteFS(f, path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFS is Write on file system f.
func WriteFS(f fsys.FS, path string, perm os.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"-"+strconv.FormatUint(tmpSeq.Add(1), 10)+TmpSuffix)
	// O_TRUNC, not O_EXCL: a leftover of a crashed process of the same
	// sequence number is overwritten, not in the way.
	h, err := f.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	err = write(h)
	if err == nil {
		if err = h.Sync(); err != nil {
			err = fmt.Errorf("fsync %s: %w", tmp, err)
		}
	}
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.Rename(tmp, path)
	}
	if err != nil {
		f.Remove(tmp)
		return err
	}
	return SyncDirFS(f, dir)
}

// SyncDir makes the renames, creations and removals in dir durable.
func SyncDir(dir string) error { return SyncDirFS(fsys.OS{}, dir) }

// SyncDirFS is SyncDir on file system f.
func SyncDirFS(f fsys.FS, dir string) error {
	d, err := fsys.Open(f, dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
