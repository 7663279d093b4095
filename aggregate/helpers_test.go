package aggregate_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/mementomap"
	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/surt"
)

// memArchive is a Memento archive on a loopback port (the pywb layout:
// /tm/<URI-R> link-format TimeMaps, /tg/<URI-R> TimeGate with a Link
// header of first, prev, closest, next and last mementos, /map its
// MementoMap), serving mementos held in memory. Tests change what it
// answers to inject faults.
type memArchive struct {
	name string
	srv  *httptest.Server

	mu       sync.Mutex
	mementos map[string][]time.Time // SURT → sorted datetimes
	uris     map[string]string      // SURT → a URI-R as captured
	// mapBody is served at /map (nil: 404); mapLink announces it.
	mapBody []byte
	mapLink string
	// status, when set, answers TimeMaps and TimeGates with it; body
	// replaces their body.
	status int
	body   string
	// hold, when set, blocks every TimeMap and TimeGate request until it
	// is closed (a slow archive).
	hold chan struct{}

	requests atomic.Int64 // TimeMap and TimeGate requests
	mapGets  atomic.Int64
}

func newMemArchive(t *testing.T, name string) *memArchive {
	t.Helper()
	a := &memArchive{name: name, mementos: map[string][]time.Time{}, uris: map[string]string{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func key(t testing.TB, uri string) string {
	k, err := surt.Canonicalize(uri)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// add records captures of uri.
func (a *memArchive) add(t testing.TB, uri string, at ...time.Time) {
	k := key(t, uri)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mementos[k] = append(a.mementos[k], at...)
	sort.Slice(a.mementos[k], func(i, j int) bool { return a.mementos[k][i].Before(a.mementos[k][j]) })
	if a.uris[k] == "" {
		a.uris[k] = uri
	}
}

func (a *memArchive) urim(uri string, at time.Time) string {
	return a.srv.URL + "/" + replay.Timestamp(at) + "/" + uri
}

// fullMap returns a MementoMap of everything the archive holds (as
// `wayside mementomap generate` writes it), compacted with weight w when
// w > 0.
func (a *memArchive) fullMap(t testing.TB, w float64) []byte {
	t.Helper()
	g := mementomap.NewGenerator(mementomap.GenerateOptions{Name: a.name})
	defer g.Close()
	a.mu.Lock()
	for k, ts := range a.mementos {
		for range ts {
			if err := g.Add(a.uris[k], 200, "text/html"); err != nil {
				t.Fatal(err)
			}
		}
	}
	a.mu.Unlock()
	var full bytes.Buffer
	if _, err := g.WriteTo(&full); err != nil {
		t.Fatal(err)
	}
	if w <= 0 {
		return full.Bytes()
	}
	var out bytes.Buffer
	if _, err := mementomap.Compact(context.Background(), &full, &out, mementomap.CompactOptions{Wh: w, Wp: w, TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func (a *memArchive) setMap(b []byte) {
	a.mu.Lock()
	a.mapBody = b
	a.mu.Unlock()
}

func (a *memArchive) serve(w http.ResponseWriter, r *http.Request) {
	ep := r.URL.EscapedPath()
	a.mu.Lock()
	if a.mapLink != "" {
		w.Header().Set("Link", a.mapLink)
	}
	if ep == "/map" {
		body := a.mapBody
		a.mu.Unlock()
		a.mapGets.Add(1)
		if body == nil {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
		return
	}
	hold, status, body := a.hold, a.status, a.body
	a.mu.Unlock()
	var route, rest string
	switch {
	case strings.HasPrefix(ep, "/tm/"):
		route, rest = "tm", ep[len("/tm/"):]
	case strings.HasPrefix(ep, "/tg/"):
		route, rest = "tg", ep[len("/tg/"):]
	default:
		http.NotFound(w, r)
		return
	}
	a.requests.Add(1)
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		w.WriteHeader(status)
		w.Write([]byte(body))
		return
	}
	uriR, err := replay.RouteURIR(rest, r.URL.RawQuery)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	k, err := surt.Canonicalize(uriR)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	ts := append([]time.Time(nil), a.mementos[k]...)
	a.mu.Unlock()
	if len(ts) == 0 {
		http.NotFound(w, r)
		return
	}
	memento := func(i int, rel string) string {
		return fmt.Sprintf("<%s>; rel=\"%s\"; datetime=\"%s\"", a.urim(uriR, ts[i]), rel, replay.HTTPDate(ts[i]))
	}
	if route == "tm" {
		w.Header().Set("Content-Type", "application/link-format")
		fmt.Fprintf(w, "<%s>; rel=\"original\",\n<%s/tm/%s>; rel=\"self\"; type=\"application/link-format\",\n", uriR, a.srv.URL, uriR)
		for i := range ts {
			fmt.Fprintf(w, "%s,\n", memento(i, "memento"))
		}
		fmt.Fprintf(w, "<%s/tg/%s>; rel=\"timegate\"\n", a.srv.URL, uriR)
		return
	}
	at := time.Now()
	if v := r.Header.Get("Accept-Datetime"); v != "" {
		if at, err = http.ParseTime(v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	c := 0 // the closest (ties: the earlier)
	for i := range ts {
		if absDur(ts[i].Sub(at)) < absDur(ts[c].Sub(at)) {
			c = i
		}
	}
	links := []string{fmt.Sprintf("<%s>; rel=\"original\"", uriR)}
	for _, i := range []int{0, c - 1, c, c + 1, len(ts) - 1} {
		if i >= 0 && i < len(ts) {
			links = append(links, memento(i, "memento"))
		}
	}
	w.Header().Set("Link", strings.Join(links, ", "))
	w.Header().Set("Location", a.urim(uriR, ts[c]))
	w.WriteHeader(http.StatusFound)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// archiveConfig lists a memArchive (with a map at /map when withMap).
func (a *memArchive) config(withMap, withTimeGate bool) aggregate.ArchiveConfig {
	c := aggregate.ArchiveConfig{Name: a.name, TimeMap: a.srv.URL + "/tm/"}
	if withTimeGate {
		c.TimeGate = a.srv.URL + "/tg/"
	}
	if withMap {
		c.MementoMap = a.srv.URL + "/map"
	}
	return c
}

// newAggregator builds an aggregator over archives with its maps fetched.
func newAggregator(t *testing.T, cfg aggregate.Config, opts ...aggregate.Option) *aggregate.Aggregator {
	t.Helper()
	cfg.MapDir = t.TempDir()
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = -1 // the tests count requests: no cache unless asked for
	}
	cfg.Defaults(t.TempDir())
	a, err := aggregate.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	a.RefreshMaps(context.Background())
	return a
}

// stat returns an archive's counters.
func stat(t *testing.T, a *aggregate.Aggregator, name string) (requests, avoided, errors int64, state string) {
	t.Helper()
	for _, s := range a.Stats().Archives {
		if s.Name == name {
			return s.Requests, s.Avoided, s.Errors, s.MapState
		}
	}
	t.Fatalf("no archive %s in stats", name)
	return
}

var t0 = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

func day(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour) }
