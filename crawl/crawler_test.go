package crawl

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/warcfile"
)

// fetchedPaths crawls srv with cfg (Recorder and Seeds filled in) and
// returns the paths of the URLs recorded.
func fetchedPaths(t *testing.T, srv *sitetest.Server, cfg CrawlConfig, prefixes []string) ([]string, CrawlStats) {
	t.Helper()
	seed, _ := ParseSeed(srv.URL + "/")
	scope, err := NewScope([]*url.URL{seed}, prefixes)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := openTestSession(t, dir, Options{Allow: scope.Allow}, warcfile.WriterOptions{})
	cfg.Seeds, cfg.Recorder, cfg.Scope = []*url.URL{seed}, s.Recorder, scope
	c, err := NewCrawler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, wr := range readDir(t, dir) {
		if wr.rec.Type == "request" {
			u, _ := url.Parse(wr.rec.TargetURI)
			paths = append(paths, u.Path)
		}
	}
	sort.Strings(paths)
	return paths, c.Stats()
}

// closure returns the sorted paths reachable from Root within depth hops
// (redirects do not count), per the site definition.
func closure(site *sitetest.Site, depth int, keep func(string) bool) []string {
	type it struct {
		p string
		d int
	}
	seen := map[string]bool{sitetest.Root: true}
	q := []it{{sitetest.Root, 0}}
	var out []string
	for len(q) > 0 {
		cur := q[0]
		q = q[1:]
		out = append(out, cur.p)
		r := site.Resource(cur.p)
		if r.Status >= 400 {
			continue
		}
		for _, l := range r.Links {
			d := cur.d + 1
			if r.RedirectTo != "" {
				d = cur.d
			}
			if seen[l] || (depth >= 0 && d > depth) || !keep(l) {
				continue
			}
			seen[l] = true
			q = append(q, it{l, d})
		}
	}
	sort.Strings(out)
	return out
}

func TestCrawlerScope(t *testing.T) {
	site := sitetest.New()
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	all := func(string) bool { return true }

	got, st := fetchedPaths(t, srv, CrawlConfig{MaxDepth: 1, IgnoreRobots: true}, nil)
	if want := closure(site, 1, all); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("depth 1:\n got %v\nwant %v", got, want)
	}
	if st.OutOfScope == 0 {
		t.Errorf("the off-site footer link was not counted out of scope: %+v", st)
	}

	got, _ = fetchedPaths(t, srv, CrawlConfig{MaxDepth: -1, MaxPages: 5, IgnoreRobots: true}, nil)
	if len(got) != 5 {
		t.Errorf("max-pages 5: fetched %d: %v", len(got), got)
	}

	// With a prefix, only the seed (let in explicitly) and /blog/ URLs.
	blog := func(p string) bool { return strings.HasPrefix(p, "/blog/") }
	got, _ = fetchedPaths(t, srv, CrawlConfig{MaxDepth: -1, IgnoreRobots: true}, []string{srv.URL + "/", srv.URL + "/blog/"})
	if want := closure(site, -1, all); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("prefix = whole site:\n got %v\nwant %v", got, want)
	}
	seedURL, _ := ParseSeed(srv.URL + "/blog/")
	scope, _ := NewScope([]*url.URL{seedURL}, []string{srv.URL + "/blog/"})
	dir := t.TempDir()
	s := openTestSession(t, dir, Options{Allow: scope.Allow}, warcfile.WriterOptions{})
	c, err := NewCrawler(CrawlConfig{Seeds: []*url.URL{seedURL}, Recorder: s.Recorder, Scope: scope, MaxDepth: -1, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var paths []string
	for _, wr := range readDir(t, dir) {
		if wr.rec.Type == "request" {
			u, _ := url.Parse(wr.rec.TargetURI)
			paths = append(paths, u.Path)
		}
	}
	sort.Strings(paths)
	var want []string
	for _, p := range site.Paths() {
		if blog(p) && site.Resource(p).Status < 400 {
			want = append(want, p)
		}
	}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("prefix /blog/:\n got %v\nwant %v", paths, want)
	}
}

