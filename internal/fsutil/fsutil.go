package fsutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with the bytes write produces. It writes a
// temporary file ".BASE.tmp-*" in path's directory (through a buffer),
// sets its mode to perm exactly (the umask does not apply), fsyncs it,
// renames it over path and fsyncs the directory. If write or any step
// before the rename fails, path is left as it was and the temporary file
// is removed. An error write returns without any write to the file having
// failed is returned as it is (it is the caller's: "no readable record"),
// every other error is prefixed "fsutil: write PATH". The directory must
// exist.
func WriteFileAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Not the temporary file's random name: the directory.
			return fmt.Errorf("fsutil: write %s: no such directory %s: %w", path, dir, fs.ErrNotExist)
		}
		return fmt.Errorf("fsutil: write %s: %w", path, err)
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		fw := &failWriter{w: f}
		bw := bufio.NewWriterSize(fw, 64<<10)
		if werr := write(bw); werr != nil && fw.err == nil {
			f.Close()
			os.Remove(tmp)
			return werr
		} else if werr != nil {
			err = werr
		} else {
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

// failWriter remembers whether a write to the file failed.
type failWriter struct {
	w   io.Writer
	err error
}

func (f *failWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil && f.err == nil {
		f.err = err
	}
	return n, err
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

// RemoveStaleTemps removes the temporary files WriteFileAtomic(path, ...)
// leaves behind when the process dies before its rename. Call it before
// the first write after a restart.
func RemoveStaleTemps(path string) error {
	ms, err := filepath.Glob(filepath.Join(filepath.Dir(path), "."+globEscape(filepath.Base(path))+".tmp-*"))
	if err != nil {
		return fmt.Errorf("fsutil: %w", err)
	}
	for _, m := range ms {
		if err := os.Remove(m); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("fsutil: remove stale %s: %w", m, err)
		}
	}
	return nil
}

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// CopyFile copies the regular file src to dst (created, mode perm, not
// there before), synced to disk before it returns.
func CopyFile(src, dst string, perm os.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("fsutil: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("fsutil: %w", err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("fsutil: %w", cerr)
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("fsutil: copy %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("fsutil: %w", err)
	}
	return nil
}
