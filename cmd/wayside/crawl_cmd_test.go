package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/crawl/sitetest"
)

func runCLI(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = run(ctx, args, &env{stdout: &o, stderr: &e, getenv: func(string) string { return "" }})
	return o.String(), e.String(), err
}

func TestCrawlCommand(t *testing.T) {
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	args := []string{"crawl", "--warc-dir", dir, "--warc-prefix", "CRAWLER-A", "--robots", "--delay", "0", "--parallel", "1", "--quiet", srv.URL + "/"}
	out, stderr, err := runCLI(context.Background(), args...)
	if err != nil {
		t.Fatalf("first crawl: %v\n%s", err, stderr)
	}
	for _, want := range []string{"pages fetched        18", "responses            17", "revisits             1 identical-payload-digest, 0 server-not-modified"} {
		if !strings.Contains(out, want) {
			t.Errorf("first summary lacks %q:\n%s", want, out)
		}
	}
	out, stderr, err = runCLI(context.Background(), append([]string{"crawl", "--conditional"}, args[1:]...)...)
	if err != nil {
		t.Fatalf("second crawl: %v\n%s", err, stderr)
	}
	for _, want := range []string{"responses            3", "revisits             8 identical-payload-digest, 7 server-not-modified", "collisions           0"} {
		if !strings.Contains(out, want) {
			t.Errorf("second summary lacks %q:\n%s", want, out)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(m) != 0 {
		t.Errorf("files left open: %v", m)
	}
	all, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	named, _ := filepath.Glob(filepath.Join(dir, "CRAWLER-A-*.warc.gz"))
	if len(all) == 0 || len(named) != len(all) {
		t.Errorf("WARC files %v, want every one named CRAWLER-A-…", all)
	}
}

func TestCrawlCommandBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"crawl", "--warc-dir", t.TempDir(), "http://exa mple.com/"}, `"http://exa mple.com/"`},
		{[]string{"crawl", "--warc-dir", t.TempDir(), "ftp://example.com/"}, `"ftp://example.com/"`},
		{[]string{"crawl", "--warc-dir", t.TempDir(), "--verify", "sometimes", "http://example.com/"}, `"sometimes"`},
		{[]string{"crawl", "--warc-dir", t.TempDir(), "--warc-version", "0.17", "http://example.com/"}, `"0.17"`},
		{[]string{"crawl", "--warc-dir", t.TempDir()}, "no URL"},
		{[]string{"crawl", "--warc-dir", t.TempDir(), "--prefix", "http://example.com/a/", "http://example.com/b/"}, "http://example.com/b/"},
		{[]string{"crawl", "--warc-dir", t.TempDir(), "--warc-prefix", "../up", "http://example.com/"}, `"../up"`},
		{[]string{"crawl", "--warc-dir", t.TempDir(), "--warc-prefix", "", "http://example.com/"}, `--warc-prefix ""`},
	} {
		_, _, err := runCLI(context.Background(), tc.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want a usage error mentioning %s", tc.args, err, tc.want)
		}
	}
}

