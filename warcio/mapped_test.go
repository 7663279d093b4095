package warcio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wayside-archive/wayside/internal/mapfile"
	"github.com/wayside-archive/wayside/internal/testenv"
)

// newMemReader reads data from memory the way Options.Map reads a mapped
// file (inflating gzip members straight from the bytes).
func newMemReader(data []byte, name string, opts Options) *Reader {
	r := NewReader(bytes.NewReader(data), name, opts)
	r.memData = data
	return r
}

// outcome is everything a reader gave, comparable across reading modes.
type outcome struct {
	Recs []Record
	Errs []string
}

func readOutcome(t *testing.T, r *Reader) outcome {
	t.Helper()
	var o outcome
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("reader does not end")
		}
		rec, err := r.Next()
		if err == io.EOF {
			return o
		}
		if err != nil {
			o.Errs = append(o.Errs, err.Error())
			continue
		}
		o.Recs = append(o.Recs, *rec)
	}
}

// TestMappedReadsLikeBuffered: every corpus WARC file (plain, gzip per
// record, damaged) reads the same mapped (Options.Map) as buffered: the
// same records, offsets, lengths, digests, anomalies and errors.
func TestMappedReadsLikeBuffered(t *testing.T) {
	opts := Options{KeepHTTPHead: true, BlockDigest: true}
	for _, path := range testenv.CorpusWARCs(t) {
		r, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := readOutcome(t, r)
		r.Close()
		mopts := opts
		mopts.Map = true
		m, err := Open(path, mopts)
		if err != nil {
			t.Fatal(err)
		}
		got := readOutcome(t, m)
		if m.Close() != nil {
			t.Errorf("%s: close", path)
		}
		if len(want.Recs) == 0 {
			t.Fatalf("%s: no records", path)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: mapped reading differs: %d records %v, buffered %d records %v", filepath.Base(path), len(got.Recs), got.Errs, len(want.Recs), want.Errs)
		}
	}
}

// TestMappedFileTruncatedWhileRead: a mapped file cut short under the
// reader gives an *Error wrapping mapfile.ErrFault, then io.EOF; the
// process does not crash. So does a reader given a handle on a mapping
// shared with another reader (Options.Mapping): it reads through that
// mapping, not one of its own, and its Close leaves the other handle's
// mapping readable.
func TestMappedFileTruncatedWhileRead(t *testing.T) {
	data := corpusFile(t, "aut-example.docs.warc.gz")
	for _, shared := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "x.warc.gz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := Options{Map: true}
		var other *mapfile.File
		if shared {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := mapfile.Map(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			other = m.Share()
			defer other.Close()
			opts.Mapping = m
		}
		r, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if shared && (r.mapping != opts.Mapping || &r.memData[0] != &other.Bytes()[0]) {
			t.Fatal("the reader mapped the file again instead of reading the mapping it was given")
		}
		first, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, first.End()+100); err != nil {
			t.Fatal(err)
		}
		var ferr error
		for i := 0; i < 100000 && ferr == nil; i++ {
			if _, err := r.Next(); err != nil {
				ferr = err
			}
		}
		var e *Error
		if !errors.Is(ferr, mapfile.ErrFault) || !errors.As(ferr, &e) || e.File != path {
			t.Fatalf("shared %v: reading the truncated mapping: %v, want an *Error wrapping mapfile.ErrFault", shared, ferr)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("shared %v: after the fault: %v, want io.EOF", shared, err)
		}
		if shared {
			r.Close()
			if !bytes.Equal(other.Bytes()[:first.End()], data[:first.End()]) {
				t.Error("the other handle's mapping does not read as the file after the reader closed")
			}
		}
		t.Log(ferr)
	}
}

// checkMemMatches reads data from memory as Options.Map does and fails
// unless it gives what the buffered reader gave (res).
func checkMemMatches(t *testing.T, data []byte, res result) {
	t.Helper()
	r := newMemReader(data, "cut.warc.gz", Options{})
	got := readOutcome(t, r)
	if len(got.Recs) != len(res.recs) || len(got.Errs) != len(res.errs) {
		t.Fatalf("in memory: %d records %v; buffered: %d records %v", len(got.Recs), got.Errs, len(res.recs), res.errs)
	}
	for i := range got.Recs {
		if !reflect.DeepEqual(got.Recs[i], *res.recs[i]) {
			t.Fatalf("in memory: record %d differs: %+v\nbuffered: %+v", i, got.Recs[i], *res.recs[i])
		}
	}
	for i := range got.Errs {
		if got.Errs[i] != res.errs[i].Error() {
			t.Fatalf("in memory: error %d is %q; buffered: %q", i, got.Errs[i], res.errs[i])
		}
	}
}
