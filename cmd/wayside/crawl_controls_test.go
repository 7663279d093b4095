package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/internal/warctest"
)

// heritrixLine is one line of a Heritrix 3 crawl.log, parsed from the
// field list of Heritrix's documentation (wiki "Logs", crawl.log):
// timestamp (ISO8601, ms), fetch status code, document size (content
// only), downloaded URI, discovery path (breadcrumb hop codes, "-" for a
// seed), referrer ("-" for a seed), MIME type, worker thread ID ("#NNN"),
// fetch timestamp (17 digits, when the fetch began) "+" duration in ms,
// SHA-1 digest ("sha1:" + Base32), source tag, annotations (comma
// separated). Fields are separated by runs of spaces (status and size are
// padded); "-" is an empty field.
type heritrixLine struct {
	Logged      time.Time
	Status      int
	Size        int64 // -1 for "-"
	URI         string
	Path        string
	Via         string
	MIME        string
	Worker      int
	FetchStart  time.Time
	FetchMillis int64
	Digest      string
	Source      string
	Annotations []string
}

var (
	hopCodes   = regexp.MustCompile(`^(\d+\+)?[LPRXEIMS]+$`) // Heritrix's Hop letters; "N+" counts hops left out
	workerID   = regexp.MustCompile(`^#\d{3,}$`)
	fetchStamp = regexp.MustCompile(`^(\d{17})\+(\d+)$`)
	sha1Base32 = regexp.MustCompile(`^sha1:[A-Z2-7]{32}$`)
)

func parseHeritrixLine(line string) (heritrixLine, error) {
	var l heritrixLine
	f := strings.Fields(line)
	if len(f) != 12 {
		return l, fmt.Errorf("%d fields, want 12", len(f))
	}
	dash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	var err error
	if l.Logged, err = time.Parse("2006-01-02T15:04:05.000Z", f[0]); err != nil {
		return l, fmt.Errorf("timestamp: %w", err)
	}
	if l.Status, err = strconv.Atoi(f[1]); err != nil {
		return l, fmt.Errorf("status: %w", err)
	}
	l.Size = -1
	if f[2] != "-" {
		if l.Size, err = strconv.ParseInt(f[2], 10, 64); err != nil || l.Size < 0 {
			return l, fmt.Errorf("size %q", f[2])
		}
	}
	l.URI = f[3]
	if !strings.HasPrefix(l.URI, "http://") && !strings.HasPrefix(l.URI, "https://") {
		return l, fmt.Errorf("URI %q", l.URI)
	}
	if l.Path = dash(f[4]); l.Path != "" && !hopCodes.MatchString(l.Path) {
		return l, fmt.Errorf("discovery path %q", f[4])
	}
	l.Via = dash(f[5])
	l.MIME = dash(f[6])
	if !workerID.MatchString(f[7]) {
		return l, fmt.Errorf("worker %q", f[7])
	}
	l.Worker, _ = strconv.Atoi(f[7][1:])
	if f[8] != "-" {
		m := fetchStamp.FindStringSubmatch(f[8])
		if m == nil {
			return l, fmt.Errorf("fetch timestamp %q", f[8])
		}
		if l.FetchStart, err = time.Parse("20060102150405.000", m[1][:14]+"."+m[1][14:]); err != nil {
			return l, fmt.Errorf("fetch timestamp: %w", err)
		}
		l.FetchMillis, _ = strconv.ParseInt(m[2], 10, 64)
	}
	if l.Digest = dash(f[9]); l.Digest != "" && !sha1Base32.MatchString(l.Digest) {
		return l, fmt.Errorf("digest %q", f[9])
	}
	l.Source = dash(f[10])
	if a := dash(f[11]); a != "" {
		l.Annotations = strings.Split(a, ",")
	}
	return l, nil
}

