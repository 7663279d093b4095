package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/warctest"
)

// `wayside crawl --operator --description --is-part-of` puts them in the
// warcinfo record of every WARC file written (issue 26 item 2); a bad
// --rotate-after is a usage error.
func TestCrawlWarcinfoFlags(t *testing.T) {
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	_, stderr, err := runCLI(context.Background(), "crawl", "--warc-dir", dir, "--delay", "0", "--quiet", "--rotate-after", "1h",
		"--operator", "Example Library <web@example.org>", "--description", "a test crawl", "--is-part-of", "test-collection", srv.URL+"/")
	if err != nil {
		t.Fatalf("crawl: %v\n%s", err, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) == 0 {
		t.Fatal("no WARC file")
	}
	for _, f := range files {
		block := warctest.WarcinfoBlock(t, f)
		for _, want := range []string{"operator: Example Library <web@example.org>\r\n", "description: a test crawl\r\n", "isPartOf: test-collection\r\n"} {
			if !strings.Contains(block, want) {
				t.Errorf("%s: warcinfo lacks %q:\n%s", f, want, block)
			}
		}
	}
	_, _, err = runCLI(context.Background(), "crawl", "--warc-dir", t.TempDir(), "--rotate-after", "-1s", srv.URL+"/")
	if ue := (usageError{}); !errors.As(err, &ue) {
		t.Errorf("--rotate-after -1s: %v, want a usage error (exit 2)", err)
	}
}
