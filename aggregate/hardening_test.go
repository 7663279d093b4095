package aggregate_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/aggregate"
)

// TestDormant: an archive failing every request is asked Tolerance times,
// then put to sleep (reported as dormant, the answer partial) while the
// others are still asked.
func TestDormant(t *testing.T) {
	down, up := newMemArchive(t, "down"), newMemArchive(t, "up")
	up.add(t, "http://example.com/", day(1))
	down.mu.Lock()
	down.status = http.StatusInternalServerError
	down.mu.Unlock()
	ag := newAggregator(t, aggregate.Config{Tolerance: 3, Dormant: time.Hour,
		Archives: []aggregate.ArchiveConfig{down.config(false, false), up.config(false, false)}})
	for i := range 10 {
		r, err := ag.TimeMap(context.Background(), "http://example.com/")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Mementos) != 1 || !r.Partial() {
			t.Fatalf("lookup %d: %d mementos, partial %v", i, len(r.Mementos), r.Partial())
		}
		if dormant := r.Archives[0].Dormant; dormant != (i >= 3) {
			t.Errorf("lookup %d: dormant %v (%s)", i, dormant, r.Archives[0].Error)
		}
	}
	if n := down.requests.Load(); n != 3 {
		t.Errorf("the failing archive was asked %d times, want 3 (the tolerance)", n)
	}
	if n := up.requests.Load(); n != 10 {
		t.Errorf("the working archive was asked %d times, want 10", n)
	}
}

// recorder is an archive that records the requests it gets and answers
// every TimeMap with the given body.
type recorder struct {
	mu    sync.Mutex
	paths []string
	auth  []string
	body  func(host string) string
	srv   *httptest.Server
}

func newRecorder(t *testing.T, body func(host string) string) *recorder {
	r := &recorder{body: body}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.paths = append(r.paths, req.URL.RawPath+"|"+req.URL.Path)
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/link-format")
		fmt.Fprint(w, r.body(req.Host))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// TestURIRNormalized: a URI-R with dot segments (plain or escaped) is
// normalised before the request carrying the archive's token: the archive
// never sees a path climbing out of its prefix.
func TestURIRNormalized(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://x.test/a/../../../admin", "http://x.test/admin"},
		{"http://x.test/%2e%2e/%2E%2E/admin?q=1", "http://x.test/admin?q=1"},
		{"http://x.test/./a/./b", "http://x.test/a/b"},
		{"http://x.test/a.b/c", "http://x.test/a.b/c"},
	} {
		got, err := aggregate.ParseURIR(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.in, got, err, c.want)
		}
	}
	if _, err := aggregate.ParseURIR("http://../admin"); err == nil {
		t.Error("a host of dots accepted")
	}
	rec := newRecorder(t, func(string) string { return "" })
	ag := newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{
		{Name: "tok", TimeMap: rec.srv.URL + "/api/timemap/", Token: "bearer-secret-0123456789"}}})
	for _, raw := range []string{"http://x.test/a/../../../../admin", "http://x.test/%2e%2e/%2e%2e/%2e%2e/admin"} {
		req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/timemap/link/"+raw, nil)
		ag.Serve(httptest.NewRecorder(), req, "timemap/link/"+raw, "http://agg.test/aggregate")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.paths) != 2 {
		t.Fatalf("%d requests: %v", len(rec.paths), rec.paths)
	}
	for _, p := range rec.paths {
		if strings.Contains(p, "..") || strings.Contains(strings.ToLower(p), "%2e") || !strings.Contains(p, "/api/timemap/http://x.test/admin") {
			t.Errorf("the archive saw %q", p)
		}
	}
}

