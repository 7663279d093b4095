package cdxj

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
