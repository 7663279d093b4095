package fsutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with the bytes write produces. It writes a
// temporary file ".BASE.tmp-*" in path's directory (through a buffer),
// sets its mode to perm exactly (the umask does not apply), fsyncs it,
// renames it over path and fsyncs the directory. If write or any step
// before the rename fails, path is left as it was and the temporary file
// is removed; the error wraps write's error. The directory must exist.
func WriteFileAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("fsutil: write %s: %w", path, err)
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		bw := bufio.NewWriterSize(f, 64<<10)
		err = write(bw)
		if err == nil {
			err = bw.Flush()
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsutil: write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs the directory dir, making the creation, removal and
// renaming of its entries durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsutil: sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsutil: sync dir %s: %w", dir, err)
	}
	return nil
}
