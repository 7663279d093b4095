package aggregate_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/wayside-archive/wayside/aggregate"
)

// holdings fills three archives with different, overlapping holdings of
// three sites (hosts with path sub-trees) and returns every URI-R used.
func holdings(t *testing.T, archs []*memArchive, rnd *rand.Rand) []string {
	t.Helper()
	var uris []string
	for site := range 3 {
		for sec := range 6 {
			for page := range 8 {
				u := fmt.Sprintf("http://www.site%d.test/section%d/page%d.html", site, sec, page)
				if page%3 == 0 {
					u += fmt.Sprintf("?id=%d", page)
				}
				uris = append(uris, u)
				for i, a := range archs {
					// Archive i crawls site i fully and the next site's
					// even sections: overlaps by host and by sub-tree.
					if site == i || (site == (i+1)%3 && sec%2 == 0) {
						for n := range 1 + rnd.IntN(3) {
							a.add(t, u, day(100*i+10*n+rnd.IntN(5)))
						}
					}
				}
			}
		}
		uris = append(uris, fmt.Sprintf("http://site%d.test/", site), fmt.Sprintf("https://site%d.test/never/crawled", site))
	}
	return append(uris, "http://unknown.test/", "http://www.other.example.org/x")
}

// TestRoutingEqualsAskingAll: three archives whose maps (full, and
// compacted at several weights, so wildcards answer) route lookups, plus
// one archive without a map; for every URI-R the routed TimeMap equals
// the one from asking every archive, with fewer requests, and no archive
// holding a URI-R is skipped.
func TestRoutingEqualsAskingAll(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	archs := []*memArchive{newMemArchive(t, "a"), newMemArchive(t, "b"), newMemArchive(t, "c")}
	nomap := newMemArchive(t, "nomap")
	uris := holdings(t, archs, rnd)
	nomap.add(t, "http://www.site0.test/section1/page1.html", day(999))
	for _, w := range []float64{0, 8, 1, 0.1} {
		t.Run(fmt.Sprintf("w=%g", w), func(t *testing.T) {
			cfg := aggregate.Config{}
			for _, a := range archs {
				a.setMap(a.fullMap(t, w))
				cfg.Archives = append(cfg.Archives, a.config(true, false))
			}
			cfg.Archives = append(cfg.Archives, nomap.config(false, false))
			routed := newAggregator(t, cfg)
			all := newAggregator(t, cfg, aggregate.WithoutRouting())
			for _, s := range routed.Stats().Archives {
				want := "loaded"
				if s.Name == "nomap" {
					want = "none"
				}
				if s.MapState != want {
					t.Fatalf("%s: map state %s (%s), want %s", s.Name, s.MapState, s.MapError, want)
				}
			}
			var asked, askedAll, held int
			for _, u := range uris {
				r1, err := routed.TimeMap(context.Background(), u)
				if err != nil {
					t.Fatal(err)
				}
				r2, err := all.TimeMap(context.Background(), u)
				if err != nil {
					t.Fatal(err)
				}
				asked += r1.Asked()
				askedAll += r2.Asked()
				if r1.Partial() || r2.Partial() {
					t.Fatalf("%s: partial answers %v %v", u, r1.Archives, r2.Archives)
				}
				if d := fmt.Sprint(r1.Mementos); d != fmt.Sprint(r2.Mementos) {
					t.Errorf("%s: routed %v\nall %v", u, r1.Mementos, r2.Mementos)
				}
				// Every archive that holds the URI-R was asked.
				for i, o := range r2.Archives {
					if o.Mementos > 0 && i < 3 {
						held++
					}
					if o.Mementos > 0 && !r1.Archives[i].Asked {
						t.Errorf("%s: %s holds %d mementos but its map hid it", u, o.Archive, o.Mementos)
					}
				}
				if !r1.Archives[3].Asked {
					t.Errorf("%s: the archive without a map was not asked", u)
				}
			}
			if asked >= askedAll {
				t.Errorf("routing made %d requests, asking all %d", asked, askedAll)
			}
			t.Logf("weight %g: %d requests routed, %d asking all (%.0f%% avoided)", w, asked, askedAll, 100*(1-float64(asked)/float64(askedAll)))
			// Full maps have no false positive here (no two URI-Rs share a
			// key): the mapped archives are asked exactly for what they hold.
			if w == 0 && asked != held+len(uris) {
				t.Errorf("full maps: %d requests, want %d holdings + %d to the archive without a map", asked, held, len(uris))
			}
		})
	}
}

