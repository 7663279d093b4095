package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
)

// summaryCounts pulls "responses N" and "revisits N identical-payload-digest"
// out of a crawl summary.
func summaryCounts(t *testing.T, out string) (responses, revisits int) {
	t.Helper()
	m := regexp.MustCompile(`responses\s+(\d+)`).FindStringSubmatch(out)
	r := regexp.MustCompile(`revisits\s+(\d+) identical-payload-digest`).FindStringSubmatch(out)
	if m == nil || r == nil {
		t.Fatalf("no counts in summary:\n%s", out)
	}
	responses, _ = strconv.Atoi(m[1])
	revisits, _ = strconv.Atoi(r[1])
	return responses, revisits
}

// TestCrawlPolicyFlags: scopes, read-only scopes, the status filter and the
// time window of the dedup policy are reachable from `wayside crawl`.
func TestCrawlPolicyFlags(t *testing.T) {
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	crawlWith := func(extra ...string) string {
		t.Helper()
		args := append([]string{"crawl", "--warc-dir", dir, "--robots", "--delay", "0", "--parallel", "1", "--quiet"}, extra...)
		out, stderr, err := runCLI(context.Background(), append(args, srv.URL+"/")...)
		if err != nil {
			t.Fatalf("crawl %v: %v\n%s", extra, err, stderr)
		}
		return out
	}
	// Collection "a": 17 responses, 1 in-crawl duplicate (the site serves
	// one logo under two URLs).
	if resp, rev := summaryCounts(t, crawlWith("--scope", "a")); resp != 17 || rev != 1 {
		t.Fatalf("scope a: %d responses, %d revisits; want 17, 1", resp, rev)
	}
	// Collection "b" shares the index but not the originals of "a".
	if resp, rev := summaryCounts(t, crawlWith("--scope", "b")); resp != 17 || rev != 1 {
		t.Errorf("scope b: %d responses, %d revisits; want 17, 1 (a's originals must not be used)", resp, rev)
	}
	// Collection "c" reads "a" (read-only): unchanged payloads become
	// revisits of a's originals...
	outC := crawlWith("--scope", "c", "--read-scopes", "a")
	respC, revC := summaryCounts(t, outC)
	// (3 payloads change between crawls of the example site; the other 15
	// are the same, as the conditional re-crawl in TestCrawlCommand shows.)
	if respC != 3 || revC != 15 {
		t.Errorf("scope c reading a: %d responses, %d revisits; want 3, 15", respC, revC)
	}
	// ... and nothing was written into "a": a fresh collection reading "a"
	// again gets exactly the same decisions.
	if resp, rev := summaryCounts(t, crawlWith("--scope", "d", "--read-scopes", "a")); resp != respC || rev != revC {
		t.Errorf("scope d reading a: %d/%d, want %d/%d like scope c (a read-only scope must not change)", resp, rev, respC, revC)
	}
	// A window shorter than the time since a's crawl: a's originals are too
	// old, the new captures become originals again.
	if resp, rev := summaryCounts(t, crawlWith("--scope", "a", "--window", "1ns")); rev != 0 || resp != 18 {
		t.Errorf("scope a with --window 1ns: %d responses, %d revisits; want 18, 0", resp, rev)
	}
	// Status filter: deduplicating only 404s leaves every 2xx payload in full.
	if resp, rev := summaryCounts(t, crawlWith("--scope", "e", "--dedup-status", "404")); rev != 0 || resp != 18 {
		t.Errorf("scope e with --dedup-status 404: %d responses, %d revisits; want 18, 0", resp, rev)
	}
	for _, bad := range [][]string{{"--dedup-status", "abc"}, {"--window", "-1h"}} {
		args := append([]string{"crawl", "--warc-dir", t.TempDir()}, bad...)
		_, _, err := runCLI(context.Background(), append(args, srv.URL+"/")...)
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("crawl %v: error %v, want a usage error naming the flag", bad, err)
		}
	}
}
