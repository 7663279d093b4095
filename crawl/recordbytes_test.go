package crawl

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/crawl/sitetest"
)

// wantsBytes is a captureLog that asks for record bytes.
type wantsBytes struct{ captureLog }

func (*wantsBytes) WantsRecordBytes() bool { return true }

// A consumer that wants record bytes gets, with every capture of a real
// crawl, exactly the uncompressed bytes of the record in the file (what a
// read back would give it); a consumer that does not want them gets none,
// and a writer whose subscriber wants none keeps none.
func TestRecordBytesReachConsumersThatWantThem(t *testing.T) {
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	want, plain := &wantsBytes{captureLog{dir: dir, t: t}}, &captureLog{dir: dir, t: t}
	f := wayside.NewFanout()
	f.Add("wants", want)
	f.Add("plain", plain)
	crawlSite(t, srv, dir, crawlOpts{parallel: 4, subscriber: f})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	caps := want.all()
	if len(caps) < 20 || len(plain.all()) != len(caps) {
		t.Fatalf("%d captures with bytes asked for, %d without", len(caps), len(plain.all()))
	}
	for _, c := range caps {
		if c.RecordBytes == nil {
			t.Fatalf("%s %s offset %d: no record bytes", c.Type, c.URI, c.Offset)
		}
		member, err := os.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(member[c.Offset : c.Offset+c.Length]))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		stored, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stored, c.RecordBytes) {
			t.Fatalf("%s offset %d: record bytes (%d) differ from the record in the file (%d)", c.File, c.Offset, len(c.RecordBytes), len(stored))
		}
	}
	for _, c := range plain.all() {
		if c.RecordBytes != nil {
			t.Fatalf("%s offset %d: record bytes for a consumer that does not want them", c.File, c.Offset)
		}
	}
	// A plain subscriber: the writer keeps no bytes at all.
	dir2 := t.TempDir()
	direct := &captureLog{dir: dir2, t: t}
	crawlSite(t, srv, dir2, crawlOpts{parallel: 4, subscriber: direct})
	for _, c := range direct.all() {
		if c.RecordBytes != nil {
			t.Fatalf("%s offset %d: record bytes kept for a subscriber that does not want them", c.File, c.Offset)
		}
	}
}

func TestHeadContentLength(t *testing.T) {
	for head, want := range map[string]int64{
		"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1234\r\n\r\n": 1234,
		"HTTP/1.1 200 OK\r\ncontent-length:  7 \r\n\r\n":                             7,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n":                      -1,
		"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n":                              -1,
		"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n":                            -1,
		"HTTP/1.1 200 OK\r\nX-Content-Length: 9\r\n\r\n":                             -1,
	} {
		if got := headContentLength([]byte(head)); got != want {
			t.Errorf("%q: %d, want %d", head, got, want)
		}
	}
}
