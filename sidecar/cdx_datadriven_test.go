package sidecar

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/ddtest"
)

// TestCDXQueriesDataDriven runs the CDX queries of testdata/cdx_queries.txt
// against a fixed set of originals and compares status and body with the
// expected output (go test -run TestCDXQueriesDataDriven -update rewrites it).
//
// File format: package ddtest's; a case is "query <path?query>"
// (optionally followed by "header <Name>: <value>" lines), "----", then the
// expected "status <code>" line and body lines.
func TestCDXQueriesDataDriven(t *testing.T) {
	h := newTestServer(t).Handler()
	runCDXFile(t, h, filepath.Join("testdata", "cdx_queries.txt"))
}

// newTestServer returns a server (not running) over a pebble index holding
// a fixed set of originals, filed as ingest files them.
func newTestServer(t testing.TB) *Server {
	dir := t.TempDir()
	idx, err := pebble.Open(filepath.Join(dir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	ctx := context.Background()
	t0 := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, o := range []struct {
		uri, body string
		at        time.Duration
		status    int
		mime      string
	}{
		{"http://example.com/a", "a1", 0, 200, "text/html"},
		{"http://example.com/a", "a2", time.Hour, 200, "text/html"},
		{"https://www.example.com/a", "a3", 48 * time.Hour, 203, "text/html"},
		{"http://example.com/img.png", "png", 0, 200, "image/png"},
		{"http://example.com/space path", "sp", 0, 200, ""},
	} {
		dg := digest.Of(digest.SHA1, []byte(o.body)).String()
		orig := dedupindex.Original{Digest: dg, TargetURI: o.uri, Date: t0.Add(o.at), RecordID: fmt.Sprintf("<urn:uuid:%d>", i),
			File: "f.warc.gz", Offset: int64(i) * 100, Length: 100, PayloadLength: 1000, Status: o.status, MIME: o.mime}
		// As ingest files it under the default index.match (digest).
		if _, err := idx.Put(ctx, dedupindex.Key{Scope: "default", Digest: dg}, orig); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{DataDir: dir}
	cfg.Map.Path = "-"
	cfg.Defaults()
	srv, err := New(cfg, Options{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func runCDXFile(t *testing.T, h http.Handler, path string) {
	ddtest.Run(t, path, func(t *testing.T, c *ddtest.Case) string {
		if c.Cmd != "query" || len(c.Args) != 1 {
			t.Fatalf("%s: a case is 'query PATH?QUERY', not %q", c.Pos, c.Cmd)
		}
		q := c.Args[0]
		req := httptest.NewRequest(http.MethodGet, q, nil)
		for _, l := range strings.Split(strings.TrimSuffix(c.Input, "\n"), "\n") {
			if l == "" {
				continue
			}
			hv, ok := strings.CutPrefix(l, "header ")
			name, val, ok2 := strings.Cut(hv, ": ")
			if !ok || !ok2 {
				t.Fatalf("%s: bad line %q", c.Pos, l)
			}
			req.Header.Set(name, val)
		}
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, req)
		got := fmt.Sprintf("status %d", rr.Code)
		body := rr.Body.String()
		if ce := rr.Header().Get("Content-Encoding"); ce != "" {
			// The encoded body is decoded and compared like any other:
			// "encoding gzip" says it came compressed.
			got += " encoding " + ce
			if ce != "gzip" {
				t.Fatalf("%s: %s: unexpected Content-Encoding %q", c.Pos, q, ce)
			}
			zr, err := gzip.NewReader(rr.Body)
			if err != nil {
				t.Fatalf("%s: %s: gzip body: %v", c.Pos, q, err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s: %s: gzip body: %v", c.Pos, q, err)
			}
			body = string(plain)
		}
		if body = strings.TrimRight(body, "\n"); body != "" {
			got += "\n" + body
		}
		return got
	})
}
