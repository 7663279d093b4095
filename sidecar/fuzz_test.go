package sidecar

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCDXQuery: any query string gives a CDX answer or a 4xx with a JSON
// error — never a panic or a 5xx.
func FuzzCDXQuery(f *testing.F) {
	for _, s := range []string{
		"url=http://example.com/&limit=-1",
		"url=x&fl=timestamp,digest&filter=!mimetype:warc/revisit&limit=-1",
		"url=x&filter=~digest:A&filter=status:2..&sort=reverse&from=2024&to=2025",
		"url=x&filter=digest:(&limit=abc",
		"url=x&output=json&matchType=exact&gzip=false",
		"url=%zz",
	} {
		f.Add(s)
	}
	srv := newTestServer(f)
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, q string) {
		if strings.ContainsAny(q, " #\r\n") {
			return
		}
		req := httptest.NewRequest("GET", "/cdx", nil)
		req.URL.RawQuery = q
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, req)
		if rr.Code >= 500 {
			t.Fatalf("%q: status %d: %s", q, rr.Code, rr.Body)
		}
		if rr.Code >= 400 && !strings.HasPrefix(rr.Body.String(), `{"error":`) {
			t.Fatalf("%q: %d without a JSON error: %s", q, rr.Code, rr.Body)
		}
	})
}

// FuzzParseConfig: any YAML gives a Config or an error, never a panic; an
// error after parsing names a key.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"listen:\n  tcp: 127.0.0.1:8181\n  token: ${T:-0123456789abcdef0}\n",
		"ingest:\n  dirs: [a, b]\n  poll_interval: 1s\n",
		"fixity:\n  sweeps:\n  - name: x\n    urims: [u]\n    schedule: '@daily'\n    archive_hosts: [h]\n",
		"{}", "- a\n- b\n", "listen: [",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig([]byte(s), "fuzz.yaml", func(string) string { return "" })
		if err != nil {
			return
		}
		c.Defaults()
		if err := c.Validate(); err != nil && !strings.Contains(err.Error(), "sidecar: config: ") {
			t.Fatalf("validation error without a key: %v", err)
		}
	})
}
