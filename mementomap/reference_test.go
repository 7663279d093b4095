package mementomap

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// corpusCaptureURIs returns the URI of every capture (response, revisit,
// resource, conversion) in the WARC files, read through the one
// record→Capture converter.
func corpusCaptureURIs(t *testing.T, warcs []string) []string {
	t.Helper()
	var uris []string
	for _, p := range warcs {
		r, err := warcio.Open(p, warcio.Options{SkipPayloadDigest: true})
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if err == io.EOF || errors.Is(err, warcio.ErrTruncated) {
				break
			}
			if err != nil {
				continue
			}
			if c := rec.Capture(p); c.IsCapture() && c.URI != "" {
				if _, err := KeyFor(c.URI); err == nil { // http(s) only
					uris = append(uris, c.URI)
				}
			}
		}
		r.Close()
	}
	return uris
}

// writeGenerated generates the full map of files into path.
func writeGenerated(t *testing.T, path string, files []string) {
	t.Helper()
	g := NewGenerator(GenerateOptions{SkipBad: true})
	defer g.Close()
	for _, p := range files {
		if err := g.AddFile(context.Background(), p, FormatAuto); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	err := WriteFileAtomic(path, func(w io.Writer) error { _, err := g.WriteTo(w); return err })
	if err != nil {
		t.Fatal(err)
	}
}

// mergeFiles merges map files into dir/name.
func mergeFiles(t *testing.T, dir, name string, paths ...string) string {
	t.Helper()
	var maps []*Map
	for _, p := range paths {
		m, err := OpenMap(p)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		maps = append(maps, m)
	}
	out := filepath.Join(dir, name)
	if err := WriteFileAtomic(out, func(w io.Writer) error { _, err := Merge(w, maps, paths); return err }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReferenceMapsAnswerEveryCorpusURI: the maps the reference
// implementation wrote from the shared corpus (host roots spelled
// "com,example)", no headers, M counts only) answer every URI captured in
// the corpus present — as read, merged with a Wayside map of the same
// corpus, and compacted further by Wayside — and still answer absent for
// hosts the corpus does not hold.
func TestReferenceMapsAnswerEveryCorpusURI(t *testing.T) {
	warcs := testenv.CorpusWARCs(t)
	ref := filepath.Join(testenv.SharedDir(t), "corpus", "mementomap")
	full, compact := filepath.Join(ref, "reference-full.ukvs"), filepath.Join(ref, "reference-compact.ukvs")
	uris := corpusCaptureURIs(t, warcs)
	if len(uris) < 100 {
		t.Fatalf("only %d captures in the corpus", len(uris))
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "wayside.ukvs")
	writeGenerated(t, own, warcs)
	further := filepath.Join(dir, "compacted.ukvs")
	if _, err := CompactFile(context.Background(), full, further, CompactOptions{Wh: 0.5, Wp: 0.5, NoSync: true}); err != nil {
		t.Fatal(err)
	}
	maps := []struct{ name, path string }{
		{"reference-full", full},
		{"reference-compact", compact},
		{"merge(reference-full, wayside)", mergeFiles(t, dir, "m1.ukvs", full, own)},
		{"merge(wayside, reference-compact)", mergeFiles(t, dir, "m2.ukvs", own, compact)},
		{"merge(reference-full, reference-compact)", mergeFiles(t, dir, "m3.ukvs", full, compact)},
		{"compact(reference-full, w=0.5)", further},
	}
	for _, mp := range maps {
		m, err := OpenMap(mp.path)
		if err != nil {
			t.Fatalf("%s: %v", mp.name, err)
		}
		if err := m.Check(); err != nil {
			t.Fatalf("%s: %v", mp.name, err)
		}
		var s Scratch
		missing := 0
		for _, u := range uris {
			k, err := ParseTarget(u)
			if err != nil {
				t.Fatalf("%s: %v", u, err)
			}
			if got, err := m.Lookup(k, &s); err != nil || !got.Present {
				missing++
				if missing <= 5 {
					t.Errorf("%s: %s (key %s) answered absent (%v)", mp.name, u, k, err)
				}
			}
		}
		if missing > 0 {
			t.Errorf("%s: %d of %d corpus captures answered absent", mp.name, missing, len(uris))
		}
		for _, u := range []string{"http://unseen.example.net/", "https://www.example.org/", "http://iana.com/"} {
			if got, _ := m.Lookup([]byte(mustKey(t, u)), &s); got.Present {
				t.Errorf("%s: %s answered present via %s: the map claims too much", mp.name, u, got.Key)
			}
		}
		m.Close()
	}
	if fi, err := os.Stat(full); err != nil || fi.Size() == 0 {
		t.Fatalf("reference map: %v", err)
	}
}

func mustKey(t *testing.T, uri string) string {
	t.Helper()
	k, err := KeyFor(uri)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
