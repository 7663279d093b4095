package characterize

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"compress/gzip"
	"github.com/andybalholm/brotli"

	"github.com/wayside-archive/wayside/internal/corpustest"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

type member struct {
	name string
	data []byte
}

func zipOf(t testing.TB, ms ...member) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	zw.Create("docs/") // a directory entry: not an object
	for _, m := range ms {
		w, err := zw.Create(m.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func tarOf(t testing.TB, ms ...member) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range ms {
		tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)})
		tw.Write(m.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzipOf(data []byte, name string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Name = name
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// response is an HTTP response record for warcio's encoder.
func response(uri, ctype string, body []byte, extra ...string) *warcio.Draft {
	var h bytes.Buffer
	fmt.Fprintf(&h, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n", ctype, len(body))
	for _, e := range extra {
		if strings.HasPrefix(e, "WARC-") {
			continue
		}
		h.WriteString(e + "\r\n")
	}
	h.WriteString("\r\n")
	h.Write(body)
	r := &warcio.Draft{Type: "response", ID: warcio.NewRecordID(), Date: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC),
		Fields: []warcio.Field{{Name: "WARC-Target-URI", Value: uri}, {Name: "Content-Type", Value: "application/http; msgtype=response"}},
		Block:  h.Bytes()}
	for _, e := range extra {
		if n, v, ok := strings.Cut(e, ": "); ok && strings.HasPrefix(e, "WARC-") {
			r.Fields = append(r.Fields, warcio.Field{Name: n, Value: v})
		}
	}
	return r
}

// writeWARC writes recs with warcfile's writer into a new directory and
// returns the path of the closed WARC file.
func writeWARC(t testing.TB, recs ...*warcio.Draft) string {
	t.Helper()
	dir, err := os.MkdirTemp(tempRoot, "warc-")
	if err != nil {
		t.Fatal(err)
	}
	w, err := warcfile.OpenWriter(warcfile.WriterOptions{Dir: dir, Hostname: "test", NoCDXJ: true, Now: func() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	wr, err := w.Write(recs...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WaitDurable(context.Background(), wr); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, wr.Placements[0].File)
}

func zeros(n int) []byte { return make([]byte, n) }

func random(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// corruptMember flips bytes in the compressed data of the named member.
func corruptMember(t testing.TB, z []byte, name string) []byte {
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			off, err := f.DataOffset()
			if err != nil {
				t.Fatal(err)
			}
			c := append([]byte(nil), z...)
			for i := off + int64(f.CompressedSize64)/2; i < off+int64(f.CompressedSize64)-2; i += 7 {
				c[i] ^= 0x5a
			}
			return c
		}
	}
	t.Fatalf("no member %s", name)
	return nil
}

// nestedWARC builds the test WARC: containers inside payloads (a zip with
// a PNG and a PDF, a tar.gz holding a zip, a WARC inside the WARC) and bad
// input (corrupt members, bombs, truncated and unknown payloads).
func nestedWARC(t testing.TB) string {
	nestedOnce.Do(func() { nestedPath = buildNestedWARC(t) })
	if nestedPath == "" {
		t.Fatal("the nested test WARC could not be built")
	}
	return nestedPath
}

var (
	nestedOnce sync.Once
	nestedPath string
)

func buildNestedWARC(t testing.TB) string {
	png := corpustest.Payload(t, "pywb-iana.warc.gz", "http://www.iana.org/_img/2013.1/iana-logo-homepage.png")
	pdf := corpustest.Payload(t, "aut-example.pdf.warc.gz", "https://yorkspace.library.yorku.ca/xmlui/bitstream/handle/10315/36158/cost-analysis.pdf?sequence=1&isAllowed=y")
	svg := corpustest.Payload(t, "pywb-iana.warc.gz", "http://www.iana.org/_img/2013.1/icann-logo.svg")
	html := []byte("<!DOCTYPE html>\n<html><head><title>t</title></head><body><p>archived</p></body></html>\n")
	css := []byte("body { color: #333; margin: 0 auto; }\n.nav a { text-decoration: none }\n")
	bundle := zipOf(t, member{"img/logo.png", png}, member{"docs/report.pdf", pdf})

	// The embedded WARC: records of its own, one holding a zip.
	inner := writeWARC(t,
		response("http://inner.example/", "text/html", html),
		response("http://inner.example/logo.svg", "image/svg+xml", svg),
		response("http://inner.example/bundle.zip", "application/zip", zipOf(t, member{"a.png", png})))
	innerBytes, err := os.ReadFile(inner)
	if err != nil {
		t.Fatal(err)
	}

	var br bytes.Buffer
	bw := brotli.NewWriter(&br)
	bw.Write(css)
	bw.Close()

	bomb := zipOf(t, member{"bomb.bin", zeros(4 << 20)}, member{"ok.png", png})
	half := bundle[:len(bundle)/2]
	deep := zipOf(t, member{"l1.zip", zipOf(t, member{"l2.zip", zipOf(t, member{"l3.zip", zipOf(t, member{"deep.png", png})})})})
	many := make([]member, 30)
	for i := range many {
		many[i] = member{fmt.Sprintf("f%02d.html", i), html}
	}

	return writeWARC(t,
		response("http://example.org/bundle.zip", "application/zip", bundle),
		response("http://example.org/archive.tar.gz", "application/gzip", gzipOf(tarOf(t, member{"site/index.html", html}, member{"site/files.zip", zipOf(t, member{"x.pdf", pdf})}), "archive.tar")),
		response("http://example.org/crawl.warc.gz", "application/warc", innerBytes),
		response("http://example.org/page.html", "text/html; charset=utf-8", gzipOf(html, ""), "Content-Encoding: gzip"),
		response("http://example.org/style.css", "text/css", br.Bytes(), "Content-Encoding: br"),
		response("http://example.org/corrupt.zip", "application/zip", corruptMember(t, bundle, "docs/report.pdf")),
		response("http://example.org/bomb.zip", "application/zip", bomb),
		response("http://example.org/bomb.gz", "application/gzip", gzipOf(zeros(4<<20), "zeros.bin")),
		response("http://example.org/cut.zip", "application/zip", half, "WARC-Truncated: length"),
		response("http://example.org/blob", "application/octet-stream", random(1, 5000)),
		response("http://example.org/empty", "text/plain", nil),
		response("http://example.org/notgzip.html", "text/html", html, "Content-Encoding: gzip"),
		response("http://example.org/deep.zip", "application/zip", deep),
		response("http://example.org/many.zip", "application/zip", zipOf(t, many...)),
	)
}

// TestNested characterizes containers inside payloads recursively, and bad
// input as notes, never errors: the output is pinned in testdata/nested.txt
// and the facts that matter are asserted here too.
func TestNested(t *testing.T) {
	path := nestedWARC(t)
	st := openStore(t, "", StoreOptions{})
	c := newCharacterizer(t, st, Options{Identifier: testIdentifier(t, Limits{MaxObjects: 25})})
	if problems := scanAll(t, c, path); len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	golden(t, "nested.txt", render(st, false)) // sizes vary with the random record IDs

	name := filepath.Base(path)
	byURI := map[string]Record{}
	for _, r := range st.Records(name) {
		byURI[r.URI] = r
	}
	find := func(uri string, path ...string) Object {
		t.Helper()
		r := byURI[uri]
		for _, o := range r.Objects() {
			if strings.Join(o.Path, " → ") == strings.Join(path, " → ") {
				return o
			}
		}
		t.Fatalf("%s: no object at %q; objects: %+v", uri, path, r.Objects())
		return Object{}
	}
	expect := func(o Object, puid, note string) {
		t.Helper()
		if (puid != "*" && o.PUID != puid) || !strings.Contains(o.Note, note) || (note == "" && o.Note != "") {
			t.Errorf("%v: got %s %q, want %s with a note containing %q", o.Path, o.PUID, o.Note, puid, note)
		}
	}
	// A zip holding a PNG and a PDF.
	expect(find("http://example.org/bundle.zip"), "x-fmt/263", "")
	expect(find("http://example.org/bundle.zip", "img/logo.png"), "fmt/12", "")
	expect(find("http://example.org/bundle.zip", "docs/report.pdf"), "fmt/19", "")
	// gzip → tar → zip → PDF.
	expect(find("http://example.org/archive.tar.gz", "archive.tar", "site/files.zip", "x.pdf"), "fmt/19", "")
	// A WARC inside the WARC: its records, and the zip in one of them.
	expect(find("http://example.org/crawl.warc.gz"), "x-fmt/266", "")
	warcName := "crawl.warc" // the gzip member's name: the URL's, without .gz
	expect(find("http://example.org/crawl.warc.gz", warcName), "fmt/1281", "")
	expect(find("http://example.org/crawl.warc.gz", warcName, "http://inner.example/logo.svg"), "fmt/92", "")
	expect(find("http://example.org/crawl.warc.gz", warcName, "http://inner.example/bundle.zip", "a.png"), "fmt/12", "")
	// Content-Encoding removed before identification.
	expect(find("http://example.org/page.html"), "fmt/471", "")
	expect(find("http://example.org/style.css"), "x-fmt/224", "")
	// Bad input: notes, not failures.
	expect(find("http://example.org/corrupt.zip", "docs/report.pdf"), Unknown, "corrupt member") // a PDF cut before its %%EOF
	expect(find("http://example.org/corrupt.zip", "img/logo.png"), "fmt/12", "")
	expect(find("http://example.org/bomb.zip", "bomb.bin"), Unknown, "decompression bomb")
	expect(find("http://example.org/bomb.zip", "ok.png"), "fmt/12", "")
	expect(find("http://example.org/bomb.gz", "zeros.bin"), "*", "decompression bomb") // identified from the bytes read
	expect(find("http://example.org/cut.zip"), Unknown, "payload truncated")
	expect(find("http://example.org/blob"), Unknown, "")
	expect(find("http://example.org/empty"), Unknown, "empty payload") // an identification (EmptyFormat), not none
	expect(find("http://example.org/notgzip.html"), "fmt/471", "Content-Encoding gzip not removed")
	expect(find("http://example.org/deep.zip", "l1.zip", "l2.zip", "l3.zip"), "x-fmt/263", "depth limit")
	if n := len(byURI["http://example.org/many.zip"].Nested); n >= 30 {
		t.Errorf("many.zip: %d nested objects despite MaxObjects 25", n)
	}
	expect(find("http://example.org/many.zip"), "x-fmt/263", "only the first 25 nested objects")
	sum, aggs, _ := st.Container(name)
	if sum.Records != 14 || sum.Empty != 1 {
		t.Errorf("summary %+v", sum)
	}
	var nestedPNG int64
	for _, a := range aggs {
		if a.PUID == "fmt/12" {
			nestedPNG = a.NestedObjects
		}
	}
	// bundle.zip, the embedded WARC's zip, corrupt.zip and bomb.zip; the
	// one in deep.zip is below the depth limit.
	if nestedPNG != 4 {
		t.Errorf("nested PNG objects: %d, want 4", nestedPNG)
	}
}

// TestBadPayloadsNeverStall feeds bad captures through the consumer path
// (OnCapture, read back from the WARC file) and checks they are all stored
// with notes within a bounded time.
func TestBadPayloadsNeverStall(t *testing.T) {
	path := nestedWARC(t)
	st := openStore(t, "", StoreOptions{})
	c := newCharacterizer(t, st, Options{Dirs: []string{filepath.Dir(path)}})
	r, err := warcio.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		cp := rec.Capture(filepath.Base(path))
		if cp.IsCapture() {
			n++
		}
		if err := c.OnCapture(context.Background(), cp); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (stats %+v)", err, c.Stats())
	}
	if s := c.Stats(); s.Records != int64(n) || s.Failed != 0 {
		t.Errorf("stats %+v, want %d records, no failure", s, n)
	}
	if got := len(st.Records(filepath.Base(path))); got != n {
		t.Errorf("%d records stored, want %d", got, n)
	}
}
