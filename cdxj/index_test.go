package cdxj

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func indexSorted(t *testing.T, paths []string, opts IndexOptions) string {
	t.Helper()
	s := NewSorter(SortOptions{})
	for _, p := range paths {
		st, err := IndexFile(context.Background(), p, opts, s.AddLine)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Problems) > 0 {
			t.Fatalf("%s: %v", p, st.Problems)
		}
	}
	var b bytes.Buffer
	if _, err := s.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPywbCompat: the index of pywb's dupes.warc.gz is byte-identical to
// the one pywb ships (webrecorder/pywb sample_archive/cdxj/dupes.cdxj).
func TestPywbCompat(t *testing.T) {
	path := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-dupes.warc.gz")
	got := indexSorted(t, []string{path}, IndexOptions{Filename: "dupes.warc.gz"})
	want, err := os.ReadFile("testdata/pywb-dupes.cdxj")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("index differs from pywb's:\n--- got\n%s--- want\n%s", got, want)
	}
}

// TestIndexCorpusGolden indexes every corpus WARC into one sorted index and
// compares it with testdata/corpus.cdxj.
func TestIndexCorpusGolden(t *testing.T) {
	got := indexSorted(t, testenv.CorpusWARCs(t), IndexOptions{})
	const path = "testdata/corpus.cdxj"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("corpus index differs from %s (run with -update after checking)", path)
	}
}

// TestIndexLinesLocateRecords: every line's offset and length hold exactly
// one record, the one the line describes.
func TestIndexLinesLocateRecords(t *testing.T) {
	dir := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	idx := indexSorted(t, testenv.CorpusWARCs(t), IndexOptions{})
	lines := strings.Split(strings.TrimSuffix(idx, "\n"), "\n")
	if len(lines) < 100 {
		t.Fatalf("only %d lines", len(lines))
	}
	for _, s := range lines {
		l, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, l.Filename))
		if err != nil {
			t.Fatal(err)
		}
		r := warcio.NewReader(io.NewSectionReader(f, l.Offset, l.Length), l.Filename)
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if rec.TargetURI != l.URL || rec.Length != l.Length || (rec.Type == "revisit") != l.IsRevisit() {
			t.Errorf("line %s locates %s %s (length %d)", s, rec.Type, rec.TargetURI, rec.Length)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("line %s: more than one record in its span: %v", s, err)
		}
		f.Close()
	}
}

// TestIndexSelection: request and warcinfo records are indexed only with
// All; a truncated file yields its complete records and one problem.
func TestIndexSelection(t *testing.T) {
	path := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "warcio-example.warc.gz")
	count := func(opts IndexOptions) (int, Stats) {
		n := 0
		st, err := IndexFile(context.Background(), path, opts, func(*Line) error { n++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		return n, st
	}
	def, st := count(IndexOptions{})
	all, _ := count(IndexOptions{All: true})
	if def != 2 || all != 6 || st.Records != 6 {
		t.Errorf("default %d lines, all %d, records %d; want 2, 6, 6", def, all, st.Records)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.warc.gz.open")
	if err := os.WriteFile(cut, data[:len(data)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	var got []*Line
	st, err = IndexFile(context.Background(), cut, IndexOptions{All: true}, func(l *Line) error { c := *l; got = append(got, &c); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || len(st.Problems) != 1 || !strings.Contains(st.Problems[0].Error(), "truncated") {
		t.Fatalf("%d lines, problems %v", len(got), st.Problems)
	}
	if got[0].Filename != "cut.warc.gz" {
		t.Errorf("filename %q, want the name without .open", got[0].Filename)
	}
}
