package kfake

import (
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// fs wraps filesystem operations for testability. The default
// implementation delegates to the os package; tests can inject
// memFS for fault-injection and crash simulation.
type fs interface {
	OpenFile(name string, flag int, perm os.FileMode) (file, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	RemoveAll(path string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	ReadFile(name string) ([]byte, error)
	Stat(name string) (os.FileInfo, error)
}

// file wraps a writable, seekable file handle.
type file interface {
	io.Writer
	io.Reader
	io.Closer
	Seek(offset int64, whence int) (int64, error)
	Truncate(size int64) error
	Sync() error
}

// osFS is the real-filesystem implementation of fs.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	return os.OpenFile(name, flag, perm)
}
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) ReadFile(name string) ([]byte, error)         { return os.ReadFile(name) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }

// memFS is an in-memory filesystem for testing persistence without
// touching the real disk. It supports fault injection via fail flags.
type memFS struct {
	mu    sync.Mutex
	files map[string]*memFileData
	dirs  map[string]bool

	// Fault injection: set these before an operation to simulate errors.
	failNextSync  error
	failNextWrite error
}

// memFileData is the backing storage for a memFS file: its bytes in
// chunks of memChunk bytes (every chunk but the last is full). A file that
// grows is never copied as a whole (changerate patch 2, PATCH.md): only its
// first chunk, while the file is smaller than memChunk, grows by doubling.
type memFileData struct {
	chunks  [][]byte
	size    int64
	modTime time.Time
}

// memChunk is the size of a full chunk of a memFS file.
const memChunk = 1 << 20

// extend grows the file to end bytes (no-op if it is already that long);
// the new bytes are zero.
func (d *memFileData) extend(end int64) {
	for d.size < end {
		ci := int(d.size / memChunk)
		if ci == len(d.chunks) {
			d.chunks = append(d.chunks, nil)
		}
		c := d.chunks[ci]
		want := int(min(end-int64(ci)*memChunk, memChunk))
		if want > cap(c) {
			// The first chunk grows by doubling (most files are small);
			// every later chunk is allocated whole.
			capacity := memChunk
			if ci == 0 {
				capacity = min(max(2*cap(c), want), memChunk)
			}
			grown := make([]byte, want, capacity)
			copy(grown, c)
			c = grown
		} else {
			c = c[:want] // zero past len: make, or truncate's clear
		}
		d.chunks[ci] = c
		d.size = int64(ci)*memChunk + int64(want)
	}
}

// writeAt writes b at off, growing the file as needed.
func (d *memFileData) writeAt(b []byte, off int64) {
	d.extend(off + int64(len(b)))
	for len(b) > 0 {
		n := copy(d.chunks[off/memChunk][off%memChunk:], b)
		b = b[n:]
		off += int64(n)
	}
}

// readAt reads into b from off; it returns the number of bytes read (short
// at the end of the file).
func (d *memFileData) readAt(b []byte, off int64) int {
	n := 0
	for n < len(b) && off < d.size {
		m := copy(b[n:], d.chunks[off/memChunk][off%memChunk:])
		n += m
		off += int64(m)
	}
	return n
}

// truncate sets the file's size; bytes past the old end read as zero.
func (d *memFileData) truncate(size int64) {
	if size >= d.size {
		d.extend(size)
		return
	}
	keep := int((size + memChunk - 1) / memChunk)
	clear(d.chunks[keep:]) // release the dropped chunks
	d.chunks = d.chunks[:keep]
	if keep > 0 {
		last := d.chunks[keep-1][:size-int64(keep-1)*memChunk]
		clear(last[len(last):cap(last)]) // extend relies on zeros past len
		d.chunks[keep-1] = last
	}
	d.size = size
}

func newMemFS() *memFS {
	return &memFS{
		files: make(map[string]*memFileData),
		dirs:  map[string]bool{"/": true},
	}
}

// memFile is an open handle to a memFS file.
type memFile struct {
	fs   *memFS
	name string
	d    *memFileData
	pos  int64
	flag int
}

func (m *memFS) OpenFile(name string, flag int, _ os.FileMode) (file, error) {
	m.mu.Lock()
	defer m.mu.Unlock()

	d, exists := m.files[name]
	if flag&os.O_CREATE != 0 && !exists {
		d = &memFileData{modTime: time.Now()}
		m.files[name] = d
	}
	if d == nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	if flag&os.O_TRUNC != 0 {
		d.truncate(0)
		d.modTime = time.Now()
	}
	var pos int64
	if flag&os.O_APPEND != 0 {
		pos = d.size
	}
	return &memFile{fs: m, name: name, d: d, pos: pos, flag: flag}, nil
}

func (m *memFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.files[oldpath]
	if !ok {
		return &os.PathError{Op: "rename", Path: oldpath, Err: os.ErrNotExist}
	}
	m.files[newpath] = d
	delete(m.files, oldpath)
	return nil
}

func (m *memFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		delete(m.files, name)
		return nil
	}
	if _, ok := m.dirs[name]; ok {
		delete(m.dirs, name)
		return nil
	}
	return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
}

