package mapfile

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrFault is wrapped by the error Recover reports when mapped memory
// could not be read: the file was truncated (or its storage failed) while
// it was mapped.
var ErrFault = errors.New("mapped file could not be read (truncated while it was read?)")

// releaseStep is how far reading moves on between two releases of the
// pages behind it.
const releaseStep = 4 << 20

// File is a handle on a read-only mapping of a whole file. Share gives
// more handles on the same mapping, so that readers of one file in one
// process (a reader and a check that frames the file again on its own)
// fault its pages in once instead of once per mapping; the mapping is
// unmapped when its last handle is closed.
type File struct {
	m      *mapping
	pos    int // the offset this handle released up to (Release)
	closed bool
}

// mapping is the mapped memory its handles share.
type mapping struct {
	data []byte
	name string
	step int // releaseStep (smaller in tests)
	mu   sync.Mutex
	// handles are the open handles; released: pages before this
	// offset were released.
	handles  []*File
	released int
}

// Map maps the whole of f read-only. An empty file maps to no bytes.
func Map(f *os.File) (*File, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	m := &mapping{step: releaseStep, name: f.Name()}
	if fi.Size() == 0 {
		return m.handle(), nil
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("map %s: not a regular file", f.Name())
	}
	if int64(int(fi.Size())) != fi.Size() {
		return nil, fmt.Errorf("map %s: too large to map", f.Name())
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	_ = unix.Madvise(data, unix.MADV_SEQUENTIAL)
	m.data = data
	return m.handle(), nil
}

func (m *mapping) handle() *File {
	h := &File{m: m}
	m.handles = append(m.handles, h)
	return h
}

// Share returns another handle on the same mapping (nil after Close),
// to be closed on its own. Its reader releases pages with its own
// Release: a page is released once every open handle has released it.
func (h *File) Share() *File {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if h.closed {
		return nil
	}
	return h.m.handle()
}

// Bytes returns the mapped bytes, valid until Close. Reading them faults
// if the file shrank: read them only between Guard and Recover.
func (h *File) Bytes() []byte {
	if h.closed {
		return nil
	}
	return h.m.data
}

// Release tells the kernel the pages before off will not be read soon
// through this handle; those that no open handle will read soon are
// released once reading has moved releaseStep bytes on since the last
// release, so a sequential scan of a file larger than memory keeps a
// bounded resident size. The pages stay in the page cache; reading them
// again is correct, only slower.
func (h *File) Release(off int64) {
	const page = 4096
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	h.pos = int(min(max(off, 0), int64(len(m.data))))
	end := len(m.data)
	for _, o := range m.handles {
		end = min(end, o.pos)
	}
	end &^= page - 1
	if end-m.released < m.step {
		return
	}
	_ = unix.Madvise(m.data[m.released:end], unix.MADV_DONTNEED)
	m.released = end
}

// Close closes the handle; its bytes must not be used afterwards. The
// last handle's Close unmaps the file.
func (h *File) Close() error {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	for i, o := range m.handles {
		if o == h {
			m.handles = append(m.handles[:i], m.handles[i+1:]...)
			break
		}
	}
	if len(m.handles) > 0 || m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	return err
}

// Guard makes a fault on memory in the calling goroutine panic instead of
// crashing the process; pass its result to Recover, deferred:
//
//	defer mapfile.Recover(&err, mapfile.Guard(), m1, m2)
func Guard() bool { return debug.SetPanicOnFault(true) }

// Recover, deferred after Guard, restores the goroutine's fault setting
// and turns a fault on the memory of one of maps into an error in *err
// (wrapping ErrFault, naming the file); any other panic goes on.
func Recover(err *error, old bool, maps ...*File) {
	debug.SetPanicOnFault(old)
	r := recover()
	if r == nil {
		return
	}
	if fe, ok := r.(interface{ Addr() uintptr }); ok {
		for _, m := range maps {
			if m != nil && m.contains(fe.Addr()) {
				*err = fmt.Errorf("%w: %s offset %d", ErrFault, m.m.name, fe.Addr()-uintptr(unsafe.Pointer(unsafe.SliceData(m.m.data))))
				return
			}
		}
	}
	panic(r)
}

// contains reports whether addr lies in the mapping.
func (h *File) contains(addr uintptr) bool {
	data := h.m.data
	if len(data) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return addr >= start && addr < start+uintptr(len(data))
}