// TestMapFaults: a map that cannot be fetched, is not a map, is too large
// or declares filters leaves its archive asked for every URI-R (never
// skipped); a failed refresh drops the map it had; a 304 keeps it.
func TestMapFaults(t *testing.T) {
	ctx := context.Background()
	a := newMemArchive(t, "a")
	a.add(t, "http://example.com/held", day(1))
	good := a.fullMap(t, 0)
	for _, tc := range []struct {
		name  string
		body  []byte
		state string
		err   string
	}{
		{"404", nil, "unavailable", "HTTP 404"},
		{"garbage", []byte("<html>not a map</html>\n"), "unavailable", "map"},
		{"bad line", append(bytes.Clone(good), []byte("com,example)/x notacount\n")...), "unavailable", "map"},
		{"too large", bytes.Repeat([]byte("com,example)/x 1\n"), 200), "unavailable", "max_map_bytes"},
		{"filtered", []byte("!meta {\"type\":\"MementoMap\",\"filters\":{\"mime\":[\"text/html\"]}}\ncom,example)/held 1\n"), "filtered", "filters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.setMap(tc.body)
			cfg := aggregate.Config{Archives: []aggregate.ArchiveConfig{a.config(true, false)}, MaxMapBytes: 2048}
			ag := newAggregator(t, cfg)
			_, _, _, state := stat(t, ag, "a")
			if state != tc.state {
				t.Fatalf("map state %s, want %s", state, tc.state)
			}
			if msg := ag.Stats().Archives[0].MapError; !strings.Contains(msg, tc.err) {
				t.Errorf("map error %q lacks %q", msg, tc.err)
			}
			before := a.requests.Load()
			for _, u := range []string{"http://example.com/held", "http://elsewhere.test/"} {
				r, err := ag.TimeMap(ctx, u)
				if err != nil || !r.Archives[0].Asked {
					t.Errorf("%s: not asked (%v)", u, err)
				}
			}
			if n := a.requests.Load() - before; n != 2 {
				t.Errorf("%d requests reached the archive, want 2", n)
			}
		})
	}

	t.Run("a failed refresh drops the map; 304 keeps it", func(t *testing.T) {
		a.setMap(good)
		ag := newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{a.config(true, false)}})
		r, _ := ag.TimeMap(ctx, "http://elsewhere.test/")
		if r.Archives[0].Asked {
			t.Fatal("a loaded map did not avoid a URI-R it does not hold")
		}
		a.setMap(nil)
		if err := ag.RefreshMaps(ctx); err == nil {
			t.Fatal("refresh of a missing map succeeded")
		}
		if r, _ := ag.TimeMap(ctx, "http://elsewhere.test/"); !r.Archives[0].Asked {
			t.Error("after a failed refresh the stale map still routes")
		}
		// A map file on disk, then unchanged: the refresh keeps it.
		path := filepath.Join(t.TempDir(), "a.ukvs")
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := a.config(false, false)
		cfg.MementoMap = path
		ag = newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{cfg}})
		if err := ag.RefreshMaps(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, _, state := stat(t, ag, "a"); state != "loaded" {
			t.Fatalf("local map: %s", state)
		}
		os.Remove(path)
		ag.RefreshMaps(ctx)
		if _, _, _, state := stat(t, ag, "a"); state != "unavailable" {
			t.Errorf("local map removed: %s", state)
		}
	})

	t.Run("a download cut short never routes", func(t *testing.T) {
		// The map server dies halfway through the (chunked) body, at a
		// line boundary: what arrived would parse, but lacks keys.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(good[:bytes.IndexByte(good, '\n')+1])
			w.(http.Flusher).Flush()
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		}))
		defer srv.Close()
		cfg := a.config(false, false)
		cfg.MementoMap = srv.URL + "/map"
		ag := newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{cfg}})
		if _, _, _, state := stat(t, ag, "a"); state != "unavailable" {
			t.Fatalf("torn map: state %s", state)
		}
		if r, _ := ag.TimeMap(ctx, "http://example.com/held"); !r.Archives[0].Asked || len(r.Mementos) != 1 {
			t.Errorf("torn map: %+v", r)
		}
	})

	t.Run("conditional refresh", func(t *testing.T) {
		etag := `"v1"`
		var gets, notModified int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gets++
			if r.Header.Get("If-None-Match") == etag {
				notModified++
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", etag)
			w.Write(good)
		}))
		defer srv.Close()
		cfg := a.config(false, false)
		cfg.MementoMap = srv.URL + "/map"
		// The map is on another host: configured, so it is fetched.
		ag := newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{cfg}})
		ag.RefreshMaps(ctx)
		if gets != 2 || notModified != 1 {
			t.Errorf("%d gets, %d not modified", gets, notModified)
		}
		if r, _ := ag.TimeMap(ctx, "http://elsewhere.test/"); r.Archives[0].Asked {
			t.Error("the map kept after a 304 does not route")
		}
	})
}

