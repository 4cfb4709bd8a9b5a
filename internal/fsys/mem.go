package fsys

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Mem is an in-memory file system: a tree of directories and files keyed by
// clean path. Its locks are held only while bytes are copied, never across
// a wait, so it is safe in a testing/synctest bubble. Every node of a
// simulation may share one Mem: their data directories differ.
type Mem struct {
	mu    sync.Mutex
	files map[string]*memData
	dirs  map[string]bool
}

// NewMem returns an empty file system holding only "/".
func NewMem() *Mem { return &Mem{files: map[string]*memData{}, dirs: map[string]bool{"/": true}} }

type memData struct {
	mu   sync.Mutex
	data []byte
	mod  time.Time
}

func clean(name string) string { return filepath.Clean("/" + name) }

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// OpenFile implements FS.
func (m *Mem) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	p := clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[p] {
		return &memHandle{m: m, name: p, dir: true}, nil
	}
	d := m.files[p]
	switch {
	case d == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case d == nil:
		if !m.dirs[filepath.Dir(p)] {
			return nil, pathErr("open", name, fs.ErrNotExist)
		}
		d = &memData{mod: time.Now()}
		m.files[p] = d
	case flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	}
	if flag&os.O_TRUNC != 0 {
		d.mu.Lock()
		d.data = nil
		d.mu.Unlock()
	}
	return &memHandle{m: m, name: p, d: d, append: flag&os.O_APPEND != 0}, nil
}

// ReadFile implements FS.
func (m *Mem) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	d := m.files[clean(name)]
	m.mu.Unlock()
	if d == nil {
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.data), nil
}

// ReadDir implements FS.
func (m *Mem) ReadDir(name string) ([]os.DirEntry, error) {
	p := clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[p] {
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	var out []os.DirEntry
	for f, d := range m.files {
		if filepath.Dir(f) == p {
			d.mu.Lock()
			out = append(out, fs.FileInfoToDirEntry(memInfo{name: filepath.Base(f), size: int64(len(d.data)), mod: d.mod}))
			d.mu.Unlock()
		}
	}
	for dir := range m.dirs {
		if dir != p && filepath.Dir(dir) == p {
			out = append(out, fs.FileInfoToDirEntry(memInfo{name: filepath.Base(dir), dir: true}))
		}
	}
	slices.SortFunc(out, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// MkdirAll implements FS.
func (m *Mem) MkdirAll(path string, perm os.FileMode) error {
	p := clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := p; ; d = filepath.Dir(d) {
		if m.files[d] != nil {
			return pathErr("mkdir", path, errors.New("not a directory"))
		}
		m.dirs[d] = true
		if d == "/" {
			return nil
		}
	}
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	p := clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[p] != nil {
		delete(m.files, p)
		return nil
	}
	if m.dirs[p] {
		for f := range m.files {
			if filepath.Dir(f) == p {
				return pathErr("remove", name, errors.New("directory not empty"))
			}
		}
		delete(m.dirs, p)
		return nil
	}
	return pathErr("remove", name, fs.ErrNotExist)
}

// RemoveAll implements FS.
func (m *Mem) RemoveAll(path string) error {
	p := clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	under := func(q string) bool { return q == p || strings.HasPrefix(q, p+"/") }
	for f := range m.files {
		if under(f) {
			delete(m.files, f)
		}
	}
	for d := range m.dirs {
		if under(d) && d != "/" {
			delete(m.dirs, d)
		}
	}
	return nil
}

// Rename implements FS: a file replaces its target at once.
func (m *Mem) Rename(oldpath, newpath string) error {
	o, n := clean(oldpath), clean(newpath)
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.files[o]
	if d == nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	if !m.dirs[filepath.Dir(n)] {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	delete(m.files, o)
	m.files[n] = d
	return nil
}

// Stat implements FS.
func (m *Mem) Stat(name string) (os.FileInfo, error) {
	p := clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[p] {
		return memInfo{name: filepath.Base(p), dir: true}, nil
	}
	d := m.files[p]
	if d == nil {
		return nil, pathErr("stat", name, fs.ErrNotExist)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return memInfo{name: filepath.Base(p), size: int64(len(d.data)), mod: d.mod}, nil
}

type memInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

// memHandle is an open file of a Mem: it keeps its data after a rename or
// a removal, as an open descriptor does.
type memHandle struct {
	m      *Mem
	name   string
	d      *memData
	dir    bool
	append bool

	mu     sync.Mutex
	pos    int64
	closed bool
}

var errIsDir = errors.New("is a directory")

func (h *memHandle) check(op string) error {
	if h.closed {
		return pathErr(op, h.name, fs.ErrClosed)
	}
	if h.dir {
		return pathErr(op, h.name, errIsDir)
	}
	return nil
}

func (h *memHandle) Read(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("read"); err != nil {
		return 0, err
	}
	n, err := h.readAt(p, h.pos)
	h.pos += int64(n)
	return n, err
}

func (h *memHandle) ReadAt(p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("read"); err != nil {
		return 0, err
	}
	return h.readAt(p, off)
}

func (h *memHandle) readAt(p []byte, off int64) (int, error) {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if off >= int64(len(h.d.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, h.d.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *memHandle) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("write"); err != nil {
		return 0, err
	}
	if h.append {
		h.d.mu.Lock()
		h.pos = int64(len(h.d.data))
		h.d.mu.Unlock()
	}
	n := h.writeAt(p, h.pos)
	h.pos += int64(n)
	return n, nil
}

func (h *memHandle) WriteAt(p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("write"); err != nil {
		return 0, err
	}
	return h.writeAt(p, off), nil
}

func (h *memHandle) writeAt(p []byte, off int64) int {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if end := off + int64(len(p)); end > int64(len(h.d.data)) {
		h.d.data = append(h.d.data, make([]byte, end-int64(len(h.d.data)))...)
	}
	copy(h.d.data[off:], p)
	h.d.mod = time.Now()
	return len(p)
}

func (h *memHandle) Seek(offset int64, whence int) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("seek"); err != nil {
		return 0, err
	}
	var base int64
	switch whence {
	case io.SeekCurrent:
		base = h.pos
	case io.SeekEnd:
		h.d.mu.Lock()
		base = int64(len(h.d.data))
		h.d.mu.Unlock()
	}
	if base+offset < 0 {
		return 0, pathErr("seek", h.name, errors.New("invalid argument"))
	}
	h.pos = base + offset
	return h.pos, nil
}

func (h *memHandle) Truncate(size int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("truncate"); err != nil {
		return err
	}
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if size < int64(len(h.d.data)) {
		h.d.data = h.d.data[:size:size]
	} else {
		h.d.data = append(h.d.data, make([]byte, size-int64(len(h.d.data)))...)
	}
	return nil
}

// Sync is a no-op: Mem is the disk (see the package comment).
func (h *memHandle) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return pathErr("sync", h.name, fs.ErrClosed)
	}
	return nil
}

func (h *memHandle) Stat() (fs.FileInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, pathErr("stat", h.name, fs.ErrClosed)
	}
	if h.dir {
		return memInfo{name: filepath.Base(h.name), dir: true}, nil
	}
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	return memInfo{name: filepath.Base(h.name), size: int64(len(h.d.data)), mod: h.d.mod}, nil
}

func (h *memHandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return pathErr("close", h.name, fs.ErrClosed)
	}
	h.closed = true
	return nil
}
