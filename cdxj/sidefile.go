package cdxj

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcio"
)

// HasLine reports whether rec gets a line in the CDXJ file beside its WARC:
// the selection of `wayside cdxj` (Indexed, pywb's cdx-indexer rule), which
// the crawler's and the ingester's CDXJ files apply too, and a record that
// an offset and length can locate (not one sharing its gzip member with
// another, Length 0, which `wayside cdxj` reports as a problem).
func HasLine(rec *warcio.Record) bool {
	return Indexed(rec, false) && rec.Length > 0
}

// SortFile rewrites the CDXJ file at path with its lines in byte order, the
// order `wayside cdxj`, `cdxj --merge` and pywb's binary search expect. It
// is crash-safe: the sorted lines go to a temporary file in the same
// directory, which is fsynced and renamed over path (then the directory is
// fsynced), so a crash leaves either the old or the sorted file, never a
// mix; a temporary file left behind is removed by RemoveStaleTemps. Lines
// are sorted with bounded memory (opts.MaxMemory, runs spilled to
// opts.TempDir). The file keeps its mode.
func SortFile(path string, opts SortOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cdxj: sort %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cdxj: sort %s: %w", path, err)
	}
	s := NewSorter(opts)
	defer s.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			if aerr := s.Add(line); aerr != nil {
				return fmt.Errorf("cdxj: sort %s: %w", path, aerr)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("cdxj: sort %s: %w", path, err)
		}
	}
	if err := fsutil.WriteFileAtomic(path, fi.Mode().Perm(), func(w io.Writer) error {
		_, err := s.WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("cdxj: sort: %w", err)
	}
	return nil
}

// RemoveStaleTemps removes the temporary files a SortFile of path
// interrupted by a crash left beside it.
func RemoveStaleTemps(path string) error {
	if err := fsutil.RemoveStaleTemps(path); err != nil {
		return fmt.Errorf("cdxj: %w", err)
	}
	return nil
}

// CheckSorted reads index lines from r and returns nil when they are in
// byte order, or an error naming the input (name) and the first line that
// sorts before the line above it (wrapping ErrUnsorted).
func CheckSorted(r io.Reader, name string) error {
	c := &cursor{src: &readerSource{name: name, br: bufio.NewReaderSize(r, 64<<10)}}
	for {
		ok, err := c.advance()
		if !ok || err != nil {
			return err
		}
	}
}

// IsSideFile reports whether name is a CDXJ file (not one of SortFile's
// temporary files).
func IsSideFile(name string) bool {
	return strings.HasSuffix(name, ".cdxj") && !strings.HasPrefix(filepath.Base(name), ".")
}

// SideFileName returns the name of the side file of the WARC file warc
// (a base name or a path): warc + ".cdxj". The whole WARC name is kept:
// two WARC files of one directory (x.warc and x.warc.gz, x.arc.gz) cannot
// share a side file, the WARC is the side file's name without ".cdxj",
// and pywb's and other CDXJ tools, which take every "*.cdxj" of an index
// directory, find it. The crawler's writer named it with ".warc.gz"
// replaced by ".cdxj" before; such files are still found (FindSideFile,
// ListSideFiles) and are replaced under this name when their WARC is
// recovered.
func SideFileName(warc string) string { return warc + ".cdxj" }

// legacySideFileName is the name the crawler's writer gave the side file
// before SideFileName: ".warc.gz" (or ".warc") replaced by ".cdxj".
func legacySideFileName(warc string) string {
	return strings.TrimSuffix(strings.TrimSuffix(warc, ".gz"), ".warc") + ".cdxj"
}

// FindSideFile returns the path of the side file of the WARC file warc in
// dir: SideFileName's when it exists, else the legacy name's when that
// exists; found is false (and path SideFileName's) when neither does.
func FindSideFile(dir, warc string) (path string, found bool, err error) {
	path = filepath.Join(dir, SideFileName(filepath.Base(warc)))
	for _, p := range []string{path, filepath.Join(dir, legacySideFileName(filepath.Base(warc)))} {
		_, err := os.Stat(p)
		if err == nil {
			return p, true, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return path, false, fmt.Errorf("cdxj: side file of %s: %w", warc, err)
		}
	}
	return path, false, nil
}

// RemoveLegacySideFile removes the side file of warc in dir under the
// legacy name, if there is one (its lines are rebuilt under SideFileName).
func RemoveLegacySideFile(dir, warc string) error {
	old := legacySideFileName(filepath.Base(warc))
	if old == SideFileName(filepath.Base(warc)) {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, old)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cdxj: %w", err)
	}
	return nil
}

