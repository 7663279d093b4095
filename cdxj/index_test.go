package cdxj

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	digestpkg "github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

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
// the one pywb ships (webrecorder/pywb sample_archive/cdxj/dupes.cdxj),
// except that revisit lines carry the status of their HTTP block, as pywb's
// current indexer (cdxj-indexer, warcio's "http:status" field), warcio.js
// and python warcio write them; the shipped file predates that.
func TestPywbCompat(t *testing.T) {
	path := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-dupes.warc.gz")
	got := indexSorted(t, []string{path}, IndexOptions{Filename: "dupes.warc.gz"})
	revisits := strings.Count(got, `"mime": "warc/revisit", "status": "200", `)
	if revisits != 9 {
		t.Errorf("%d revisit lines carry status 200, want all 9", revisits)
	}
	got = strings.ReplaceAll(got, `"mime": "warc/revisit", "status": "200", `, `"mime": "warc/revisit", `)
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
	golden(t, "testdata/corpus.cdxj", indexSorted(t, testenv.CorpusWARCs(t), IndexOptions{}))
}

// golden compares got with the file at path (ddtest.Golden).
func golden(t *testing.T, path, got string) { t.Helper(); ddtest.Golden(t, path, []byte(got)) }

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

// TestIndexVerify counts the corpus's verified block digests and its
// payload digests written over the chunk framing (Heritrix/JWAT and wget),
// and reports a damaged record as a problem.
func TestIndexVerify(t *testing.T) {
	var blocks, mism, chunked int
	for _, p := range testenv.CorpusWARCs(t) {
		st, err := IndexFile(context.Background(), p, IndexOptions{Verify: true}, func(*Line) error { return nil })
		if err != nil || len(st.Problems) > 0 {
			t.Fatal(err, st.Problems)
		}
		blocks += st.BlockDigestsVerified
		mism += st.PayloadDigestMismatches
		chunked += st.ChunkedDigestMismatches
	}
	if blocks != 231 || mism != 17 || chunked != 17 {
		t.Errorf("verified %d block digests, %d payload mismatches (%d chunked); want 231, 17, 17", blocks, mism, chunked)
	}

	src := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "npmwarc-CC-MAIN-20140820021334-00006.warc")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := warcio.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err != nil {
			t.Fatal("no record with a block digest", err)
		}
		if rec.DeclaredBlockDigest != "" {
			data[rec.End()-10] ^= 1 // inside the block, before the trailer
			break
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.warc")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := IndexFile(context.Background(), bad, IndexOptions{Verify: true}, func(*Line) error { return nil })
	if err != nil || len(st.Problems) != 1 || !strings.Contains(st.Problems[0].Error(), "damaged") {
		t.Fatalf("problems %v, %v", st.Problems, err)
	}
}

func warcRecord(typ, uri, ct, block string, extra ...string) string {
	h := "WARC/1.0\r\nWARC-Type: " + typ + "\r\nWARC-Target-URI: " + uri + "\r\nWARC-Date: 2024-03-01T08:00:00Z\r\n" +
		"WARC-Record-ID: <urn:uuid:" + typ + uri + ">\r\nContent-Type: " + ct + "\r\n"
	for _, x := range extra {
		h += x + "\r\n"
	}
	return h + "Content-Length: " + strconv.Itoa(len(block)) + "\r\n\r\n" + block + "\r\n\r\n"
}

// TestIndexPywbRules covers pywb's rules the corpus does not exercise:
// non-HTTP response records get status 200 and the WARC Content-Type,
// mime is cut at ";" or " " without changing case, "204 Error" has no
// status, WARC-Identified-Payload-Type becomes mime-detected.
func TestIndexPywbRules(t *testing.T) {
	dnsBlock := "20240301080000\nexample.com. 300 IN A 1.2.3.4\n"
	recs := []string{
		warcRecord("response", "dns:example.com", "text/dns", dnsBlock),
		warcRecord("resource", "http://example.com/a.txt", "Text/Plain; charset=utf-8", "hello", "WARC-Identified-Payload-Type: text/plain"),
		warcRecord("response", "http://example.com/e", "application/http; msgtype=response", "HTTP/1.0 204 Error\r\nContent-Type: text/html charset=x\r\n\r\n"),
		warcRecord("metadata", "http://example.com/", "application/warc-fields", "outlink: x\r\n"),
	}
	path := filepath.Join(t.TempDir(), "rules.warc")
	if err := os.WriteFile(path, []byte(strings.Join(recs, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	got := indexSorted(t, []string{path}, IndexOptions{})
	loc := func(i int) string {
		off := 0
		for _, r := range recs[:i] {
			off += len(r)
		}
		// Uncompressed: the length ends with the block, the CRLF pair
		// closing the record is not counted (pywb, warcio).
		return fmt.Sprintf(`"length": "%d", "offset": "%d"`, len(recs[i])-4, off)
	}
	want := `com,example) 20240301080000 {"url": "dns:example.com", "mime": "text/dns", "status": "200", "digest": "` + IndexDigest(digestOf(dnsBlock)) + `", ` + loc(0) + `, "filename": "rules.warc"}
com,example)/a.txt 20240301080000 {"url": "http://example.com/a.txt", "mime": "Text/Plain", "mime-detected": "text/plain", "digest": "` + IndexDigest(digestOf("hello")) + `", ` + loc(1) + `, "filename": "rules.warc"}
com,example)/e 20240301080000 {"url": "http://example.com/e", "mime": "text/html", "digest": "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", ` + loc(2) + `, "filename": "rules.warc"}
`
	if got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}

func digestOf(s string) string { return digestpkg.Of(digestpkg.SHA1, []byte(s)).String() }

// TestIndexPipeAndOpenFile: a complete file is read mapped, a pipe and a
// writer's ".open" file through the buffer; all three give the same index
// (pywb's dupes.warc.gz, indexed under one name).
func TestIndexPipeAndOpenFile(t *testing.T) {
	src := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-dupes.warc.gz")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	opts := IndexOptions{Filename: "dupes.warc.gz"}
	want := indexSorted(t, []string{src}, opts)
	if strings.Count(want, "\n") < 10 {
		t.Fatalf("index of %s has too few lines:\n%s", src, want)
	}

	open := filepath.Join(t.TempDir(), "dupes.warc.gz.open")
	if err := os.WriteFile(open, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := indexSorted(t, []string{open}, opts); got != want {
		t.Errorf(".open file: index differs:\n--- got\n%s--- want\n%s", got, want)
	}

	fifo := filepath.Join(t.TempDir(), "dupes.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			werr <- err
			return
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		werr <- err
	}()
	got := indexSorted(t, []string{fifo}, opts)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("pipe: index differs:\n--- got\n%s--- want\n%s", got, want)
	}
}

// TestIndexHashesOnlyUndeclared: IndexFile without Verify hashes only the
// payloads of records that declare no digest, and writes exactly the lines
// it writes from a reader that hashes every payload (corpus files with
// declared digests the payload does not bear out included).
func TestIndexHashesOnlyUndeclared(t *testing.T) {
	for _, path := range testenv.CorpusWARCs(t) {
		var got, want []string
		if _, err := IndexFile(context.Background(), path, IndexOptions{}, func(l *Line) error {
			got = append(got, l.String())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		r, err := warcio.Open(path, warcio.Options{Map: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Index(context.Background(), r, IndexOptions{Filename: FileName(path)}, func(l *Line) error {
			want = append(want, l.String())
			return nil
		})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: lines differ from a reading that hashes every payload:\n%s\nwant:\n%s", filepath.Base(path), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
