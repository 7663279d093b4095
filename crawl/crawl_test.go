package crawl

import (
	"crypto/sha1"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/dedupindex"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
	"github.com/wayside-archive/wayside/warcio"
)

// expectation is what a crawl of the example site must write, derived from
// the site definition alone.
type expectation struct {
	fetched   int // URLs fetched (robots.txt included)
	responses int
	revDigest int
	revNotMod int
}

// reachable returns the resources a robots-obeying crawl from the root
// fetches: the link closure of Root, robots.txt, minus disallowed paths.
func reachable(site *sitetest.Site) []*sitetest.Resource {
	seen := map[string]bool{"/robots.txt": true}
	out := []*sitetest.Resource{site.Resource("/robots.txt")}
	queue := []string{sitetest.Root}
	seen[sitetest.Root] = true
	for len(queue) > 0 {
		r := site.Resource(queue[0])
		queue = queue[1:]
		if r.Disallowed {
			continue
		}
		out = append(out, r)
		if r.Status >= 400 {
			continue
		}
		for _, l := range r.Links {
			if !seen[l] {
				seen[l] = true
				queue = append(queue, l)
			}
		}
	}
	return out
}

func dedupable(r *sitetest.Resource) bool {
	return r.Status/100 == 2 && !r.Dynamic && len(r.Served(true)) > 0
}

// expectFirst: an empty index; every payload seen before in the same crawl
// becomes a revisit (sequential crawl, so no claim is pending).
func expectFirst(site *sitetest.Site) expectation {
	var e expectation
	groups := map[[20]byte]int{}
	for _, r := range reachable(site) {
		e.fetched++
		if dedupable(r) {
			groups[sha1.Sum(r.Served(true))]++
		}
	}
	for _, n := range groups {
		e.revDigest += n - 1
	}
	e.responses = e.fetched - e.revDigest
	return e
}

// expectSecond: every dedupable payload is in the index; with conditional
// requests, resources with validators (each an original under its own URL,
// checked below) answer 304.
func expectSecond(t *testing.T, site *sitetest.Site, conditional bool) expectation {
	var e expectation
	groups := map[[20]byte]int{}
	for _, r := range reachable(site) {
		if dedupable(r) {
			groups[sha1.Sum(r.Served(true))]++
		}
	}
	for _, r := range reachable(site) {
		e.fetched++
		switch {
		case conditional && r.Validators:
			if groups[sha1.Sum(r.Served(true))] != 1 {
				t.Fatalf("site definition: %s has validators and shares its payload; the expectation assumes it is its own original", r.Path)
			}
			e.revNotMod++
		case dedupable(r):
			e.revDigest++
		default:
			e.responses++
		}
	}
	return e
}

func checkStats(t *testing.T, name string, st Stats, e expectation) {
	t.Helper()
	got := expectation{fetched: int(st.Fetches), responses: int(st.Responses), revDigest: int(st.RevisitsDigest), revNotMod: int(st.RevisitsNotMod)}
	if got != e {
		t.Errorf("%s: got %+v, want %+v (stats %+v)", name, got, e, st)
	}
	if st.Errors != 0 || st.Collisions != 0 || st.Pending != 0 || st.Truncated != 0 {
		t.Errorf("%s: unexpected errors/collisions/pending/truncated: %+v", name, st)
	}
}

// countTypes counts records by type and revisit profile in dir.
func countTypes(t testing.TB, dir string) map[string]int {
	m := map[string]int{}
	for _, wr := range readDir(t, dir) {
		k := wr.rec.Type
		if k == "revisit" {
			k += " " + wr.rec.Header("WARC-Profile")
		}
		m[k]++
	}
	return m
}

