package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/dedupindex"
)

// TestIndexWARCDir crawls the example site and reads the crawl's own
// dedup index with `wayside index --warc-dir`.
func TestIndexWARCDir(t *testing.T) {
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	out, stderr, err := runCLI(context.Background(), "crawl", "--warc-dir", dir, "--robots", "--delay", "0", "--parallel", "1", "--quiet", srv.URL+"/")
	if err != nil {
		t.Fatalf("crawl: %v\n%s", err, stderr)
	}
	m := regexp.MustCompile(`(?m)^\s*responses\s+(\d+)\b`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("crawl summary has no responses line:\n%s", out)
	}
	responses, _ := strconv.Atoi(m[1])
	if responses == 0 {
		t.Fatalf("crawl wrote no responses:\n%s", out)
	}
	// Responses the dedup policy excluded ("not deduplicated  status 2,
	// ...") are written in full but not indexed.
	excluded := 0
	if nd := regexp.MustCompile(`(?m)^\s*not deduplicated\s+(.*)$`).FindStringSubmatch(out); nd != nil {
		for _, n := range regexp.MustCompile(`\d+`).FindAllString(nd[1], -1) {
			v, _ := strconv.Atoi(n)
			excluded += v
		}
	}

	out, _, err = runIndexCLI(t, "stats", "--warc-dir", dir, "--json", "--check")
	if err != nil {
		t.Fatalf("stats --warc-dir: %v", err)
	}
	var st struct {
		dedupindex.Stats
		Dir string `json:"dir"`
		OK  *bool  `json:"ok"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	if want := filepath.Join(dir, crawl.IndexSubdir); st.Dir != want {
		t.Errorf("stats read %s, want %s", st.Dir, want)
	}
	if st.OK == nil || !*st.OK {
		t.Errorf("stats --check did not pass: %s", out)
	}
	// Every response the crawl wrote in full and deduplicates is an
	// original in its index.
	if want := int64(responses - excluded); st.Originals != want || st.Scopes[dedupindex.DefaultScope] != want {
		t.Errorf("index of the crawl holds %d originals, want %d (%d responses, %d not deduplicated):\n%s", st.Originals, want, responses, excluded, out)
	}

	// lookup --warc-dir finds the home page's original by URL.
	out, _, err = runIndexCLI(t, "lookup", "--warc-dir", dir, "--url", srv.URL+"/")
	if err != nil {
		t.Fatalf("lookup --warc-dir --url: %v", err)
	}
	var o dedupindex.Original
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &o); err != nil || o.TargetURI != srv.URL+"/" || o.File == "" {
		t.Fatalf("lookup --url %s/ = %q (%v), want its original", srv.URL, out, err)
	}

	// --index and --warc-dir exclude each other; a missing WARC dir is named.
	_, _, err = runIndexCLI(t, "stats", "--warc-dir", dir, "--index", filepath.Join(dir, crawl.IndexSubdir))
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not both") {
		t.Errorf("stats with --index and --warc-dir = %v, want a usage error", err)
	}
	missing := filepath.Join(dir, "nope")
	if _, _, err := runIndexCLI(t, "import", "--warc-dir", missing, "--quiet", "x.cdxj"); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("import --warc-dir of a missing directory = %v, want an error naming it", err)
	}
}
