package warcfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// Storage is where WARC files live: the operations the Writer and Recover
// need, by base name. It is defined here, where it is consumed (as
// litestream's ReplicaClient is); Dir is the local-directory
// implementation, and another backend (object storage) is one more
// implementation in a subpackage of its own (warcfile/s3, ...).
//
// Names are base names (no directory). A file is created under its
// temporary name (NAME.open) and published by Rename when complete.
type Storage interface {
	// Create creates the file name for writing and reading back; it fails
	// with an error wrapping fs.ErrExist when name exists.
	Create(name string) (File, error)
	// Edit opens the existing file name for reading and writing
	// (recovery cuts an incomplete tail off an unfinished file).
	Edit(name string) (File, error)
	// Open opens name for reading, sequentially or at any offset.
	Open(name string) (ReadFile, error)
	// Rename renames from to to (publishing a finished file).
	Rename(from, to string) error
	// Stat describes name; a missing file is an error wrapping
	// fs.ErrNotExist.
	Stat(name string) (fs.FileInfo, error)
	// List returns the names of the files stored, sorted.
	List() ([]string, error)
	// Remove removes name.
	Remove(name string) error
	// Sync makes the creations, renames and removals done so far durable
	// (a directory fsync for Dir).
	Sync() error
}

// File is a stored file open for writing: appended to, read back,
// truncated (a failed write is cut off), made durable by Sync.
type File interface {
	io.Writer
	io.ReaderAt
	io.Seeker
	Truncate(size int64) error
	Sync() error
	Stat() (fs.FileInfo, error)
	Close() error
}

// ReadFile is a stored file open for reading.
type ReadFile interface {
	io.Reader
	io.ReaderAt
	Stat() (fs.FileInfo, error)
	Close() error
}

// Locker is implemented by a Storage that can keep a second writer out
// (Dir: an flock on a lock file): Lock returns once this process holds the
// lock, or fails at once when another holds it.
type Locker interface {
	Lock() (io.Closer, error)
}

// Dir is a Storage in a local directory.
type Dir struct{ path string }

// NewDir returns the Storage of the local directory path.
func NewDir(path string) *Dir { return &Dir{path: path} }

// Path returns the directory.
func (d *Dir) Path() string { return d.path }

func (d *Dir) join(name string) string { return filepath.Join(d.path, name) }

// Create implements Storage (O_EXCL).
func (d *Dir) Create(name string) (File, error) {
	return os.OpenFile(d.join(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}

// Edit implements Storage.
func (d *Dir) Edit(name string) (File, error) { return os.OpenFile(d.join(name), os.O_RDWR, 0) }

// Open implements Storage.
func (d *Dir) Open(name string) (ReadFile, error) { return os.Open(d.join(name)) }

// Rename implements Storage.
func (d *Dir) Rename(from, to string) error { return os.Rename(d.join(from), d.join(to)) }

// Stat implements Storage.
func (d *Dir) Stat(name string) (fs.FileInfo, error) { return os.Stat(d.join(name)) }

// Remove implements Storage.
func (d *Dir) Remove(name string) error { return os.Remove(d.join(name)) }

// Sync implements Storage: it fsyncs the directory.
func (d *Dir) Sync() error { return fsutil.SyncDir(d.path) }

// List implements Storage: the regular files of the directory.
func (d *Dir) List() ([]string, error) {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Lock implements Locker.
func (d *Dir) Lock() (io.Closer, error) {
	f, err := lockDir(d.path)
	if err != nil || f == nil {
		return nil, err
	}
	return f, nil
}

// storageOf returns st, or the Dir of dir when st is nil.
func storageOf(st Storage, dir string) (Storage, error) {
	if st != nil {
		return st, nil
	}
	if dir == "" {
		return nil, errors.New("warcfile: no directory")
	}
	return NewDir(dir), nil
}