func TestCrawlSiteTwice(t *testing.T) {
	for _, tc := range []struct {
		name        string
		conditional bool
		version     string
		verify      Verify
	}{
		{"digest-1.1", false, warcio.Version11, VerifySize},
		{"conditional-1.1", true, warcio.Version11, VerifySize},
		{"conditional-1.0", true, warcio.Version10, VerifySize},
		{"bytes-1.0", false, warcio.Version10, VerifyBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := sitetest.New()
			srv, err := sitetest.Start(site)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			dir := t.TempDir()
			log1 := &captureLog{dir: dir, t: t}
			st1 := crawlSite(t, srv, dir, crawlOpts{version: tc.version, parallel: 1, subscriber: log1, verify: tc.verify})
			e1 := expectFirst(site)
			checkStats(t, "first crawl", st1, e1)
			log2 := &captureLog{dir: dir, t: t}
			st2 := crawlSite(t, srv, dir, crawlOpts{version: tc.version, parallel: 1, conditional: tc.conditional, verify: tc.verify, subscriber: log2})
			e2 := expectSecond(t, site, tc.conditional)
			checkStats(t, "second crawl", st2, e2)
			if e2.revDigest == 0 || (tc.conditional && e2.revNotMod == 0) {
				t.Fatalf("site yields no revisits: %+v", e2)
			}

			// What is on disk matches the counters, with version-matched profiles.
			types := countTypes(t, dir)
			want := map[string]int{
				"warcinfo": len(warcFiles(t, dir, false)),
				"request":  e1.fetched + e2.fetched,
				"response": e1.responses + e2.responses,
				"revisit " + warcio.IdenticalPayloadProfile(tc.version): e1.revDigest + e2.revDigest,
			}
			if e2.revNotMod > 0 {
				want["revisit "+warcio.NotModifiedProfile(tc.version)] = e2.revNotMod
			}
			if len(types) != len(want) {
				t.Errorf("record types %v, want %v", types, want)
			}
			for k, v := range want {
				if types[k] != v {
					t.Errorf("%s records: %d, want %d (all: %v)", k, types[k], v, types)
				}
			}
			for _, wr := range readDir(t, dir) {
				if !strings.HasPrefix(wr.rec.Version, "1.") || wr.rec.Version != tc.version {
					t.Fatalf("record version %s, want %s", wr.rec.Version, tc.version)
				}
			}
			if got := len(log1.all()); got != 2*e1.fetched {
				t.Errorf("first crawl delivered %d captures, want %d", got, 2*e1.fetched)
			}
			// The CDXJ file beside each WARC is `wayside cdxj` of it, byte
			// for byte (sorted, since the WARC is closed), and holds the
			// lines of exactly the captures delivered.
			var cdxFiles []string
			for _, w := range warcFiles(t, dir, false) {
				side := filepath.Join(dir, cdxj.SideFileName(filepath.Base(w)))
				cdxFiles = append(cdxFiles, side)
				if got, want := readFile(t, side), indexOf(t, w); got != want {
					t.Errorf("%s differs from `wayside cdxj %s`:\n%s\n---\n%s", side, filepath.Base(w), got, want)
				}
			}
			merged := cdxjtest.CheckSorted(t, cdxFiles)
			if want := e1.fetched + e2.fetched; len(merged) != want {
				t.Errorf("%d CDXJ lines, want %d (one per response or revisit)", len(merged), want)
			}
			var delivered []string
			for _, c := range append(log1.all(), log2.all()...) {
				if c.Type != "request" {
					l := cdxj.FromCapture(c)
					delivered = append(delivered, l.String())
				}
			}
			sort.Strings(delivered)
			if strings.Join(delivered, "\n") != strings.Join(merged, "\n") {
				t.Errorf("the delivered captures' lines differ from the CDXJ files")
			}
			checkCaptures(t, dir, append(log1.all(), log2.all()...))
			validateStrict(t, dir)
			ix, err := dipebble.Open(filepath.Join(dir, IndexSubdir))
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			checkReferences(t, dir, ix, siteURLs(srv))
		})
	}
}

func siteURLs(srv *sitetest.Server) []string {
	var out []string
	for _, p := range srv.Site.Paths() {
		out = append(out, srv.URL+p)
	}
	return out
}

var _ = dedupindex.DefaultScope

// checkCaptures compares capture events with the records on disk: every
// response, revisit and request has exactly one event with its final file
// name, offset, length, canonical digest and revisit reference.
func checkCaptures(t *testing.T, dir string, caps []wayside.Capture) {
	t.Helper()
	byID := map[string]wayside.Capture{}
	for _, c := range caps {
		if _, dup := byID[c.RecordID]; dup {
			t.Errorf("two captures for %s", c.RecordID)
		}
		byID[c.RecordID] = c
	}
	n := 0
	for _, wr := range readDir(t, dir) {
		r := wr.rec
		if r.Type == "warcinfo" {
			continue
		}
		n++
		c, ok := byID[r.RecordID]
		if !ok {
			t.Errorf("no capture for %s %s", r.Type, r.RecordID)
			continue
		}
		if c.File != wr.file || c.Offset != r.Offset || c.Length != r.Length || c.Type != r.Type || c.URI != r.TargetURI || !c.Date.Equal(r.Date) {
			t.Errorf("capture %+v does not match record %s %s at %s:%d+%d", c, r.Type, r.TargetURI, wr.file, r.Offset, r.Length)
		}
		switch r.Type {
		case "response":
			if c.Digest != r.PayloadDigest || c.Status != r.Status() || c.PayloadLength != r.PayloadLength || c.RevisitOf != nil {
				t.Errorf("response capture %+v vs digest %s status %d length %d", c, r.PayloadDigest, r.Status(), r.PayloadLength)
			}
		case "revisit":
			if c.Digest != r.DeclaredPayloadDigest || c.RevisitOf == nil || c.RevisitOf.RecordID != r.Header("WARC-Refers-To") ||
				c.RevisitOf.TargetURI != r.Header("WARC-Refers-To-Target-URI") || c.Profile != r.Header("WARC-Profile") {
				t.Errorf("revisit capture %+v does not match its record", c)
			}
		}
	}
	if n != len(caps) {
		t.Errorf("%d captures for %d records", len(caps), n)
	}
}
