package sidecar_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/sidecar"
)

// aggArchive is one Wayside sidecar of the aggregation test and what it
// holds.
type aggArchive struct {
	name string
	dir  string
	d    *daemon
	keys map[string]bool // urlkeys of its captures
}

func (a *aggArchive) base() string { return a.d.tcp + "/t/" + testCDXToken + "/default" }

// aggregatorConfig is a daemon that holds nothing and aggregates the
// archives of entries.
func aggregatorConfig(deadline string, entries ...string) string {
	return `
data_dir: DIR/data
listen:
  tcp: 127.0.0.1:0
  token: ${WAYSIDE_TEST_TOKEN}
  cdx_token: ` + testCDXToken + `
mementomap:
  path: "-"
access:
  index: "-"
aggregate:
  deadline: ` + deadline + `
  refresh: 1m
  archives:
` + strings.Join(entries, "")
}

// crawlInto crawls start (staying under prefix when set) into dir/warcs
// with the real binary.
func crawlInto(t *testing.T, dir, start, prefix string) {
	t.Helper()
	args := []string{"crawl", "--warc-dir", filepath.Join(dir, "warcs"), "--robots", "--delay", "0", "--parallel", "2", "--quiet"}
	if prefix != "" {
		args = append(args, "--prefix", prefix)
	}
	if out, err := exec.Command(waysideBin, append(args, start)...).CombinedOutput(); err != nil {
		t.Fatalf("crawl %s: %v\n%s", start, err, out)
	}
}

// startAggArchive serves dir/warcs with a sidecar (mapless: no
// MementoMap) and waits until its capture index holds every capture.
func startAggArchive(t *testing.T, name, dir string, mapless bool) *aggArchive {
	t.Helper()
	cfg := cdxTestConfig
	if mapless {
		cfg += "mementomap:\n  path: \"-\"\n"
	}
	a := &aggArchive{name: name, dir: dir, d: startDaemon(t, dir, cfg), keys: map[string]bool{}}
	lines := cdxjLines(t, filepath.Join(dir, "warcs"))
	hosts := map[string]int{}
	for _, l := range lines {
		a.keys[l.Key] = true
		u, _ := url.Parse(l.URL)
		hosts[u.Host]++
	}
	for h, n := range hosts {
		waitFor(t, name+" to index "+h, func() bool {
			resp := httpGetRaw(t, a.base()+"/cdx?url="+url.QueryEscape("http://"+h+"/")+"&matchType=host&output=text&fl=timestamp", nil)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode == 200 && bytes.Count(b, []byte("\n")) == n
		})
	}
	return a
}

// memento is one (URI-M, datetime) of a TimeMap.
type memento struct{ uri, datetime string }

var linkMemento = regexp.MustCompile(`<([^>]+)>; rel="[^"]*\bmemento\b[^"]*"; datetime="([^"]+)"`)

// untoken removes the archives' path token from a URI-M: Wayside's
// aggregator cuts it out of the URI-Ms it lists (tokens never reach an
// answer); MemGator and the archives' own TimeMaps keep it.
func untoken(u string) string {
	return strings.Replace(u, "/t/"+testCDXToken+"/default/", "/default/", 1)
}

func mementoSet(body string) []memento {
	var out []memento
	for _, m := range linkMemento.FindAllStringSubmatch(body, -1) {
		out = append(out, memento{untoken(m[1]), m[2]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].uri < out[j].uri })
	return out
}

func getBody(t *testing.T, rawURL string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	resp := httpGetRaw(t, rawURL, hdr)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header, string(b)
}