func (m *memFS) RemoveAll(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := path + "/"
	for k := range m.files {
		if k == path || strings.HasPrefix(k, prefix) {
			delete(m.files, k)
		}
	}
	for k := range m.dirs {
		if k == path || strings.HasPrefix(k, prefix) {
			delete(m.dirs, k)
		}
	}
	return nil
}

func (m *memFS) MkdirAll(path string, _ os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs[path] = true
	return nil
}

func (m *memFS) ReadDir(name string) ([]os.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()

	prefix := name
	if prefix != "/" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}

	seen := make(map[string]bool)
	var entries []os.DirEntry
	for k, d := range m.files {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		rest := k[len(prefix):]
		// Only direct children (no further /).
		if slash := strings.IndexByte(rest, '/'); slash >= 0 {
			dirName := rest[:slash]
			if !seen[dirName] {
				seen[dirName] = true
				entries = append(entries, memDirEntry{name: dirName, isDir: true})
			}
			continue
		}
		if rest != "" && !seen[rest] {
			seen[rest] = true
			entries = append(entries, memDirEntry{name: rest, size: d.size})
		}
	}
	for k := range m.dirs {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		rest := k[len(prefix):]
		if rest != "" && !strings.Contains(rest, "/") && !seen[rest] {
			seen[rest] = true
			entries = append(entries, memDirEntry{name: rest, isDir: true})
		}
	}
	if len(entries) == 0 && !m.dirs[name] {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: os.ErrNotExist}
	}
	return entries, nil
}

func (m *memFS) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.files[name]
	if !ok {
		return nil, &os.PathError{Op: "read", Path: name, Err: os.ErrNotExist}
	}
	out := make([]byte, d.size)
	d.readAt(out, 0)
	return out, nil
}

func (m *memFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.files[name]; ok {
		return memFileInfo{name: name, size: d.size, modTime: d.modTime}, nil
	}
	if m.dirs[name] {
		return memFileInfo{name: name, isDir: true}, nil
	}
	return nil, &os.PathError{Op: "stat", Path: name, Err: os.ErrNotExist}
}

// memFile methods

func (f *memFile) Write(b []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.failNextWrite; err != nil {
		f.fs.failNextWrite = nil
		return 0, err
	}
	// Match POSIX O_APPEND: writes always go to the end.
	if f.flag&os.O_APPEND != 0 {
		f.pos = f.d.size
	}
	f.d.writeAt(b, f.pos)
	f.pos += int64(len(b))
	f.d.modTime = time.Now()
	return len(b), nil
}

func (f *memFile) Read(b []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.pos >= f.d.size {
		return 0, io.EOF
	}
	n := f.d.readAt(b, f.pos)
	f.pos += int64(n)
	return n, nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch whence {
	case io.SeekStart:
		f.pos = offset
	case io.SeekCurrent:
		f.pos += offset
	case io.SeekEnd:
		f.pos = f.d.size + offset
	}
	return f.pos, nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.d.truncate(size)
	f.d.modTime = time.Now()
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.failNextSync; err != nil {
		f.fs.failNextSync = nil
		return err
	}
	return nil
}

func (*memFile) Close() error { return nil }

// memDirEntry implements os.DirEntry for memFS.
type memDirEntry struct {
	name  string
	isDir bool
	size  int64
}

func (e memDirEntry) Name() string    { return e.name }
func (e memDirEntry) IsDir() bool     { return e.isDir }
func (memDirEntry) Type() os.FileMode { return 0 }
func (e memDirEntry) Info() (os.FileInfo, error) {
	return memFileInfo{name: e.name, isDir: e.isDir, size: e.size}, nil
}

// memFileInfo implements os.FileInfo for memFS.
type memFileInfo struct {
	name    string
	size    int64
	isDir   bool
	modTime time.Time
}

func (i memFileInfo) Name() string       { return i.name }
func (i memFileInfo) Size() int64        { return i.size }
func (memFileInfo) Mode() os.FileMode    { return 0o644 }
func (i memFileInfo) ModTime() time.Time { return i.modTime }
func (i memFileInfo) IsDir() bool        { return i.isDir }
func (memFileInfo) Sys() any             { return nil }
