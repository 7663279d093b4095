package warcio

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// Every corpus record read back alone by offset (what a consumer of a
// capture does) gives the same capture as the sequential read.
func TestReadAtMatchesSequentialRead(t *testing.T) {
	n := 0
	for _, path := range testenv.CorpusWARCs(t) {
		dir, name := filepath.Split(path)
		f, err := FindFile([]string{t.TempDir(), dir}, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range readAll(t, path, Options{}) {
			if rec.Length == 0 {
				continue // shares a gzip member: not addressable
			}
			got, err := ReadAt(f, name, rec.Offset, rec.Length, Options{})
			if err != nil {
				t.Fatalf("%s offset %d: %v", name, rec.Offset, err)
			}
			if a, b := got.Capture(name), rec.Capture(name); !reflect.DeepEqual(a, b) {
				t.Fatalf("%s offset %d: ReadAt capture\n%+v\nsequential\n%+v", name, rec.Offset, a, b)
			}
			n++
		}
		f.Close()
	}
	if n < 300 {
		t.Fatalf("only %d records compared", n)
	}
}

func TestFindFileOpenSuffixAndBadNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.warc.gz"+OpenSuffix), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := FindFile([]string{dir}, "a.warc.gz")
	if err != nil {
		t.Fatalf("FindFile of a file still open: %v", err)
	}
	f.Close()
	for _, bad := range []string{"", "../a.warc.gz", "x/a.warc.gz", ".."} {
		if _, err := FindFile([]string{dir}, bad); err == nil {
			t.Errorf("FindFile(%q) accepted", bad)
		}
	}
	if _, err := FindFile([]string{dir}, "missing.warc.gz"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