// TestDiscover: an archive announcing its map with Link: rel="mementomap"
// (relative, as Wayside does) is routed by it; one announced on a foreign
// host is never fetched.
func TestDiscover(t *testing.T) {
	ctx := context.Background()
	a := newMemArchive(t, "a")
	a.add(t, "http://example.com/held", day(1))
	a.setMap(a.fullMap(t, 0))
	a.mapLink = `</map>; rel="mementomap"`
	cfg := a.config(false, false)
	cfg.MementoMap = aggregate.Discover
	ag := newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{cfg}})
	if _, _, _, state := stat(t, ag, "a"); state != "loaded" {
		t.Fatalf("discovered map: %s %s", state, ag.Stats().Archives[0].MapError)
	}
	if r, _ := ag.TimeMap(ctx, "http://elsewhere.test/"); r.Archives[0].Asked {
		t.Error("the discovered map does not route")
	}
	if r, _ := ag.TimeMap(ctx, "http://example.com/held"); len(r.Mementos) != 1 {
		t.Errorf("held URI-R: %+v", r)
	}

	foreign := newMemArchive(t, "foreign")
	foreign.setMap([]byte("!meta {}\n"))
	b := newMemArchive(t, "b")
	b.mapLink = "<" + foreign.srv.URL + `/map>; rel="mementomap"`
	cfg = b.config(false, false)
	cfg.MementoMap = aggregate.Discover
	ag = newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{cfg}})
	if _, _, _, state := stat(t, ag, "b"); state != "waiting" {
		t.Errorf("map announced on a foreign host: state %s", state)
	}
	if n := foreign.mapGets.Load(); n != 0 {
		t.Errorf("the foreign map was fetched %d times", n)
	}
	if r, _ := ag.TimeMap(ctx, "http://elsewhere.test/"); !r.Archives[0].Asked {
		t.Error("an archive without a usable map was skipped")
	}
}

// TestDeadline: an archive that holds its answers (a real server that has
// not answered) does not hold the aggregated answer: it comes back at the
// deadline, marked partial, while the slow archive still has not answered.
func TestDeadline(t *testing.T) {
	fast, slow := newMemArchive(t, "fast"), newMemArchive(t, "slow")
	fast.add(t, "http://example.com/", day(1))
	slow.add(t, "http://example.com/", day(2))
	hold := make(chan struct{})
	slow.hold = hold
	defer close(hold)
	// A deadline the fast archive (on loopback) meets however loaded the
	// machine; Tolerance: not dormant, the test asks the slow one on.
	ag := newAggregator(t, aggregate.Config{Deadline: 3 * time.Second, Tolerance: 100,
		Archives: []aggregate.ArchiveConfig{fast.config(false, true), slow.config(false, true)}})
	for _, kind := range []string{"timemap/link/", "timemap/json/", ""} {
		req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/"+kind+"http://example.com/", nil)
		rec := httptest.NewRecorder()
		if err := ag.Serve(rec, req, kind+"http://example.com/", "http://agg.test/aggregate"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-hold:
			t.Fatal("the slow archive answered")
		default:
		}
		h := rec.Result().Header
		if p := h.Get(aggregate.HeaderPartial); !strings.HasPrefix(p, "slow (") {
			t.Errorf("%q: partial marker %q", kind, p)
		}
		if kind == "" {
			if loc := h.Get("Location"); loc != fast.urim("http://example.com/", day(1)) {
				t.Errorf("TimeGate Location %q", loc)
			}
			continue
		}
		if !strings.Contains(rec.Body.String(), fast.urim("http://example.com/", day(1))) {
			t.Errorf("%q: the fast archive's memento is missing:\n%s", kind, rec.Body.String())
		}
		if kind == "timemap/json/" && !strings.Contains(rec.Body.String(), `"partial": true`) {
			t.Errorf("JSON not marked partial:\n%s", rec.Body.String())
		}
	}
	// Only the slow archive answering nothing in time: 504.
	r, err := ag.TimeMap(context.Background(), "http://example.com/only-slow")
	if err != nil || !r.Partial() || !r.Archives[1].Timeout {
		t.Fatalf("%+v %v", r, err)
	}
	req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/timemap/link/http://example.com/x", nil)
	fast.mu.Lock()
	fast.status = http.StatusNotFound
	fast.mu.Unlock()
	err = ag.Serve(httptest.NewRecorder(), req, "timemap/link/http://example.com/x", "http://agg.test/aggregate")
	if e := describeError(err); !strings.HasPrefix(e, "status 504") {
		t.Errorf("nothing found, the slow archive timed out: %s", e)
	}
	_, _, _, _ = stat(t, ag, "slow")
	if s := ag.Stats().Archives[1]; s.Timeouts == 0 {
		// Counted once the straggler ends (at its own deadline).
		deadline := time.Now().Add(2 * time.Minute)
		for ag.Stats().Archives[1].Timeouts == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if ag.Stats().Archives[1].Timeouts == 0 {
			t.Error("no timeout counted for the slow archive")
		}
	}
}

