package warcio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
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
			got, err := ReadAt(f, name, rec.Offset, rec.IndexLength(), Options{}) // what a capture gives
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

// One Reader Reset for each record in turn — records of compressed and
// uncompressed files, large and small, interleaved — reads every corpus
// record exactly as a fresh sequential read does: nothing of one input
// leaks into the next.
func TestResetReadsLikeNewReader(t *testing.T) {
	type at struct {
		f    *os.File
		name string
		want *Record
	}
	var all []at
	for _, path := range testenv.CorpusWARCs(t) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, rec := range readAll(t, path, Options{KeepPayload: 1 << 20}) {
			if rec.Length > 0 {
				all = append(all, at{f, filepath.Base(path), rec})
			}
		}
	}
	// Interleave the files: record i of every file in turn.
	sort.SliceStable(all, func(i, j int) bool { return all[i].want.Offset < all[j].want.Offset })
	r := NewReader(strings.NewReader(""), "empty")
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("empty input: %v", err)
	}
	n := 0
	for _, a := range all {
		r.Reset(io.NewSectionReader(a.f, a.want.Offset, a.want.Length), a.name, Options{KeepPayload: 1 << 20})
		got, err := r.Next()
		if err != nil {
			t.Fatalf("%s offset %d: %v", a.name, a.want.Offset, err)
		}
		got.Offset += a.want.Offset
		if g, w := got.Capture(a.name), a.want.Capture(a.name); !reflect.DeepEqual(g, w) {
			t.Fatalf("%s offset %d: after Reset\n%+v\nsequential\n%+v", a.name, a.want.Offset, g, w)
		}
		if !bytes.Equal(got.Payload, a.want.Payload) || got.PayloadDigest != a.want.PayloadDigest || got.BlockDigest != a.want.BlockDigest {
			t.Fatalf("%s offset %d: payload or digests differ after Reset", a.name, a.want.Offset)
		}
		n++
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

// The index length of a record in an uncompressed file leaves out the CRLF
// pair closing it (pywb and warcio count so); in a gzip file it is the
// member. Relocate keeps that rule for records read from their encoding.
func TestIndexLengthUncompressed(t *testing.T) {
	rec := "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: http://example.com/\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n" +
		"WARC-Record-ID: <urn:uuid:1>\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n"
	r := NewReader(strings.NewReader(rec+rec), "t.warc")
	for i := 0; i < 2; i++ {
		got, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got.Length != int64(len(rec)) || got.IndexLength() != int64(len(rec)-4) || got.Capture("t.warc").Length != int64(len(rec)-4) {
			t.Fatalf("record %d: Length %d IndexLength %d, want %d and %d", i, got.Length, got.IndexLength(), len(rec), len(rec)-4)
		}
		if got.Offset != int64(i*len(rec)) {
			t.Fatalf("record %d at %d", i, got.Offset)
		}
		moved := *got
		moved.Relocate(1000, 300, true)
		if moved.IndexLength() != 300 {
			t.Errorf("relocated into a gzip file: index length %d, want the member's 300", moved.IndexLength())
		}
		moved = *got
		moved.Relocate(1000, int64(len(rec)), false)
		if moved.IndexLength() != int64(len(rec)-4) {
			t.Errorf("relocated into a plain file: index length %d, want %d", moved.IndexLength(), len(rec)-4)
		}
	}
}
