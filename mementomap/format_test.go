package mementomap

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestDetectFormatByContent: a WARC named *.bin or *.warc.gz.open, an ARC
// named *.txt, a CDXJ named *.log and a MementoMap named *.dat are told by
// what they hold, not by their names; a URI list stays a URI list whatever
// it is called.
func TestDetectFormatByContent(t *testing.T) {
	shared := testenv.SharedDir(t)
	dir := t.TempDir()
	copyAs := func(src, name string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte("http://example.org/\nhttp://example.org/a\n"))
	zw.Close()
	for _, tc := range []struct {
		path string
		want Format
	}{
		{copyAs(filepath.Join(shared, "corpus", "warc", "pywb-iana.warc.gz"), "capture.bin"), FormatWARC},
		{copyAs(filepath.Join(shared, "corpus", "warc", "pywb-iana.warc.gz"), "capture.warc.gz.open"), FormatWARC},
		{copyAs(filepath.Join(shared, "corpus", "warc", "npmwarc-CC-MAIN-20140820021334-00006.warc"), "plain.dat"), FormatWARC},
		{copyAs(filepath.Join(shared, "corpus", "arc", "warcio-example.arc"), "old.txt"), FormatWARC},
		{copyAs(filepath.Join(shared, "corpus", "mementomap", "reference-full.ukvs"), "map.dat"), FormatMap},
		{write("index.log", []byte("org,example)/ 20240506070809 {\"url\": \"http://example.org/\"}\n")), FormatCDXJ},
		{write("index.txt", []byte(" CDX N b a m s k r M S V g\norg,example)/ 20240506070809 http://example.org/ text/html 200 X - - 100 0 a.warc.gz\n")), FormatCDX},
		{write("uris.warc.gz", z.Bytes()), FormatURIList},
		{write("uris.cdxj", []byte("http://example.org/\n")), FormatURIList},
	} {
		if got := DetectFormat(tc.path); got != tc.want {
			t.Errorf("%s: %q, want %q", filepath.Base(tc.path), got, tc.want)
		}
	}
}
