// Package warctest checks, in tests, what crawls left on disk: every
// revisit resolves to a durable original and every index entry points at
// the complete record it names. Records are read back with warcio.
package warctest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/warcio"
)

// openSuffix marks a WARC file still being written.
const openSuffix = ".open"

// Record is a record read back from a WARC file.
type Record struct {
	Path string // the file as read (may end in ".open")
	File string // its base name without ".open": the name an index records
	*warcio.Record
}

// Files returns the WARC files in dir, sorted; with withOpen also those
// still being written.
func Files(t testing.TB, dir string, withOpen bool) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasSuffix(n, ".warc.gz") || (withOpen && strings.HasSuffix(n, ".warc.gz"+openSuffix)) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out
}

// ReadDirs reads every record of every WARC file (final and .open) in
// dirs; a record that does not read fails the test.
func ReadDirs(t testing.TB, dirs ...string) []Record {
	t.Helper()
	var out []Record
	for _, dir := range dirs {
		for _, p := range Files(t, dir, true) {
			r, err := warcio.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			for {
				rec, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				out = append(out, Record{Path: p, File: strings.TrimSuffix(filepath.Base(p), openSuffix), Record: rec})
			}
			r.Close()
		}
	}
	return out
}

// CheckRevisits fails t for every revisit whose WARC-Refers-To names no
// response record in recs with the same payload digest, target URI
// (WARC-Refers-To-Target-URI) and date (WARC-Refers-To-Date). It returns
// the number of revisits checked.
func CheckRevisits(t testing.TB, recs []Record) int {
	t.Helper()
	byID := map[string]Record{}
	for _, r := range recs {
		byID[r.RecordID] = r
	}
	n := 0
	for _, r := range recs {
		if r.Type != "revisit" {
			continue
		}
		n++
		ref := r.Header("WARC-Refers-To")
		o, ok := byID[ref]
		if !ok {
			t.Errorf("%s: revisit %s of %s refers to %s, which is in no WARC file", r.File, r.RecordID, r.TargetURI, ref)
			continue
		}
		if o.Type != "response" || o.PayloadDigest != r.DeclaredPayloadDigest {
			t.Errorf("revisit %s: original %s is a %s with payload digest %s, revisit says %s", r.RecordID, ref, o.Type, o.PayloadDigest, r.DeclaredPayloadDigest)
		}
		if r.Header("WARC-Refers-To-Target-URI") != o.TargetURI {
			t.Errorf("revisit %s: WARC-Refers-To-Target-URI %s, original's %s", r.RecordID, r.Header("WARC-Refers-To-Target-URI"), o.TargetURI)
		}
		if r.Header("WARC-Refers-To-Date") != o.Header("WARC-Date") {
			t.Errorf("revisit %s: WARC-Refers-To-Date %s, original's WARC-Date %s", r.RecordID, r.Header("WARC-Refers-To-Date"), o.Header("WARC-Date"))
		}
	}
	return n
}

// CheckOriginals fails t for every index entry that does not point at a
// complete record in recs with its record id, payload digest and stored
// length at its file and offset.
func CheckOriginals(t testing.TB, recs []Record, originals []dedupindex.Original) {
	t.Helper()
	type loc struct {
		file string
		off  int64
	}
	at := map[loc][]Record{}
	for _, r := range recs {
		at[loc{r.File, r.Offset}] = append(at[loc{r.File, r.Offset}], r)
	}
	for _, o := range originals {
		ok := false
		for _, r := range at[loc{o.File, o.Offset}] {
			ok = ok || r.RecordID == o.RecordID && r.PayloadDigest == o.Digest && r.Length == o.Length
		}
		if !ok {
			t.Errorf("index entry %+v points at no complete matching record", o)
		}
	}
}

// CheckIndexed fails t for every original ix holds under scope for one of
// the URIs that does not point at a complete record in recs (the by-URL
// view reaches every original of a URI, whatever the match policy).
func CheckIndexed(t testing.TB, recs []Record, ix dedupindex.Index, scope string, uris []string) {
	t.Helper()
	ctx := context.Background()
	for _, u := range uris {
		os, err := ix.ByURL(ctx, scope, dedupindex.URLKey(u))
		if err != nil {
			t.Fatal(err)
		}
		CheckOriginals(t, recs, os)
	}
}

// RecordAt checks that the capture c points at its record in dir (in the
// final or the ".open" file): the record read at its offset has its ID.
func RecordAt(dir string, c wayside.Capture) error {
	f, err := os.Open(filepath.Join(dir, c.File+openSuffix))
	if err != nil {
		f, err = os.Open(filepath.Join(dir, c.File))
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := warcio.NewReader(io.NewSectionReader(f, c.Offset, c.Length), c.File)
	rec, err := r.Next()
	if err != nil {
		return err
	}
	if rec.RecordID != c.RecordID {
		return errors.New("record " + rec.RecordID + " at offset, want " + c.RecordID)
	}
	return nil
}

// WarcinfoBlock returns the block of the warcinfo record the WARC file at
// path starts with (failing the test when it does not start with one).
func WarcinfoBlock(t testing.TB, path string) string {
	t.Helper()
	r, err := warcio.Open(path, warcio.Options{KeepPayload: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil || rec.Type != "warcinfo" {
		t.Fatalf("%s: first record %v, %v: want a warcinfo record", path, rec, err)
	}
	return string(rec.Payload)
}
