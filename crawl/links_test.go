package crawl

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

// TestExtractLinks runs link extraction over testdata/links/* and compares
// with the .links golden files (go test -run TestExtractLinks -update
// rewrites them).
func TestExtractLinks(t *testing.T) {
	files, _ := filepath.Glob("testdata/links/*")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".links") {
			continue
		}
		n++
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mime := "text/html"
		if strings.HasSuffix(f, ".css") {
			mime = "text/css"
		}
		base, _ := url.Parse("http://example.org/section/" + filepath.Base(f))
		var b strings.Builder
		for _, l := range extractLinks(base, mime, body) {
			b.WriteByte(l.hop)
			b.WriteByte(' ')
			b.WriteString(l.u.String())
			b.WriteByte('\n')
		}
		ddtest.Golden(t, f+".links", []byte(b.String()))
	}
	if n == 0 {
		t.Fatal("no testdata")
	}
}

func FuzzExtractLinks(f *testing.F) {
	for _, p := range []string{"testdata/links/page.html", "testdata/links/style.css"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, strings.HasSuffix(p, ".css"))
	}
	f.Add([]byte("<a href='\x00:%zz'>"), false)
	base, _ := url.Parse("http://example.org/")
	f.Fuzz(func(t *testing.T, body []byte, css bool) {
		mime := "text/html"
		if css {
			mime = "text/css"
		}
		for _, l := range extractLinks(base, mime, body) {
			if u := l.u; u.Scheme != "http" && u.Scheme != "https" || u.Fragment != "" || l.hop != HopLink && l.hop != HopEmbed {
				t.Fatalf("bad link %q (hop %c)", u, l.hop)
			}
		}
	})
}

// TestPrecompressed: which responses are stored as they are in their
// record's gzip member (already compressed) and which are deflated.
func TestPrecompressed(t *testing.T) {
	for _, tc := range []struct {
		ct, ce string
		want   bool
	}{
		{"image/jpeg", "", true},
		{"image/PNG", "", true},
		{"font/woff2", "", true},
		{"video/mp4", "", true},
		{"audio/mpeg", "", true},
		{"application/zip", "", true},
		{"text/html; charset=utf-8", "gzip", true},
		{"application/javascript", "br", true},
		{"text/html", "identity", false},
		{"text/html", "", false},
		{"image/svg+xml", "", false},
		{"image/bmp", "", false},
		{"audio/wav", "", false},
		{"application/json", "", false},
		{"", "", false},
	} {
		h := http.Header{}
		if tc.ct != "" {
			h.Set("Content-Type", tc.ct)
		}
		if tc.ce != "" {
			h.Set("Content-Encoding", tc.ce)
		}
		if got := precompressed(h); got != tc.want {
			t.Errorf("Content-Type %q, Content-Encoding %q: precompressed %t, want %t", tc.ct, tc.ce, got, tc.want)
		}
	}
}