// TestFetchBounds: redirects and next pages leaving the archive's hosts
// are not followed, an oversized TimeMap is an error, next pages on the
// archive's host are followed.
func TestFetchBounds(t *testing.T) {
	ctx := context.Background()
	elsewhere := newMemArchive(t, "elsewhere")
	elsewhere.add(t, "http://example.com/", day(1))
	var pages int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect/http://example.com/":
			http.Redirect(w, r, elsewhere.srv.URL+"/tm/http://example.com/", http.StatusFound)
		case "/huge/http://example.com/":
			for range 3000 {
				fmt.Fprintf(w, "<http://a.test/20200101000000/http://example.com/>; rel=\"memento\"; datetime=\"Wed, 01 Jan 2020 00:00:00 GMT\",\n")
			}
		case "/paged/http://example.com/", "/paged/2":
			pages++
			next := "/paged/2"
			if r.URL.Path == next {
				next = elsewhere.srv.URL + "/tm/http://example.com/"
			}
			w.Header().Set("Link", "<"+next+`>; rel="next"`)
			fmt.Fprintf(w, "<http://a.test/%d/http://example.com/>; rel=\"memento\"; datetime=\"%s\"\n", pages, day(pages).Format(http.TimeFormat))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg := aggregate.Config{MaxTimeMapBytes: 64 << 10, Archives: []aggregate.ArchiveConfig{
		{Name: "redirect", TimeMap: srv.URL + "/redirect/"},
		{Name: "huge", TimeMap: srv.URL + "/huge/"},
		{Name: "paged", TimeMap: srv.URL + "/paged/"},
	}}
	ag := newAggregator(t, cfg)
	r, err := ag.TimeMap(ctx, "http://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"redirect": "outside archive redirect", "huge": "larger than 65536 bytes", "paged": ""}
	for _, o := range r.Archives {
		if w := want[o.Archive]; (w == "") != (o.Error == "") || !strings.Contains(o.Error, w) {
			t.Errorf("%s: error %q, want %q", o.Archive, o.Error, w)
		}
	}
	if len(r.Mementos) != 2 || pages != 2 {
		t.Errorf("paged: %d mementos over %d pages, want 2 (the third page is on another host)", len(r.Mementos), pages)
	}
	if n := elsewhere.requests.Load(); n != 0 {
		t.Errorf("the foreign host got %d requests", n)
	}
}

// TestEvalRecall: a labelled set replays with recall 1.0 through honest
// maps; a map that lies (drops a holding) is caught as a hidden holding.
func TestEvalRecall(t *testing.T) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(3, 4))
	archs := []*memArchive{newMemArchive(t, "a"), newMemArchive(t, "b"), newMemArchive(t, "c")}
	uris := holdings(t, archs, rnd)
	var cfg aggregate.Config
	var set strings.Builder
	for _, a := range archs {
		a.setMap(a.fullMap(t, 1))
		cfg.Archives = append(cfg.Archives, a.config(true, false))
	}
	for _, u := range uris {
		var hs []string
		for _, a := range archs {
			if len(a.mementos[key(t, u)]) > 0 {
				hs = append(hs, a.name)
			}
		}
		if len(hs) == 0 {
			hs = []string{"-"}
		}
		fmt.Fprintf(&set, "%s %s\n", strings.Join(hs, ","), u)
	}
	routed := newAggregator(t, cfg)
	labelled, err := aggregate.ReadLabelled(strings.NewReader(set.String()), "set", routed.Archives())
	if err != nil {
		t.Fatal(err)
	}
	res, err := aggregate.Eval(ctx, routed, labelled, aggregate.EvalOptions{All: newAggregator(t, cfg, aggregate.WithoutRouting()), Parallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recall != 1 || res.Differ != 0 || len(res.Unconfirmed) > 0 || res.Avoided == 0 || res.Compared != len(uris) || res.AllAsked != int64(3*len(uris)) {
		t.Errorf("honest maps: %+v", res)
	}
	t.Logf("honest maps: %d asked, %d avoided (%.0f%%), precision %.2f", res.Asked, res.Avoided, 100*res.AvoidedShare, res.Precision)

	// b's map forgets site2's section 0.
	full := string(archs[1].fullMap(t, 0))
	var lying []string
	for _, l := range strings.Split(full, "\n") {
		if !strings.HasPrefix(l, "test,site2)/section0") {
			lying = append(lying, l)
		}
	}
	archs[1].setMap([]byte(strings.Join(lying, "\n")))
	routed = newAggregator(t, cfg)
	res, err = aggregate.Eval(ctx, routed, labelled, aggregate.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recall >= 1 || len(res.Hidden) == 0 || !strings.HasPrefix(res.Hidden[0], "b http://www.site2.test/section0/") {
		t.Errorf("a lying map: recall %v hidden %v", res.Recall, res.Hidden)
	}

	// Bad sets name the line.
	for _, bad := range []string{"a,zz http://example.com/\n", "a\n", "a ftp://example.com/\n"} {
		if _, err := aggregate.ReadLabelled(strings.NewReader("# comment\n"+bad), "set.txt", routed.Archives()); err == nil || !strings.Contains(err.Error(), "set.txt:2") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestMetrics: the per-archive counters reach the exposition text of a
// registry the Aggregator is registered with.
func TestMetrics(t *testing.T) {
	a, b := newMemArchive(t, "a"), newMemArchive(t, "b")
	a.add(t, "http://example.com/", day(1))
	a.setMap(a.fullMap(t, 0))
	b.setMap(b.fullMap(t, 0))
	ag := newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{a.config(true, false), b.config(true, false)}})
	for range 3 {
		ag.TimeMap(context.Background(), "http://example.com/")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(ag)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		`wayside_aggregate_requests_total{archive="a"} 3`,
		`wayside_aggregate_requests_total{archive="b"} 0`,
		`wayside_aggregate_avoided_total{archive="b"} 3`,
		`wayside_aggregate_hits_total{archive="a"} 3`,
		`wayside_aggregate_map_loaded{archive="b"} 1`,
		`wayside_aggregate_upstream_duration_seconds_count{archive="a"} 3`,
		`wayside_aggregate_lookups_total 3`,
	} {
		if !strings.Contains(buf.String(), want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	st := ag.Stats().Archives[0]
	if st.Requests != 3 || st.Hits != 3 || st.LatencyP99Ms <= 0 || st.MapLines != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestConfigCheck: configuration problems name their key.
func TestConfigCheck(t *testing.T) {
	cfg := aggregate.Config{Archives: []aggregate.ArchiveConfig{
		{Name: "ok", TimeMap: "http://a.test/tm/"},
		{Name: "ok", TimeMap: "ftp://a.test/"},
		{Name: "bad name", TimeMap: "http://a.test/tm/?x=1", MementoMap: "gopher://x/"},
		{Name: "x"},
	}}
	cfg.Defaults("data")
	var got []string
	cfg.Check(func(k, m string) { got = append(got, k+": "+m) })
	want := []string{
		`archives[1].name: duplicate archive name "ok"`,
		`archives[1].timemap: "ftp://a.test/": want an http(s) URL`,
		`archives[2].name: "bad name": want 1 to 64 letters, digits, '.', '_' or '-'`,
		`archives[2].timemap: "http://a.test/tm/?x=1/": a prefix the URI-R is appended to cannot hold a query or fragment`,
		`archives[2].mementomap: "gopher://x/": want an http(s) URL, a file path or "discover"`,
		`archives[3].timemap: missing: the URL prefix of the archive's link-format TimeMaps`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
