package sidecar_test

import (
	"bytes"
	"context"
	"html"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestE2EHeritrixExampleConfig runs the Heritrix example as its README
// says: examples/heritrix/wayside.yaml, as shipped but for its paths
// (data_dir and the watched WARC directory rewritten to a temporary
// directory, as TestREADMEExamples does for README commands) and its
// port (a free loopback one), started by the real binary with the two
// tokens in the environment; a WARC lands in the watched directory; then
// the query URL of examples/heritrix/crawler-beans-snippet.cxml (read
// from the file, CDX_TOKEN replaced) is asked as Heritrix's
// WbmPersistLoadProcessor asks it, and its answer parsed as
// getLastCrawl parses it: the newest original's digest and timestamp for
// a captured URI (never a revisit's), nothing for one only revisited or
// never captured; `wayside status -addr SOCKET` as the README shows it.
func TestE2EHeritrixExampleConfig(t *testing.T) {
	root := repoRoot()
	cfg, err := os.ReadFile(filepath.Join(root, "examples", "heritrix", "wayside.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	beans, err := os.ReadFile(filepath.Join(root, "examples", "heritrix", "crawler-beans-snippet.cxml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<property name="queryURL" value="([^"]+)"/>`).FindSubmatch(beans)
	if m == nil {
		t.Fatal("crawler-beans-snippet.cxml sets no queryURL")
	}
	queryURL := html.UnescapeString(string(m[1]))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	text := string(cfg)
	for _, r := range [][2]string{
		{"/var/lib/wayside", "DIR/data"},
		{"/opt/heritrix/jobs/mycrawl/latest/warcs", "DIR/heritrix/warcs"},
		{"127.0.0.1:8181", port},
	} {
		if !strings.Contains(text, r[0]) {
			t.Fatalf("examples/heritrix/wayside.yaml no longer names %s: update this test with it", r[0])
		}
		text = strings.ReplaceAll(text, r[0], r[1])
	}
	if !strings.Contains(queryURL, "127.0.0.1:8181") || !strings.Contains(queryURL, "CDX_TOKEN") {
		t.Fatalf("queryURL %q: not on the example's port or without CDX_TOKEN", queryURL)
	}
	queryURL = strings.ReplaceAll(strings.ReplaceAll(queryURL, "127.0.0.1:8181", port), "CDX_TOKEN", testCDXToken)

	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v1 := bytes.Repeat([]byte("home page version 1 "), 40)
	v2 := bytes.Repeat([]byte("home page version 2 "), 40)
	recs := []warcRec{
		{Type: "response", URI: "http://example.org/", Date: t0, ID: recID(1), Body: v1},
		{Type: "response", URI: "http://example.org/", Date: t0.Add(time.Hour), ID: recID(2), Body: v2},
		{Type: "revisit", URI: "http://example.org/", Date: t0.Add(2 * time.Hour), ID: recID(3), Digest: "sha1:" + sha1B32(v2), RefURI: "http://example.org/", RefDate: t0.Add(time.Hour)},
		{Type: "revisit", URI: "http://example.org/only-revisited", Date: t0, ID: recID(4), Digest: "sha1:" + sha1B32(v1), RefURI: "http://example.org/", RefDate: t0},
	}
	var w bytes.Buffer
	for _, r := range recs {
		w.Write(r.bytes())
	}

	t.Setenv("WAYSIDE_TOKEN", testToken)
	t.Setenv("WAYSIDE_CDX_TOKEN", testCDXToken)
	d := startDaemon(t, dir, text)
	// Heritrix writes X.warc.gz.open and renames it when full.
	open := filepath.Join(dir, "heritrix", "warcs", "WEB-20260102030405-00001.warc.gz.open")
	if err := os.WriteFile(open, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(open, strings.TrimSuffix(open, ".open")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the WARC ingested", func() bool {
		st, err := d.client.Ingest(context.Background())
		return err == nil && st.Records == int64(len(recs))
	})
	for _, tc := range []struct{ uri, digest, ts string }{
		{"http://example.org/", "sha1:" + sha1B32(v2), t0.Add(time.Hour).Format("20060102150405")},
		{"http://example.org/only-revisited", "", ""},
		{"http://example.org/never", "", ""},
	} {
		code, body := heritrixGet(t, strings.ReplaceAll(queryURL, "$u", javaURLEncode(tc.uri)))
		if code != 200 {
			t.Fatalf("%s: status %d: %s", tc.uri, code, body)
		}
		if dg, ts := heritrixLastCrawl(body); dg != tc.digest || ts != tc.ts {
			t.Errorf("%s: Heritrix loads digest %q ts %q, want %q %q (body %q)", tc.uri, dg, ts, tc.digest, tc.ts, body)
		}
	}
	// Without the token the query URL is refused.
	noToken := strings.ReplaceAll(strings.ReplaceAll(queryURL, "/t/"+testCDXToken, ""), "$u", javaURLEncode("http://example.org/"))
	if code, body := heritrixGet(t, noToken); code != 401 && code != 403 {
		t.Errorf("query without the CDX token: status %d %q", code, body)
	}
	if code, out, stderr := runBinary(t, "status", "-addr", d.sock); code != 0 {
		t.Errorf("wayside status -addr SOCKET: exit %d\n%s\n%s", code, out, stderr)
	}
	if err := d.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, d.log())
	}
}