// TestE2EAggregate: three Wayside sidecars with different, overlapping
// holdings (crawls of generated local sites, whole or by sub-tree) plus a
// fourth without a MementoMap, and a fifth `wayside serve` aggregating
// them by their maps (two given by URL, one discovered through
// rel="mementomap"). For a labelled lookup set, the routed TimeMaps equal
// those from asking every archive (through `wayside aggregate eval
// --all`, and through the daemon's routes against each archive's own
// TimeMap), with fewer requests and recall 1.0; MemGator asking every
// archive finds the same mementos and the same closest one; status and
// metrics show the counts. Then an archive is killed, one hangs and one
// answers garbage: the answers come by the deadline, marked partial; an
// archive whose map cannot be fetched is asked for everything.
func TestE2EAggregate(t *testing.T) {
	root := t.TempDir()
	sites := make([]*sitetest.Server, 3)
	for i := range sites {
		srv, err := sitetest.Start(sitetest.New())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		sites[i] = srv
	}
	// a: site 0 and site 1's blog; b: site 1 and site 2's blog; c: site 2
	// and site 0 again (later); d (no map): site 1's about page.
	crawls := map[string][][2]string{
		"a": {{sites[0].URL + "/", ""}, {sites[1].URL + "/blog/", sites[1].URL + "/blog/"}},
		"b": {{sites[1].URL + "/", ""}, {sites[2].URL + "/blog/", sites[2].URL + "/blog/"}},
		"c": {{sites[2].URL + "/", ""}, {sites[0].URL + "/", ""}},
		"d": {{sites[1].URL + "/about.html", sites[1].URL + "/about.html"}},
	}
	names := []string{"a", "b", "c", "d"}
	archives := map[string]*aggArchive{}
	var aDone time.Time
	for _, n := range names {
		dir := filepath.Join(root, n)
		for i, c := range crawls[n] {
			if n == "c" && i == 1 {
				// c's crawl of site 0 comes at least 4 s after a's, so
				// a time between the two is nearer one of them.
				time.Sleep(time.Until(aDone.Add(4 * time.Second)))
			}
			crawlInto(t, dir, c[0], c[1])
		}
		if n == "a" {
			aDone = time.Now()
		}
	}
	for _, n := range names {
		archives[n] = startAggArchive(t, n, filepath.Join(root, n), n == "d")
	}

	// The lookup set: every path of the three sites, pages never
	// crawled, another host; labelled with the archives holding each.
	var set strings.Builder
	var uris []string
	for _, s := range sites {
		paths := append(s.Site.Paths(), "/never-crawled.html", "/blog/2025/")
		for _, p := range paths {
			uris = append(uris, s.URL+p)
		}
	}
	uris = append(uris, "http://unarchived.example.org/")
	holdings := 0
	for _, u := range uris {
		var hs []string
		for _, n := range names {
			if archives[n].keys[captureindex.URLKey(u)] {
				hs = append(hs, n)
			}
		}
		holdings += len(hs)
		if len(hs) == 0 {
			hs = []string{"-"}
		}
		fmt.Fprintf(&set, "%s %s\n", strings.Join(hs, ","), u)
	}
	setPath := filepath.Join(root, "labelled.txt")
	os.WriteFile(setPath, []byte(set.String()), 0o644)
	t.Logf("lookup set: %d URI-Rs, %d holdings", len(uris), holdings)

	entry := func(a *aggArchive, mapSpec string) string {
		e := fmt.Sprintf("    - name: %s\n      timemap: %s/timemap/link/\n      timegate: %s/\n      timeout: 5s\n", a.name, a.base(), a.base())
		switch mapSpec {
		case "":
		case "discover":
			e += "      mementomap: discover\n      token: " + testCDXToken + "\n"
		default:
			e += "      mementomap: " + mapSpec + "\n"
		}
		return e
	}
	aggCfg := aggregatorConfig("10s",
		entry(archives["a"], archives["a"].d.tcp+"/t/"+testCDXToken+"/mementomap"),
		entry(archives["b"], "discover"),
		entry(archives["c"], archives["c"].d.tcp+"/t/"+testCDXToken+"/mementomap"),
		entry(archives["d"], ""))
	aggDir := filepath.Join(root, "aggregator")
	os.MkdirAll(aggDir, 0o755)
	agg := startDaemon(t, aggDir, aggCfg)
	aggBase := agg.tcp + "/t/" + testCDXToken + "/aggregate"
	var st sidecar.Status
	waitFor(t, "the aggregator to load the three maps", func() bool {
		if err := agg.client.Status(t.Context(), &st); err != nil || st.Aggregate == nil {
			return false
		}
		loaded := 0
		for _, a := range st.Aggregate.Archives {
			if a.MapState == "loaded" {
				loaded++
			}
		}
		return loaded == 3
	})

	t.Run("eval: routed TimeMaps equal asking every archive, recall 1.0", func(t *testing.T) {
		cfgPath := filepath.Join(aggDir, "wayside.yaml")
		cmd := exec.Command(waysideBin, "aggregate", "eval", "-config", cfgPath, "--set", setPath, "--all", "--json", "-q")
		cmd.Env = append(os.Environ(), "WAYSIDE_TEST_TOKEN="+testToken)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("eval: %v\n%s\n%s", err, out, exitStderr(err))
		}
		var r struct {
			Lookups       int     `json:"lookups"`
			Asked         int64   `json:"asked"`
			Avoided       int64   `json:"avoided"`
			AllAsked      int64   `json:"all_asked"`
			Holdings      int64   `json:"holdings"`
			Routed        int64   `json:"routed"`
			Recall        float64 `json:"recall"`
			Compared      int     `json:"compared"`
			Differ        int     `json:"differ"`
			Unconfirmed   []string
			RoutedLatency struct{ P50, P99 time.Duration } `json:"routed_latency"`
			AllLatency    struct{ P50, P99 time.Duration } `json:"all_latency"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if r.Recall != 1 || r.Routed != int64(holdings) || r.Differ != 0 || r.Compared != len(uris) || len(r.Unconfirmed) > 0 {
			t.Errorf("eval: %s", out)
		}
		if r.AllAsked != int64(4*len(uris)) || r.Asked >= r.AllAsked || r.Avoided == 0 {
			t.Errorf("requests: routed %d (avoided %d), asking all %d", r.Asked, r.Avoided, r.AllAsked)
		}
		t.Logf("eval: %d lookups: %d upstream requests routed vs %d asking every archive (%.1f%% avoided); recall %.1f; latency p50 %v/%v p99 %v/%v (routed/all)",
			r.Lookups, r.Asked, r.AllAsked, 100*float64(r.AllAsked-r.Asked)/float64(r.AllAsked), r.Recall, r.RoutedLatency.P50, r.AllLatency.P50, r.RoutedLatency.P99, r.AllLatency.P99)
	})

	t.Run("the daemon's TimeMaps equal every archive's own, merged", func(t *testing.T) {
		before := aggRequests(t, agg)
		asked := 0
		for _, u := range uris {
			var want []memento
			for _, n := range names {
				code, _, body := getBody(t, archives[n].base()+"/timemap/link/"+u, nil)
				if code == 200 {
					want = append(want, mementoSet(body)...)
				} else if code != 404 {
					t.Fatalf("%s %s: %d %s", n, u, code, body)
				}
			}
			sort.Slice(want, func(i, j int) bool { return want[i].uri < want[j].uri })
			code, h, body := getBody(t, aggBase+"/timemap/link/"+u, nil)
			if len(want) == 0 {
				if code != 404 {
					t.Errorf("%s: %d, want 404:\n%s", u, code, body)
				}
			} else if code != 200 || fmt.Sprint(mementoSet(body)) != fmt.Sprint(want) {
				t.Errorf("%s: %d\n%s\nwant %v", u, code, body, want)
			}
			if h.Get("X-Aggregate-Partial") != "" {
				t.Errorf("%s: partial %s", u, h.Get("X-Aggregate-Partial"))
			}
			if a := h.Get("X-Aggregate-Asked"); a != "" {
				asked += len(strings.Split(a, ", "))
			}
			if code == 200 && !sortedByTime(body) {
				t.Errorf("%s: not in time order:\n%s", u, body)
			}
		}
		after := aggRequests(t, agg)
		if after-before != int64(asked) || asked >= 4*len(uris) {
			t.Errorf("%d upstream requests for %d lookups (headers say %d)", after-before, len(uris), asked)
		}
		t.Logf("daemon: %d upstream requests for %d lookups over 4 archives (asking all: %d)", asked, len(uris), 4*len(uris))
		// JSON, and HEAD.
		home := sites[0].URL + "/"
		code, h, body := getBody(t, aggBase+"/timemap/json/"+home, nil)
		var j struct {
			Original string `json:"original_uri"`
			Mementos struct {
				List []struct{ Datetime, URI string }
			}
			Partial bool
		}
		if err := json.Unmarshal([]byte(body), &j); code != 200 || err != nil || j.Original != home || len(j.Mementos.List) != 2 || j.Partial || h.Get("Content-Type") != "application/json" {
			t.Errorf("JSON TimeMap: %d %v\n%s", code, err, body)
		}
	})

	t.Run("memgator asking every archive finds the same mementos", func(t *testing.T) {
		mg := buildMemGator(t)
		var list []map[string]any
		for _, n := range names {
			list = append(list, map[string]any{"id": n, "name": n, "timemap": archives[n].base() + "/timemap/link/", "timegate": archives[n].base() + "/", "probability": 1})
		}
		b, _ := json.Marshal(list)
		arcs := filepath.Join(root, "archives.json")
		os.WriteFile(arcs, b, 0o644)
		for i, u := range uris {
			if i%2 == 1 && !strings.HasSuffix(u, "/") {
				continue // every other page, to bound the time
			}
			out, err := exec.Command(mg, "--arcs="+arcs, "--format=Link", "--contimeout=5s", u).Output()
			if err != nil {
				t.Fatalf("memgator %s: %v\n%s", u, err, exitStderr(err))
			}
			_, _, body := getBody(t, aggBase+"/timemap/link/"+u, nil)
			if got, want := fmt.Sprint(mementoSet(body)), fmt.Sprint(mementoSet(string(out))); got != want {
				t.Errorf("%s:\nwayside %s\nmemgator %s", u, got, want)
			}
		}
		// The closest memento to a time between a's and c's crawls of
		// site 0's home page.
		home := sites[0].URL + "/"
		_, _, body := getBody(t, aggBase+"/timemap/json/"+home, nil)
		var j struct {
			Mementos struct {
				List []struct{ Datetime, URI string }
			}
		}
		json.Unmarshal([]byte(body), &j)
		if len(j.Mementos.List) != 2 {
			t.Fatalf("home page mementos: %s", body)
		}
		t0, _ := time.Parse(time.RFC3339, j.Mementos.List[0].Datetime)
		t1, _ := time.Parse(time.RFC3339, j.Mementos.List[1].Datetime)
		if t1.Sub(t0) < 4*time.Second {
			t.Fatalf("a's and c's crawls of the home page are %v apart", t1.Sub(t0))
		}
		at := t1.Add(-t1.Sub(t0) / 4).Truncate(time.Second)
		out, err := exec.Command(mg, "--arcs="+arcs, "--format=JSON", "--contimeout=5s", home, at.UTC().Format("20060102150405")).Output()
		if err != nil {
			t.Fatalf("memgator timegate: %v\n%s", err, exitStderr(err))
		}
		var mgj struct {
			Mementos map[string]json.RawMessage `json:"mementos"`
		}
		json.Unmarshal(out, &mgj)
		var closest struct{ URI string }
		json.Unmarshal(mgj.Mementos["closest"], &closest)
		code, h, _ := getBody(t, aggBase+"/"+home, map[string]string{"Accept-Datetime": at.UTC().Format(http.TimeFormat)})
		if code != http.StatusFound || h.Get("Location") != untoken(closest.URI) || untoken(closest.URI) != j.Mementos.List[1].URI {
			t.Errorf("TimeGate: %d Location %q; MemGator's closest %q; want %s", code, h.Get("Location"), closest.URI, j.Mementos.List[1].URI)
		}
		if h.Get("Vary") != "accept-datetime" || !strings.Contains(h.Get("Link"), `rel="first prev memento"`) {
			t.Errorf("TimeGate headers: %v", h)
		}
	})

	t.Run("status, metrics and access control", func(t *testing.T) {
		out, err := exec.Command(waysideBin, "status", "-addr", agg.sock).Output()
		if err != nil {
			t.Fatalf("status: %v\n%s", err, exitStderr(err))
		}
		for _, want := range []string{"aggregate:", "avoided by maps", "  a ", "loaded", "  d ", "none"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
		out, err = exec.Command(waysideBin, "status", "-addr", agg.sock, "aggregate", "--json").Output()
		var ag struct {
			Archives []struct {
				Name     string `json:"name"`
				MapState string `json:"map_state"`
				Avoided  int64  `json:"avoided"`
			} `json:"archives"`
		}
		if err := json.Unmarshal(out, &ag); err != nil || len(ag.Archives) != 4 || ag.Archives[0].Avoided == 0 || ag.Archives[3].Avoided != 0 || ag.Archives[3].MapState != "none" {
			t.Errorf("status aggregate --json: %v %+v\n%s", err, ag, out)
		}
		_, _, m := getBody(t, agg.tcp+"/metrics", map[string]string{"Authorization": "Bearer " + testToken})
		for _, want := range []string{`wayside_aggregate_avoided_total{archive="a"} `, `wayside_aggregate_requests_total{archive="d"} `, `wayside_aggregate_map_loaded{archive="b"} 1`, `wayside_aggregate_upstream_duration_seconds_bucket{archive="c",le="0.01"} `} {
			if !strings.Contains(m, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		// Read-only token on TCP; the socket needs none.
		if code, _, _ := getBody(t, agg.tcp+"/aggregate/timemap/link/"+sites[0].URL+"/", nil); code != http.StatusUnauthorized {
			t.Errorf("without a token: %d", code)
		}
		if r := httpGetRawUnix(t, agg.sock, "/aggregate/timemap/link/"+sites[0].URL+"/"); r.StatusCode != 200 {
			t.Errorf("over the socket: %d", r.StatusCode)
		}
		for path, want := range map[string]string{
			"/timemap/link/ftp://example.org/": `scheme \"ftp\"`,
			"/timemap/link/http://exa%20mple/": "URI-R",
			"/timemap/xml/http://example.org/": "timemap format",
			"/timemap/link/":                   "no URI-R",
			"/" + strings.Repeat("a", 9000):    "8192",
		} {
			code, _, body := getBody(t, aggBase+path, nil)
			if code != 400 || !strings.Contains(body, want) {
				t.Errorf("%s: %d %s", path[:min(len(path), 40)], code, body)
			}
		}
	})

	t.Run("an archive down for the whole test: dormant, and the same TimeMaps as MemGator's", func(t *testing.T) {
		mg := buildMemGator(t)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + l.Addr().String() + "/default"
		l.Close() // nothing listens there: every request is refused
		list := []map[string]any{
			{"id": "a", "name": "a", "timemap": archives["a"].base() + "/timemap/link/", "timegate": archives["a"].base() + "/", "probability": 1},
			{"id": "down", "name": "down", "timemap": down + "/timemap/link/", "timegate": down + "/", "probability": 1},
			{"id": "c", "name": "c", "timemap": archives["c"].base() + "/timemap/link/", "timegate": archives["c"].base() + "/", "probability": 1},
		}
		b, _ := json.Marshal(list)
		arcs := filepath.Join(root, "archives-down.json")
		os.WriteFile(arcs, b, 0o644)
		ddir := filepath.Join(root, "down")
		os.MkdirAll(ddir, 0o755)
		dd := startDaemon(t, ddir, aggregatorConfig("5s", entry(archives["a"], ""),
			"    - name: down\n      timemap: "+down+"/timemap/link/\n      timegate: "+down+"/\n",
			entry(archives["c"], "")))
		dBase := dd.tcp + "/t/" + testCDXToken + "/aggregate"
		for i, u := range uris[:12] {
			code, h, body := getBody(t, dBase+"/timemap/link/"+u, nil)
			p := h.Get("X-Aggregate-Partial")
			if !strings.Contains(p, "down (") || (i >= 3) != strings.Contains(p, "dormant until") {
				t.Errorf("lookup %d: partial marker %q", i, p)
			}
			out, err := exec.Command(mg, "--arcs="+arcs, "--format=Link", "--contimeout=5s", u).Output()
			if err != nil && code == 200 {
				t.Fatalf("memgator %s: %v\n%s", u, err, exitStderr(err))
			}
			if got, want := fmt.Sprint(mementoSet(body)), fmt.Sprint(mementoSet(string(out))); got != want {
				t.Errorf("%s:\nwayside %s\nmemgator %s", u, got, want)
			}
		}
		var st sidecar.Status
		if err := dd.client.Status(t.Context(), &st); err != nil {
			t.Fatal(err)
		}
		for _, a := range st.Aggregate.Archives {
			if a.Name == "down" && a.Requests != 3 {
				t.Errorf("the archive that is down was asked %d times, want 3 (the tolerance)", a.Requests)
			}
		}
	})

	t.Run("killed, hung and broken archives: partial answers by the deadline", func(t *testing.T) {
		hung := newBlackhole(t)
		junk := newJunkServer(t)
		faultCfg := aggregatorConfig("1500ms",
			entry(archives["a"], archives["a"].d.tcp+"/t/"+testCDXToken+"/no-such-map"),
			entry(archives["b"], archives["b"].d.tcp+"/t/"+testCDXToken+"/mementomap"),
			"    - name: hung\n      timemap: "+hung.url+"/timemap/link/\n",
			"    - name: junk\n      timemap: "+junk+"/timemap/link/\n")
		fdir := filepath.Join(root, "faults")
		os.MkdirAll(fdir, 0o755)
		f := startDaemon(t, fdir, faultCfg)
		fBase := f.tcp + "/t/" + testCDXToken + "/aggregate"
		waitFor(t, "b's map", func() bool {
			var st sidecar.Status
			if err := f.client.Status(t.Context(), &st); err != nil || st.Aggregate == nil {
				return false
			}
			return st.Aggregate.Archives[1].MapState == "loaded" && st.Aggregate.Archives[0].MapState == "unavailable"
		})
		// a's map cannot be fetched: a is asked even for site 2's blog,
		// which only b holds (and b's map routes to b).
		blog := sites[2].URL + "/blog/"
		code, h, body := getBody(t, fBase+"/timemap/link/"+blog, nil)
		if code != 200 || !strings.Contains(h.Get("X-Aggregate-Asked"), "a") || len(mementoSet(body)) != 1 {
			t.Errorf("site 2's blog: %d asked %q\n%s", code, h.Get("X-Aggregate-Asked"), body)
		}
		if p := h.Get("X-Aggregate-Partial"); !strings.Contains(p, "hung (") || !strings.Contains(p, "junk (TimeMap: not a link-format list") {
			t.Errorf("partial marker %q", p)
		}
		// The hung archive was asked and never answers: the answer above
		// came without it (waiting for it would never have ended).
		if hung.received() == 0 {
			t.Fatal("the hung archive got no request")
		}
		// Kill b: site 1's blog (a and b hold it) comes from a alone.
		archives["b"].d.kill9()
		home := sites[1].URL + "/blog/"
		code, h, body = getBody(t, fBase+"/timemap/link/"+home, nil)
		if code != 200 || len(mementoSet(body)) != 1 || !strings.Contains(h.Get("X-Aggregate-Partial"), "b (") {
			t.Errorf("b killed: %d partial %q\n%s", code, h.Get("X-Aggregate-Partial"), body)
		}
		code, h, body = getBody(t, fBase+"/timemap/json/"+home, nil)
		if code != 200 || !strings.Contains(body, `"partial": true`) || !strings.Contains(body, `"timeout": true`) {
			t.Errorf("JSON: %d\n%s", code, body)
		}
		// The TimeGate too.
		code, h, _ = getBody(t, fBase+"/"+home, nil)
		if code != http.StatusFound || !strings.HasPrefix(h.Get("Location"), untoken(archives["a"].base()+"/")) || h.Get("X-Aggregate-Partial") == "" {
			t.Errorf("TimeGate: %d %v", code, h)
		}
		// Only b held it: nothing found and b down is a 502, not a 404.
		code, _, body = getBody(t, fBase+"/timemap/link/"+sites[1].URL+"/news.html", nil)
		if code != http.StatusBadGateway || !strings.Contains(body, "did not answer") {
			t.Errorf("held by b only: %d %s", code, body)
		}
		var ee *exec.ExitError
		if err := f.term(); err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 130) {
			t.Errorf("aggregator exit: %v\n%s", err, f.log())
		}
	})
}

