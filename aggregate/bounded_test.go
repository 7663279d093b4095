package aggregate_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/aggregate"
)

// bigEntry is one memento a big upstream lists.
type bigEntry struct {
	uri string
	at  time.Time
}

var bigT0 = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)

func bigTS(t time.Time) string { return t.Format("20060102150405") }

// bigUpstream describes a large TimeMap, generated on the fly (never
// held whole): entry i of n.
type bigUpstream struct {
	name     string
	n        int
	priority int
	cdxj     bool
	pages    int // link format split over this many pages (rel="next")
	entry    func(i int) bigEntry
}

func (u *bigUpstream) serve(w http.ResponseWriter, r *http.Request) {
	page := 0
	fmt.Sscanf(r.URL.Query().Get("page"), "%d", &page)
	pages := max(1, u.pages)
	lo, hi := page*u.n/pages, (page+1)*u.n/pages
	if page+1 < pages {
		w.Header().Set("Link", fmt.Sprintf("<%s?page=%d>; rel=\"next\"", r.URL.Path, page+1))
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	if u.cdxj {
		w.Header().Set("Content-Type", "application/cdxj+ors")
		fmt.Fprintf(bw, "!context [\"http://tools.ietf.org/html/rfc7089\"]\n!keys [\"memento_datetime_YYYYMMDDhhmmss\"]\n")
		for i := lo; i < hi; i++ {
			e := u.entry(i)
			fmt.Fprintf(bw, "%s {\"uri\": \"%s\", \"rel\": \"memento\", \"datetime\": \"%s\"}\n", bigTS(e.at), e.uri, e.at.Format(http.TimeFormat))
		}
		return
	}
	w.Header().Set("Content-Type", "application/link-format")
	fmt.Fprintf(bw, "<http://example.com/>; rel=\"original\",\n")
	for i := lo; i < hi; i++ {
		e := u.entry(i)
		fmt.Fprintf(bw, "<%s>; rel=\"memento\"; datetime=\"%s\",\n", e.uri, e.at.Format(http.TimeFormat))
	}
	fmt.Fprintf(bw, "<http://example.com/timegate>; rel=\"timegate\"\n")
}

// hashWriter is a ResponseWriter keeping only a digest of the body.
type hashWriter struct {
	h    http.Header
	code int
	sum  hash.Hash
	n    int64
}

func (w *hashWriter) Header() http.Header { return w.h }
func (w *hashWriter) WriteHeader(c int)   { w.code = c }
func (w *hashWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	w.n += int64(len(b))
	return w.sum.Write(b)
}

// TestMergeBoundedMemory: four archives list 450,000 mementos between
// them (~45 MB of TimeMaps: link format sorted, link format in reverse
// order over three pages, CDXJ, a higher-priority archive in reverse
// order; URI-Ms repeated across and within archives at the same
// datetime). The aggregated link-format TimeMap equals a reference merge
// done in memory here (time, then priority and configuration order, then
// URI-M; a URI-M repeated at a datetime kept once), and while the
// aggregator streams and merges them the process's live heap (the
// runtime's /gc/heap/live:bytes after each collection) grows by less
// than 40 MiB (holding the 450,000 mementos themselves, as a merge in
// memory does, takes more: ~56 bytes of Memento plus ~45 of URI each).
func TestMergeBoundedMemory(t *testing.T) {
	ups := []*bigUpstream{
		{name: "a", n: 100_000, entry: func(i int) bigEntry {
			at := bigT0.Add(time.Duration(i) * time.Minute)
			return bigEntry{fmt.Sprintf("http://a.test/web/%s/http://example.com/", bigTS(at)), at}
		}},
		{name: "b", n: 200_000, pages: 3, entry: func(i int) bigEntry {
			j := 200_000 - 1 - i // newest first: every batch is a run of its own
			at := bigT0.Add(time.Duration(j) * 30 * time.Second)
			if j%200 == 0 {
				// a's URI-M at a's time: listed twice, kept once (a's, a
				// being configured first).
				return bigEntry{fmt.Sprintf("http://a.test/web/%s/http://example.com/", bigTS(at)), at}
			}
			return bigEntry{fmt.Sprintf("http://b.test/%d/http://example.com/", j), at}
		}},
		{name: "c", n: 50_000, cdxj: true, entry: func(i int) bigEntry {
			if i%1000 == 999 {
				i-- // the previous entry again: listed twice by c, kept once
			}
			at := bigT0.Add(time.Duration(i)*2*time.Minute + 30*time.Second)
			return bigEntry{fmt.Sprintf("http://c.test/web/%sid_/http://example.com/", bigTS(at)), at}
		}},
		{name: "d", n: 100_000, priority: 1, entry: func(i int) bigEntry {
			j := 100_000 - 1 - i
			at := bigT0.Add(time.Duration(j) * time.Minute) // a's datetimes: d (priority 1) goes first
			if j%5000 == 7 {
				j-- // the same URI-M as the next entry, at another datetime: both kept
			}
			return bigEntry{fmt.Sprintf("http://d.test/%d/http://example.com/", j), at}
		}},
	}
	cfg := aggregate.Config{Deadline: 10 * time.Minute, MaxTimeMapBytes: 64 << 20}
	var served atomic.Int64
	for _, u := range ups {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			u.serve(w, r)
		}))
		t.Cleanup(srv.Close)
		cfg.Archives = append(cfg.Archives, aggregate.ArchiveConfig{Name: u.name, TimeMap: srv.URL + "/tm/", Priority: u.priority})
	}
	ag := newAggregator(t, cfg)

	// The live heap, sampled while the request runs.
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := live()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := live(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	w := &hashWriter{h: http.Header{}, sum: sha256.New()}
	req := httptest.NewRequest(http.MethodGet, "http://agg.test/aggregate/timemap/link/http://example.com/", nil)
	err := ag.Serve(w, req, "timemap/link/http://example.com/", "http://agg.test/aggregate")
	runtime.GC()
	if v := live(); v > peak.Load() {
		peak.Store(v)
	}
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if w.code != http.StatusOK || w.h.Get(aggregate.HeaderPartial) != "" {
		t.Fatalf("status %d, partial %q", w.code, w.h.Get(aggregate.HeaderPartial))
	}
	if served.Load() != 6 {
		t.Errorf("upstream requests: %d, want 6 (b over 3 pages)", served.Load())
	}
	grew := int64(peak.Load()) - int64(base)
	t.Logf("body %d bytes, %s mementos; live heap %d MiB before, peak %d MiB", w.n, w.h.Get("X-Memento-Count"), base>>20, peak.Load()>>20)
	if grew > 40<<20 {
		t.Errorf("the live heap grew by %d MiB while merging (bound 40 MiB)", grew>>20)
	}

	// The reference merge, in memory.
	type ref struct {
		bigEntry
		rank int
	}
	var all []ref
	for k, u := range ups {
		for i := range u.n {
			all = append(all, ref{u.entry(i), -u.priority*1_000_000 + k})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		x, y := all[i], all[j]
		if !x.at.Equal(y.at) {
			return x.at.Before(y.at)
		}
		if x.rank != y.rank {
			return x.rank < y.rank
		}
		return x.uri < y.uri
	})
	var ms []ref
	seen := map[string]bool{}
	var groupAt time.Time
	for _, r := range all {
		if !r.at.Equal(groupAt) {
			groupAt, seen = r.at, map[string]bool{}
		}
		if !seen[r.uri] {
			seen[r.uri] = true
			ms = append(ms, r)
		}
	}
	all = nil
	if got := w.h.Get("X-Memento-Count"); got != fmt.Sprint(len(ms)) {
		t.Errorf("X-Memento-Count %s, want %d", got, len(ms))
	}
	want := sha256.New()
	bw := bufio.NewWriter(want)
	self := "http://agg.test/aggregate/timemap/link/http://example.com/"
	fmt.Fprintf(bw, "<http://example.com/>; rel=\"original\",\n")
	fmt.Fprintf(bw, "<%s>; rel=\"self\"; type=\"application/link-format\"; from=\"%s\"; until=\"%s\",\n", self,
		ms[0].at.Format(http.TimeFormat), ms[len(ms)-1].at.Format(http.TimeFormat))
	for i, m := range ms {
		var rels []string
		if i == 0 {
			rels = append(rels, "first")
		}
		if i == len(ms)-1 {
			rels = append(rels, "last")
		}
		fmt.Fprintf(bw, "<%s>; rel=\"%s\"; datetime=\"%s\",\n", m.uri, strings.Join(append(rels, "memento"), " "), m.at.Format(http.TimeFormat))
	}
	fmt.Fprintf(bw, "<%s>; rel=\"timemap\"; type=\"application/link-format\",\n", self)
	fmt.Fprintf(bw, "<http://agg.test/aggregate/timemap/json/http://example.com/>; rel=\"timemap\"; type=\"application/json\",\n")
	fmt.Fprintf(bw, "<http://agg.test/aggregate/http://example.com/>; rel=\"timegate\"\n")
	bw.Flush()
	if g, x := hex.EncodeToString(w.sum.Sum(nil)), hex.EncodeToString(want.Sum(nil)); g != x {
		t.Errorf("merged TimeMap differs from the reference merge (%d bytes; sha256 %s, want %s)", w.n, g, x)
	}
	if len(ms) >= 450_000 || len(ms) < 440_000 {
		t.Errorf("reference merge kept %d of 450,000: the repeats are not what the test means", len(ms))
	}
}
