// Package fsys is the brokers' file system seam: the host's (OS, what every
// runtime but the simulation uses) or an in-memory one (Mem, the
// simulation's, so that a cluster in a testing/synctest bubble makes no
// system call for its data). Only the calls the cluster makes are here.
//
// Mem is the disk, not the page cache: what is written is kept until
// removed, synced or not. The page cache that a power cut empties is
// storage's LazyFS mode (cluster/storage), on top of either file system, so
// a power cut loses the same bytes on both.
package fsys

import (
	"io"
	"io/fs"
	"os"
)

// FS is a file system.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]os.DirEntry, error)
	MkdirAll(path string, perm os.FileMode) error
	Remove(name string) error
	RemoveAll(path string) error
	Rename(oldpath, newpath string) error
	Stat(name string) (os.FileInfo, error)
}

// File is an open file (or directory, for Sync).
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.WriterAt
	io.Seeker
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
}

// Or is f, or OS when f is nil.
func Or(f FS) FS {
	if f == nil {
		return OS{}
	}
	return f
}

// Open opens name read-only.
func Open(f FS, name string) (File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

// Create creates or truncates name for writing.
func Create(f FS, name string) (File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// WriteFile writes data to name, creating or truncating it.
func WriteFile(f FS, name string, data []byte, perm os.FileMode) error {
	h, err := f.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = h.Write(data)
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	return err
}

// OS is the host's file system.
type OS struct{}

// OpenFile implements FS.
func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a nil *os.File in a non-nil File
	}
	return f, nil
}

// ReadFile implements FS.
func (OS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// ReadDir implements FS.
func (OS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// MkdirAll implements FS.
func (OS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }

// Remove implements FS.
func (OS) Remove(name string) error { return os.Remove(name) }

// RemoveAll implements FS.
func (OS) RemoveAll(path string) error { return os.RemoveAll(path) }

// Rename implements FS.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Stat implements FS.
func (OS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }
