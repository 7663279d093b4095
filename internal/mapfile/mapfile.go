package mapfile

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
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

// File is a read-only mapping of a whole file.
type File struct {
	data     []byte
	released int // pages before this offset were released
	step     int // releaseStep (smaller in tests)
	name     string
}

// Map maps the whole of f read-only. An empty file maps to no bytes.
func Map(f *os.File) (*File, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return &File{step: releaseStep, name: f.Name()}, nil
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
	return &File{data: data, step: releaseStep, name: f.Name()}, nil
}

// Bytes returns the mapped bytes, valid until Close. Reading them faults
// if the file shrank: read them only between Guard and Recover.
func (m *File) Bytes() []byte { return m.data }

// Release tells the kernel the pages before off will not be read soon,
// once reading has moved releaseStep bytes on since the last release, so
// a sequential scan of a file larger than memory keeps a bounded resident
// size. The pages stay in the page cache; reading them again is correct,
// only slower.
func (m *File) Release(off int64) {
	const page = 4096
	end := int(min(off, int64(len(m.data)))) &^ (page - 1)
	if end-m.released < m.step {
		return
	}
	_ = unix.Madvise(m.data[m.released:end], unix.MADV_DONTNEED)
	m.released = end
}

// Close unmaps the file; the bytes must not be used afterwards.
func (m *File) Close() error {
	if m.data == nil {
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
				*err = fmt.Errorf("%w: %s offset %d", ErrFault, m.name, fe.Addr()-uintptr(unsafe.Pointer(unsafe.SliceData(m.data))))
				return
			}
		}
	}
	panic(r)
}

// contains reports whether addr lies in the mapping.
func (m *File) contains(addr uintptr) bool {
	if len(m.data) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return addr >= start && addr < start+uintptr(len(m.data))
}