// TestCrawlCommandInterrupt cancels a crawl while a slow resource is being
// fetched (once the server has its request and the crawl has a WARC file
// open): the command returns cleanly, leaves no .open file, and did not
// wait for the slow resource (no record of it).
func TestCrawlCommandInterrupt(t *testing.T) {
	site := sitetest.New()
	site.Add(&sitetest.Resource{Path: "/media/talk.bin", ContentType: "application/octet-stream", Body: sitetest.Blob(1, 64<<10), Slow: 30 * time.Second})
	fetching := make(chan struct{})
	var once sync.Once
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/media/talk.bin" {
			once.Do(func() { close(fetching) })
		}
		site.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-fetching:
		case <-ctx.Done():
			return
		}
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(m) > 0 {
				break
			}
		}
		cancel()
	}()
	out, stderr, err := runCLI(ctx, "crawl", "--warc-dir", dir, "--delay", "0", "--parallel", "2", "--quiet", "http://"+ln.Addr().String()+"/")
	if err != nil {
		t.Fatalf("interrupted crawl: %v\n%s", err, stderr)
	}
	select {
	case <-fetching:
	default:
		t.Fatalf("the crawl ended before it fetched the slow resource\n%s", stderr)
	}
	if ctx.Err() == nil {
		t.Fatalf("the crawl ended before it was cancelled\n%s", stderr)
	}
	warcs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, w := range warcs {
		index, stderr, err := runCLI(context.Background(), "cdxj", "-q", w)
		if err != nil {
			t.Fatalf("cdxj %s: %v\n%s", w, err, stderr)
		}
		if strings.Contains(index, "/media/talk.bin") {
			t.Errorf("the slow resource was recorded: the crawl waited for it instead of stopping on cancel\n%s", index)
		}
	}
	if !strings.Contains(stderr, "interrupted") || !strings.Contains(out, "summary") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(m) != 0 {
		t.Errorf("files left open: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz")); len(m) == 0 {
		t.Errorf("no WARC written before the interrupt")
	}
}

func TestDemoCommand(t *testing.T) {
	dir := t.TempDir()
	out, stderr, err := runCLI(context.Background(), "demo", "--dir", dir)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr)
	}
	for _, want := range []string{"== Crawl 1", "== Crawl 2", "crawl 2 summary", "Revisits written by crawl 2:", "server-not-modified", "identical-payload-digest"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "server-not-modified  ") < 7 {
		t.Errorf("demo lists fewer than 7 server-not-modified revisits:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "dedup-index")); err != nil {
		t.Errorf("no dedup index in %s: %v", dir, err)
	}
	// The sidecar step ingests both WARCs and answers as it would answer
	// Heritrix: one IA 7-field line for about.html with a 14-digit
	// timestamp and a 32-character Base32 digest in field 6.
	if !strings.Contains(out, "ingested 74 records from 2 WARC files") {
		t.Errorf("demo sidecar did not report ingesting both crawls' 74 records:\n%s", out)
	}
	cdxLine := regexp.MustCompile(`(?m)^  \S+\)/about\.html \d{14} http://127\.0\.0\.1:\d+/about\.html text/html 200 [A-Z2-7]{32} \d+$`)
	if !cdxLine.MatchString(out) {
		t.Errorf("demo sidecar CDX answer for about.html is not a Heritrix-parsable 7-field line:\n%s", out)
	}
	if !regexp.MustCompile(`first-post\.html\s+yes: key`).MatchString(out) || !regexp.MustCompile(`not-crawled\s+no`).MatchString(out) {
		t.Errorf("demo MementoMap lookups wrong:\n%s", out)
	}
	if fi, err := os.Stat(filepath.Join(dir, "sidecar", "wayside.sock")); err == nil {
		t.Errorf("sidecar socket left behind after the demo: %v", fi.Mode())
	}
	// The crawls filed their originals under --scope demo; a lookup in
	// the crawl's index without --scope searches every scope and finds
	// them (it used to search "default" only and find nothing).
	site := regexp.MustCompile(`Example site running at (\S+)`).FindStringSubmatch(out)
	if site == nil {
		t.Fatalf("demo does not say where its site runs:\n%s", out)
	}
	lout, lerr, err := runCLI(context.Background(), "index", "lookup", "--warc-dir", dir, "--url", site[1]+"/about.html")
	if err != nil || !strings.Contains(lout, `"scope":"demo"`) || !strings.Contains(lout, site[1]+"/about.html") {
		t.Errorf("index lookup --warc-dir after the demo: %v\n%s%s", err, lout, lerr)
	}
	// The index the sidecar built from the two crawls passes its check.
	out, stderr, err = runCLI(context.Background(), "index", "stats", "--check", "--index", filepath.Join(dir, "sidecar", "index"))
	if err != nil || !strings.Contains(out, "check:      ok") {
		t.Errorf("index stats --check of the sidecar's index: %v\n%s%s", err, out, stderr)
	}
}