// TestCrawlerGroupCommit: the crawler hands the wait for durability off
// and fetches on, so records of many fetches share fsyncs; the order
// claim → write → fsync → commit holds (every revisit refers to a record
// durable before it), a fetch that meets the pending claim of another
// waits for it and becomes a revisit, and every fetch gets its crawl.log
// line, with its digest, once durable.
func TestCrawlerGroupCommit(t *testing.T) {
	const pages, distinct = 60, 4
	srv, err := sitetest.Start(sitetest.NewDuplicates(1, pages, distinct, 4096, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seed, _ := ParseSeed(srv.URL + "/s0/")
	dir := t.TempDir()
	s := openTestSession(t, dir, Options{MaxConnsPerHost: 8}, warcfile.WriterOptions{})
	clog, err := OpenCrawlLog(filepath.Join(dir, CrawlLogName))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCrawler(CrawlConfig{Seeds: []*url.URL{seed}, Recorder: s.Recorder, MaxDepth: -1, Parallel: 8, Log: clog, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs, st := c.Stats(), s.Recorder.Stats()
	ix := s.Index
	syncs := s.Writer.Stats().Syncs
	if err := s.Writer.Check(); err != nil {
		t.Error(err)
	}
	if err := errors.Join(s.Writer.Close(), clog.Close()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("%d fetches, %d WARC fsyncs", cs.Pages, syncs)
	if cs.Pages != pages+1 || cs.Errors != 0 {
		t.Errorf("crawl stats %+v, want %d pages", cs, pages+1)
	}
	if st.Responses != distinct+1 || st.RevisitsDigest != pages-distinct || st.Pending != 0 {
		t.Errorf("recorder stats %+v: want %d responses (the section page and one per distinct payload), %d revisits, none pending",
			st, distinct+1, pages-distinct)
	}
	b, err := os.ReadFile(filepath.Join(dir, CrawlLogName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	dups := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 12 || !strings.HasPrefix(f[9], "sha1:") {
			t.Errorf("crawl.log line without a digest: %q", l)
			continue
		}
		if f[11] == "duplicate:digest" {
			dups++
		}
	}
	if len(lines) != pages+1 || dups != pages-distinct {
		t.Errorf("crawl.log: %d lines (want %d), %d duplicate:digest (want %d)", len(lines), pages+1, dups, pages-distinct)
	}
	checkReferences(t, dir, ix, srv.URLs())
	validateStrict(t, dir)
}

// TestCrawlerObeysRobotsByDefault: the zero-value CrawlConfig fetches,
// records and obeys robots.txt (the example site disallows /private/);
// IgnoreRobots is the explicit opt-out.
func TestCrawlerObeysRobotsByDefault(t *testing.T) {
	site := sitetest.New()
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	private := func(p string) bool { return strings.HasPrefix(p, "/private/") }
	got, st := fetchedPaths(t, srv, CrawlConfig{MaxDepth: -1}, nil)
	want := append(closure(site, -1, func(p string) bool { return !private(p) }), "/robots.txt")
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("default config:\n got %v\nwant %v", got, want)
	}
	if st.Robots == 0 {
		t.Errorf("no URL counted as skipped by robots.txt: %+v", st)
	}
	got, st = fetchedPaths(t, srv, CrawlConfig{MaxDepth: -1, IgnoreRobots: true}, nil)
	if want := closure(site, -1, func(string) bool { return true }); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("IgnoreRobots:\n got %v\nwant %v", got, want)
	}
	if n := len(slices.DeleteFunc(got, func(p string) bool { return !private(p) })); n == 0 || st.Robots != 0 {
		t.Errorf("IgnoreRobots: %d /private/ URLs fetched, %d skipped by robots.txt; want some fetched, none skipped", n, st.Robots)
	}
}