// TestTokensNotInAnswers: an archive's path token and bearer token never
// appear in an aggregated TimeMap, even when its URI-Ms carry them.
func TestTokensNotInAnswers(t *testing.T) {
	const pathTok, bearer = "cdx-path-token-abcdef0123", "bearer-secret-0123456789"
	rec := newRecorder(t, func(host string) string {
		return fmt.Sprintf(`<http://example.com/>; rel="original",
<http://%s/t/%s/default/20200101000000/http://example.com/>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT",
<http://%s/default/20200102000000/http://example.com/?auth=%s>; rel="memento"; datetime="Thu, 02 Jan 2020 00:00:00 GMT",
`, host, pathTok, host, bearer)
	})
	ag := newAggregator(t, aggregate.Config{CacheTTL: time.Hour, Archives: []aggregate.ArchiveConfig{
		{Name: "w", TimeMap: rec.srv.URL + "/t/" + pathTok + "/default/timemap/link/", Token: bearer}}})
	// Twice each: the second from the cache.
	for _, kind := range []string{"timemap/link/", "timemap/json/", "", "timemap/link/", "timemap/cdxj/"} {
		req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/"+kind+"http://example.com/", nil)
		w := httptest.NewRecorder()
		if err := ag.Serve(w, req, kind+"http://example.com/", "http://agg.test/aggregate"); err != nil {
			t.Fatal(err)
		}
		all := w.Body.String() + fmt.Sprint(w.Result().Header)
		if strings.Contains(all, pathTok) || strings.Contains(all, bearer) {
			t.Errorf("%q: a token in the answer:\n%s", kind, all)
		}
		if !strings.Contains(all, rec.srv.URL+"/default/20200101000000/http://example.com/") {
			t.Errorf("%q: the memento without its path token is missing:\n%s", kind, all)
		}
		if kind == "timemap/link/" && w.Result().Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("no CORS on the TimeMap")
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, a := range rec.auth {
		if a != "Bearer "+bearer {
			t.Errorf("the archive got Authorization %q", a)
		}
	}
}

// TestCDXJAndMementoRoutes: MemGator's /timemap/cdxj/ TimeMap and its
// /memento/<14 digits>/<URI-R> datetime-in-URL TimeGate.
func TestCDXJAndMementoRoutes(t *testing.T) {
	a, b := newMemArchive(t, "a"), newMemArchive(t, "b")
	a.add(t, "http://example.com/", day(1), day(5))
	b.add(t, "http://example.com/", day(3))
	ag := newAggregator(t, aggregate.Config{Archives: []aggregate.ArchiveConfig{a.config(false, true), b.config(false, true)}})
	serve := func(rest string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/"+rest, nil)
		w := httptest.NewRecorder()
		if err := ag.Serve(w, req, rest, "http://agg.test/aggregate"); err != nil {
			t.Fatalf("%s: %v", rest, err)
		}
		return w
	}
	w := serve("timemap/cdxj/http://example.com/")
	lines := strings.Split(strings.TrimSpace(w.Body.String()), "\n")
	var mementos []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "!") {
			mementos = append(mementos, l)
		}
	}
	if len(mementos) != 3 || !strings.HasPrefix(mementos[0], day(1).Format("20060102150405")+" {") ||
		!strings.Contains(mementos[1], b.urim("http://example.com/", day(3))) || !strings.Contains(mementos[0], `"rel":"first memento"`) ||
		!strings.Contains(w.Body.String(), `!meta {"original_uri":"http://example.com/"}`) {
		t.Errorf("cdxj TimeMap:\n%s", w.Body.String())
	}
	w = serve("memento/" + day(3).Add(time.Hour).Format("20060102150405") + "/http://example.com/")
	if w.Code != http.StatusFound || w.Header().Get("Location") != b.urim("http://example.com/", day(3)) {
		t.Errorf("memento route: %d to %q", w.Code, w.Header().Get("Location"))
	}
	req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/memento/2020/http://example.com/", nil)
	if err := ag.Serve(httptest.NewRecorder(), req, "memento/2020/http://example.com/", "http://agg.test/aggregate"); err == nil {
		t.Error("a short datetime accepted")
	}
}

// TestCache: an archive's TimeMap answer is reused within cache_ttl (the
// answer says cached), a client's Cache-Control: no-cache asks again, an
// archive's Cache-Control: no-store or max-age=0 is honoured, and an
// answer larger than the cache's bound is not kept.
func TestCache(t *testing.T) {
	var mu sync.Mutex
	cc, n := "", 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/link-format")
		fmt.Fprint(w, `<http://example.com/>; rel="original",
<http://a.test/1/http://example.com/>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT",
<http://a.test/2/http://example.com/>; rel="memento"; datetime="Thu, 02 Jan 2020 00:00:00 GMT",
`)
	}))
	defer srv.Close()
	asked := func() int { mu.Lock(); defer mu.Unlock(); return n }
	setCC := func(v string) { mu.Lock(); cc = v; mu.Unlock() }
	ag := newAggregator(t, aggregate.Config{CacheTTL: time.Hour, Archives: []aggregate.ArchiveConfig{{Name: "a", TimeMap: srv.URL + "/tm/"}}})
	lookup := func(u string) *aggregate.Result {
		r, err := ag.TimeMap(context.Background(), u)
		if err != nil || len(r.Mementos) != 2 {
			t.Fatalf("%+v %v", r, err)
		}
		return r
	}
	lookup("http://example.com/")
	if r := lookup("http://example.com/"); !r.Archives[0].Cached || asked() != 1 {
		t.Errorf("second lookup: cached %v, archive asked %d times", r.Archives[0].Cached, asked())
	}
	req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/timemap/link/http://example.com/", nil)
	req.Header.Set("Cache-Control", "no-cache")
	if err := ag.Serve(httptest.NewRecorder(), req, "timemap/link/http://example.com/", "http://agg.test/aggregate"); err != nil || asked() != 2 {
		t.Errorf("no-cache: asked %d times, %v", asked(), err)
	}
	for i, v := range []string{"no-store", "max-age=0", "private, max-age=600"} {
		setCC(v)
		u := fmt.Sprintf("http://example.com/%d", i)
		before := asked()
		lookup(u)
		lookup(u)
		if asked()-before != 2 {
			t.Errorf("Cache-Control %q: asked %d times for two lookups, want 2", v, asked()-before)
		}
	}
	small := newAggregator(t, aggregate.Config{CacheTTL: time.Hour, CacheMementos: 1, Archives: []aggregate.ArchiveConfig{{Name: "a", TimeMap: srv.URL + "/tm/"}}})
	setCC("")
	before := asked()
	for range 2 {
		if r, err := small.TimeMap(context.Background(), "http://example.com/big"); err != nil || r.Archives[0].Cached {
			t.Errorf("an answer over the bound was cached: %+v %v", r, err)
		}
	}
	if asked()-before != 2 {
		t.Errorf("asked %d times", asked()-before)
	}
}