// ListSideFiles returns the paths of the side files in dirs (IsSideFile:
// both namings; not SortFile's temporary files), sorted. A directory that
// does not exist yet holds none.
func ListSideFiles(dirs ...string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cdxj: list side files: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() && IsSideFile(e.Name()) {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// SideFile is a side file open for appending. Appends go to its end (or,
// with AppendAt, after a checkpointed size); an append that fails (a full
// disk) is cut back to the last whole line, so no torn line is left. It is
// not safe for concurrent use.
type SideFile struct {
	path string
	f    *os.File
	size int64
}

// OpenSideFile opens (creating) the side file at path for appending.
func OpenSideFile(path string) (*SideFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cdxj: open side file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cdxj: open side file: %w", err)
	}
	return &SideFile{path: path, f: f, size: fi.Size()}, nil
}

// Path returns the file's path.
func (s *SideFile) Path() string { return s.path }

// Size returns the size after the last successful append.
func (s *SideFile) Size() int64 { return s.size }

// Append writes lines (whole lines, each ending in a newline) at the end.
// The write goes through failpoint "cdxj.side-append".
func (s *SideFile) Append(lines []byte) error { return s.AppendAt(s.size, lines) }

// AppendAt cuts the file back to size (dropping lines past it: those of a
// batch that was not checkpointed) and writes lines there.
func (s *SideFile) AppendAt(size int64, lines []byte) error {
	if fi, err := s.f.Stat(); err != nil {
		return fmt.Errorf("cdxj: append to %s: %w", s.path, err)
	} else if fi.Size() != size {
		if err := s.f.Truncate(size); err != nil {
			return fmt.Errorf("cdxj: append to %s: %w", s.path, err)
		}
	}
	s.size = size
	if len(lines) == 0 {
		return nil
	}
	k, err := failpoint.Write("cdxj.side-append", len(lines))
	if err == nil {
		_, err = s.f.WriteAt(lines, size)
	} else {
		s.f.WriteAt(lines[:k], size)
	}
	if err != nil {
		// No torn last line is left (a full disk): the file is cut back
		// to its last whole line.
		s.f.Truncate(size)
		return fmt.Errorf("cdxj: append to %s: %w", s.path, err)
	}
	s.size = size + int64(len(lines))
	return nil
}

// Sync makes the appended lines durable; on failure the file is cut back
// to size (the caller's last durable size).
func (s *SideFile) Sync(size int64) error {
	if err := s.f.Sync(); err != nil {
		s.f.Truncate(size)
		s.size = size
		return fmt.Errorf("cdxj: %s: %w", s.path, err)
	}
	return nil
}

// Close closes the file.
func (s *SideFile) Close() error {
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("cdxj: close %s: %w", s.path, err)
	}
	return nil
}

// CutBack truncates the side file at path to size when it is longer (lines
// of a batch whose checkpoint did not reach the disk), after removing
// temporary files a SortFile cut short left beside it. It reports whether
// lines were cut. A missing file is left missing.
func CutBack(path string, size int64) (bool, error) {
	if err := RemoveStaleTemps(path); err != nil {
		return false, err
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= size {
		return false, nil
	}
	if err := os.Truncate(path, size); err != nil {
		return false, fmt.Errorf("cdxj: %w", err)
	}
	return true, nil
}

// SortSideFile rewrites the side file at path sorted (SortFile), once its
// WARC is complete; a missing file (no record indexed) is not an error.
func SortSideFile(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return SortFile(path, SortOptions{})
}

// RebuildSideFile writes the side file at path from the lines add is
// given by fill, sorted, replacing what is there atomically (temporary
// file, fsync, rename): a side file a crash left half-written is rebuilt
// from its WARC.
func RebuildSideFile(path string, fill func(add func(*Line) error) error) error {
	s := NewSorter(SortOptions{})
	defer s.Close()
	if err := fill(s.AddLine); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		_, err := s.WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("cdxj: rebuild %s: %w", path, err)
	}
	return nil
}

// ReplaySideFile reads the complete lines of the side file at path that are
// within its first limit bytes (limit < 0: the whole file) and calls fn for
// each (text without its newline, 1-based line number). A producer may be
// appending: a partial last line is left for the next replay. Blank and
// comment lines ('!' or '#') are passed over. A file removed meanwhile
// replays nothing.
func ReplaySideFile(path string, limit int64, fn func(line string, lineNo int) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cdxj: replay: %w", err)
	}
	defer f.Close()
	var src io.Reader = f
	if limit >= 0 {
		src = io.LimitReader(f, limit)
	}
	br := bufio.NewReaderSize(src, 256<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cdxj: replay %s: %w", path, err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '!' || line[0] == '#' {
			continue
		}
		if err := fn(line, lineNo); err != nil {
			return err
		}
	}
}
