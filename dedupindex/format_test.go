package dedupindex

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestDetectFormatByContent: index import tells WARC, ARC, CDX and CDXJ
// inputs by what they hold (a WARC named *.bin or *.cdx, a CDXJ named
// *.warc.gz); the name decides only for content that says nothing.
func TestDetectFormatByContent(t *testing.T) {
	shared := testenv.SharedDir(t)
	dir := t.TempDir()
	put := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	warc := read(filepath.Join(shared, "corpus", "warc", "pywb-iana.warc.gz"))
	arc := read(filepath.Join(shared, "corpus", "arc", "warcio-example.arc.gz"))
	for _, tc := range []struct {
		path string
		want Format
	}{
		{put("capture.bin", warc), FormatWARC},
		{put("capture.cdx", warc), FormatWARC},
		{put("capture.warc.gz.open", warc), FormatWARC},
		{put("old.dat", arc), FormatWARC},
		{put("index.warc.gz", []byte("org,example)/ 20240506070809 {\"url\": \"http://example.org/\"}\n")), FormatCDXJ},
		{put("damaged.warc", []byte("\x00\x01 not a record at all\n")), FormatWARC},
	} {
		got, err := detectFormat(tc.path)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", filepath.Base(tc.path), got, err, tc.want)
		}
	}
}