func readHeritrixLog(t *testing.T, path string) []heritrixLine {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []heritrixLine
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		l, err := parseHeritrixLine(sc.Text())
		if err != nil {
			t.Fatalf("%s line %d: %v\n%s", path, n, err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

// fetchedURIs lists the target URIs of the response and revisit records
// of the WARC files in dir, sorted.
func fetchedURIs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, r := range warctest.ReadDirs(t, dir) {
		if r.Type == "response" || r.Type == "revisit" {
			out = append(out, r.TargetURI)
		}
	}
	sort.Strings(out)
	return out
}

func sha1B32(b []byte) string {
	s := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// TestCrawlControls crawls a loopback site with a robots.txt naming a
// sitemap index (one sitemap gzip-compressed), with --exclude and
// --exclude-host: exactly the pinned URLs are fetched (as the WARC records
// and the server's own request log show), and crawl.log, read by a parser
// written from Heritrix's field list, has a line for each of them with the
// site's own sizes, digests and types, the discovery paths, and one
// -9998 line for the page robots.txt disallows.
func TestCrawlControls(t *testing.T) {
	srv, reqs, err := sitetest.StartWith(sitetest.NewControls)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// The discovery paths below are the setup's, not the machine's speed:
	// robots.txt names the sitemap index, so one worker can walk
	// sitemap-index.xml → sitemaps/more.xml → /blog/ (PMMM) while the other
	// still fetches or parses the seed, and then /blog/ and its embeds
	// (/css/site.css, /js/app.js, /img/logo.png, and /img/bg.png through
	// the CSS) would be found from /blog/ first. more.xml is the only
	// sitemap listing a URL a page also links, so the site holds its answer
	// until the crawler requests one of the seed's links: a URL it can only
	// know from the seed (more.xml, which also names /blog/, is not
	// answered yet), and the seed's links and embeds are queued all at once
	// when it is parsed. This cannot deadlock: the seed is queued first, so
	// it is in progress or done when more.xml is requested; the worker
	// waiting on more.xml holds one of the crawl's 2 connections to the
	// host (--parallel 2 sets MaxConnsPerHost 2), robots.txt is already
	// loaded, and the other worker works through the FIFO queue, which
	// holds the seed's links, on the other connection. The bound only stops
	// a hang; --timeout 5m keeps the crawler's own response-header timeout
	// (30s by default) from ending the hold before it.
	srv.Hold("/sitemaps/more.xml", srv.Site.Resource(sitetest.Root).Links, 3*time.Minute)
	base := srv.URL
	local := strings.Replace(base, "127.0.0.1", "localhost", 1)
	dir := t.TempDir()
	out, stderr, err := runCLI(context.Background(), "crawl", "--warc-dir", dir, "--sitemap", "--exclude", `/archive/`,
		"--exclude-host", "localhost", "--prefix", base+"/,"+local+"/", "--delay", "0", "--parallel", "2", "--timeout", "5m", "--quiet", base+"/")
	if herr := srv.Err(); herr != nil {
		t.Fatalf("the site's hold on /sitemaps/more.xml: %v\ncrawl: %v\n%s\n%s", herr, err, out, stderr)
	}
	if err != nil {
		t.Fatalf("crawl: %v\n%s\n%s", err, out, stderr)
	}
	want := []string{
		"/", "/about.html", "/blog/", "/blog/2024/first-post.html", "/blog/2024/second-post.html",
		"/css/site.css", "/feed.html", "/img/banner.jpg", "/img/bg.png", "/img/logo.png", "/img/photo.jpg",
		"/js/app.js", "/media/talk.bin", "/missing.html", "/news.html", "/old-about",
		"/orphan/a.html", "/orphan/b.html", "/orphan/c.html", // only in sitemaps (c: linked from a)
		"/robots.txt", "/sitemap-index.xml", "/sitemaps/more.xml", "/sitemaps/pages.xml.gz",
		"/static/logo-v2.png",
	}
	var wantURIs, wantReqs []string
	for _, p := range want {
		wantURIs = append(wantURIs, base+p)
		wantReqs = append(wantReqs, strings.TrimPrefix(base, "http://")+" "+p)
	}
	sort.Strings(wantURIs)
	sort.Strings(wantReqs)
	if got := fetchedURIs(t, dir); !slices.Equal(got, wantURIs) {
		t.Errorf("URLs in the WARC files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantURIs, "\n"))
	}
	if got := reqs.Requests(); !slices.Equal(got, wantReqs) {
		t.Errorf("requests the site answered:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantReqs, "\n"))
	}
	for _, w := range []string{"excluded 3,", "robots.txt skipped 2", "sitemaps 3)"} {
		if !strings.Contains(out, w) {
			t.Errorf("summary lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "stopped:") {
		t.Errorf("a crawl that ran out of URLs says it stopped early:\n%s", out)
	}

	if b, _ := os.ReadFile(filepath.Join(dir, "crawl.log")); os.Getenv("DEBUG_CRAWLLOG") != "" {
		t.Logf("crawl.log:\n%s\nstderr:\n%s", b, stderr)
	}
	lines := readHeritrixLog(t, filepath.Join(dir, "crawl.log"))
	byURI := map[string]heritrixLine{}
	var logged []string
	for _, l := range lines {
		if _, dup := byURI[l.URI]; dup {
			t.Errorf("crawl.log has %s twice", l.URI)
		}
		byURI[l.URI] = l
		if l.Status > 0 {
			logged = append(logged, l.URI)
		}
	}
	sort.Strings(logged)
	if !slices.Equal(logged, wantURIs) {
		t.Errorf("crawl.log fetched URIs:\n%s\nwant:\n%s", strings.Join(logged, "\n"), strings.Join(wantURIs, "\n"))
	}
	if len(lines) != len(wantURIs)+2 {
		t.Errorf("crawl.log has %d lines, want %d fetched + 2 robots-precluded", len(lines), len(wantURIs))
	}
	if l := byURI[base+"/private/notes.html"]; l.Status != -9998 || l.Path != "L" || l.Via != base+"/" {
		t.Errorf("robots-precluded line %+v, want status -9998, discovery path L from the seed", l)
	}
	if l := byURI[base+"/private/hidden.html"]; l.Status != -9998 || l.FetchStart != (time.Time{}) || l.Size != -1 || l.Path != "PMMM" {
		t.Errorf("robots-precluded line %+v, want status -9998, no fetch, discovery path PMMM", l)
	}
	paths := map[string][2]string{ // URI → discovery path, referrer
		"/":                           {"", ""},
		"/robots.txt":                 {"P", base + "/"},
		"/sitemap-index.xml":          {"PM", base + "/robots.txt"},
		"/sitemaps/pages.xml.gz":      {"PMM", base + "/sitemap-index.xml"},
		"/sitemaps/more.xml":          {"PMM", base + "/sitemap-index.xml"},
		"/orphan/a.html":              {"PMMM", base + "/sitemaps/pages.xml.gz"},
		"/orphan/c.html":              {"PMMML", base + "/orphan/a.html"},
		"/about.html":                 {"L", base + "/"},
		"/blog/":                      {"L", base + "/"}, // also in more.xml, answered only after the seed's links are queued
		"/blog/2024/first-post.html":  {"LL", base + "/blog/"},
		"/blog/2024/second-post.html": {"LL", base + "/blog/"},
		"/old-about":                  {"L", base + "/"},
		"/css/site.css":               {"E", base + "/"}, // <link rel="stylesheet">
		"/js/app.js":                  {"E", base + "/"}, // <script src>
		"/img/logo.png":               {"E", base + "/"}, // <img src>
		"/img/banner.jpg":             {"E", base + "/"},
		"/img/bg.png":                 {"EE", base + "/css/site.css"}, // CSS url() of an embed
		"/static/logo-v2.png":         {"LE", base + "/about.html"},
	}
	for p, pv := range paths {
		l := byURI[base+p]
		if l.Path != pv[0] || l.Via != pv[1] {
			t.Errorf("%s: discovery path %q via %q, want %q via %q", p, l.Path, l.Via, pv[0], pv[1])
		}
	}
	// A path is the whole path of its referrer plus one hop (/img/photo.jpg
	// is embedded by both posts: which is parsed first is a race).
	for p, hop := range map[string]string{"/blog/2024/first-post.html": "L", "/img/photo.jpg": "E"} {
		l := byURI[base+p]
		if via := byURI[l.Via]; via.URI == "" || l.Path != via.Path+hop || p == "/img/photo.jpg" && !strings.Contains(l.Via, "/blog/2024/") {
			t.Errorf("%s: discovery path %q via %q (path %q), want the referrer's path and %s", p, l.Path, l.Via, via.Path, hop)
		}
	}
	dups := 0
	for _, l := range lines {
		if l.Status <= 0 {
			continue
		}
		if l.Logged.Before(l.FetchStart) || l.FetchStart.IsZero() {
			t.Errorf("%s: logged %s before its fetch began %s", l.URI, l.Logged, l.FetchStart)
		}
		if l.Worker < 0 || l.Worker >= 2 {
			t.Errorf("%s: worker #%d of 2", l.URI, l.Worker)
		}
		if slices.Contains(l.Annotations, "duplicate:digest") {
			dups++
			if !strings.HasSuffix(l.URI, "/img/logo.png") && !strings.HasSuffix(l.URI, "/static/logo-v2.png") {
				t.Errorf("%s annotated duplicate:digest; only one of the two logo copies should be", l.URI)
			}
		}
		r := srv.Site.Resource(strings.TrimPrefix(l.URI, base))
		if r == nil {
			t.Errorf("%s: not on the site", l.URI)
			continue
		}
		if l.Status != r.Status {
			t.Errorf("%s: status %d, the site sent %d", l.URI, l.Status, r.Status)
		}
		if r.Dynamic || r.RedirectTo != "" {
			continue
		}
		served := r.Served(true) // the crawler accepts gzip; the record keeps the encoding
		if l.Size != int64(len(served)) || l.Digest != sha1B32(served) {
			t.Errorf("%s: size %d digest %s, the site sent %d bytes %s", l.URI, l.Size, l.Digest, len(served), sha1B32(served))
		}
		if mime, _, _ := strings.Cut(r.ContentType, ";"); l.MIME != mime {
			t.Errorf("%s: MIME %q, the site sent %q", l.URI, l.MIME, r.ContentType)
		}
	}
	if dups != 1 {
		t.Errorf("%d lines annotated duplicate:digest, want 1 (the logo served under two URLs)", dups)
	}
}

// TestCrawlSeedsFileInclude: --seeds FILE (comments and blank lines
// skipped) and --include keep the crawl to the pinned URLs; a bad line is
// named by file and line number.
func TestCrawlSeedsFileInclude(t *testing.T) {
	srv, reqs, err := sitetest.StartWith(sitetest.NewControls)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	os.WriteFile(seeds, []byte("# two seeds\n\n"+srv.URL+"/orphan/a.html\n  "+srv.URL+"/blog/  \n"), 0o644)
	out, stderr, err := runCLI(context.Background(), "crawl", "--warc-dir", dir, "--seeds", seeds, "--include", `/orphan/`, "--include", `/blog/`,
		"--delay", "0", "--parallel", "1", "--quiet")
	if err != nil {
		t.Fatalf("crawl: %v\n%s\n%s", err, out, stderr)
	}
	var want []string
	for _, p := range []string{"/blog/", "/blog/2024/first-post.html", "/blog/2024/second-post.html", "/orphan/a.html", "/orphan/c.html", "/robots.txt"} {
		want = append(want, srv.URL+p)
	}
	if got := fetchedURIs(t, dir); !slices.Equal(got, want) {
		t.Errorf("fetched:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(reqs.Requests()); n != len(want) {
		t.Errorf("the site answered %d requests, want %d", n, len(want))
	}

	// --ignore-robots: robots.txt is neither fetched nor obeyed.
	dir = t.TempDir()
	if _, stderr, err := runCLI(context.Background(), "crawl", "--warc-dir", dir, "--ignore-robots", "--include", `^http://[^/]+/(private/.*)?$`,
		"--delay", "0", "--quiet", srv.URL+"/"); err != nil {
		t.Fatalf("crawl --ignore-robots: %v\n%s", err, stderr)
	}
	if got, want := fetchedURIs(t, dir), []string{srv.URL + "/", srv.URL + "/private/notes.html"}; !slices.Equal(got, want) {
		t.Errorf("--ignore-robots fetched %v, want %v", got, want)
	}

	os.WriteFile(seeds, []byte(srv.URL+"/\nftp://example.com/\n"), 0o644)
	_, _, err = runCLI(context.Background(), "crawl", "--warc-dir", t.TempDir(), "--seeds", seeds, "--quiet")
	if err == nil || !strings.Contains(err.Error(), seeds+" line 2") {
		t.Errorf("bad seed line: error %v, want one naming %s line 2", err, seeds)
	}
	for _, args := range [][]string{
		{"--include", "(", srv.URL + "/"},
		{"--exclude", "/blog/", srv.URL + "/blog/"},
		{"--exclude-host", "127.0.0.1", srv.URL + "/"},
		{"--size-limit", "-1", srv.URL + "/"},
	} {
		_, _, err := runCLI(context.Background(), append([]string{"crawl", "--warc-dir", t.TempDir(), "--quiet"}, args...)...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
}

// TestCrawlLimitsStopCleanly: --time-limit and --size-limit end a crawl
// that could not finish in time or space with exit status 0, closed and
// valid WARC files, and a summary line naming the limit.
func TestCrawlLimitsStopCleanly(t *testing.T) {
	// 120 incompressible 20 KB resources; with --delay 50ms the crawl
	// takes at least 6 s, so a 1 s time limit always ends it first.
	srv, err := sitetest.Start(sitetest.NewLarge(120, 20<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"time", []string{"--time-limit", "1s", "--delay", "50ms"}, "stopped:             time limit 1s reached"},
		{"size", []string{"--size-limit", "300000", "--delay", "0"}, "stopped:             size limit 300000 bytes reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"crawl", "--warc-dir", dir, "--parallel", "1", "--quiet", "--ignore-robots"}, tc.flags...)
			out, stderr, err := runCLI(context.Background(), append(args, srv.URL+"/")...)
			if err != nil {
				t.Fatalf("crawl: %v (want exit 0)\n%s\n%s", err, out, stderr)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("summary lacks %q:\n%s", tc.want, out)
			}
			got := fetchedURIs(t, dir)
			if len(got) == 0 || len(got) >= 121 {
				t.Errorf("%d URLs fetched, want some but not all 121", len(got))
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(m) != 0 {
				t.Errorf("files left open: %v", m)
			}
			var stored int64
			for _, p := range warctest.Files(t, dir, false) {
				testenv.StrictWARC(t, p)
				fi, _ := os.Stat(p)
				stored += fi.Size()
			}
			if tc.name == "size" && (stored < 300000 || stored > 300000+2*(21<<10)+8<<10) {
				t.Errorf("WARC files hold %d bytes; the limit 300000 should be met and passed by at most one response", stored)
			}
			lines := readHeritrixLog(t, filepath.Join(dir, "crawl.log"))
			if len(lines) != len(got) {
				t.Errorf("crawl.log has %d lines for %d fetches", len(lines), len(got))
			}
		})
	}
}