// aggRequests sums the upstream requests the aggregator made.
func aggRequests(t *testing.T, d *daemon) int64 {
	t.Helper()
	var st sidecar.Status
	if err := d.client.Status(t.Context(), &st); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, a := range st.Aggregate.Archives {
		n += a.Requests
	}
	return n
}

func sortedByTime(body string) bool {
	var prev time.Time
	for _, m := range linkMemento.FindAllStringSubmatch(body, -1) {
		t, err := http.ParseTime(m[2])
		if err != nil || t.Before(prev) {
			return false
		}
		prev = t
	}
	return true
}

// blackhole is a real server that reads requests and never answers them
// (an archive hung or slowed past any deadline); it releases its
// connections when the test ends.
type blackhole struct {
	url      string
	mu       sync.Mutex
	conns    map[net.Conn]bool
	requests int // request lines read (never answered)
}

func newBlackhole(t *testing.T) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{url: "http://" + ln.Addr().String(), conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns[c] = true
			b.mu.Unlock()
			go func() {
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if strings.HasPrefix(l, "GET ") {
						b.mu.Lock()
						b.requests++
						b.mu.Unlock()
					}
					if err != nil {
						b.mu.Lock()
						delete(b.conns, c)
						b.mu.Unlock()
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
	})
	return b
}

func (b *blackhole) received() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests
}

// newJunkServer answers everything with an HTML page (status 200).
func newJunkServer(t *testing.T) string {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><h1>Welcome</h1><p>This archive moved.</p></body></html>\n")
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}
