package postdedup

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/digest"

	"github.com/wayside-archive/wayside/warcio"
)

// TestManifestMemoryBudget: --mem-mb bounds the compare cache too (an eighth
// of MaxMemory unless CompareCache is set), so that the scan's memory
// does not depend on a separate, unbounded default.
func TestManifestMemoryBudget(t *testing.T) {
	for _, c := range []struct{ mem, cache, want int64 }{
		{0, 0, 32 << 20},
		{64 << 20, 0, 8 << 20},
		{64 << 20, 8 << 20, 8 << 20},
		{64 << 20, -1, -1},
	} {
		o := ManifestOptions{MaxMemory: c.mem, CompareCache: c.cache}
		if err := o.defaults(); err != nil {
			t.Fatal(err)
		}
		if o.CompareCache != c.want {
			t.Errorf("MaxMemory %d, CompareCache %d: cache %d, want %d", c.mem, c.cache, o.CompareCache, c.want)
		}
		if c.want < 0 && newScanCache(o.CompareCache) != nil {
			t.Errorf("CompareCache %d: a cache was made", o.CompareCache)
		}
	}
}

// TestScanCacheBounded: however many payloads pass through it, the cache
// never holds more than its budget, keeps no payload above a quarter of
// it, and still finds a copy of a payload it holds.
func TestScanCacheBounded(t *testing.T) {
	const max = 1 << 20
	c := newScanCache(max)
	rec := &warcio.Record{HTTP: &warcio.HTTPInfo{}}
	for i := range 200 {
		n := 1000 + (i*7919)%(max/3) // some above keepMax
		p := bytes.Repeat([]byte{byte(i)}, n)
		e := &Entry{Key: fmt.Sprintf("sha1:%d", i), Path: "a.warc.gz"}
		e.Offset, e.PayloadLength = int64(i), int64(n)
		c.compare(e, rec, p, i%2 == 0, nil)
		if c.size > max {
			t.Fatalf("after %d payloads the cache holds %d bytes, budget %d", i+1, c.size, max)
		}
		var sum int64
		for _, v := range c.byKey {
			if int64(len(v.payload)) > c.keepMax() {
				t.Fatalf("the cache holds a payload of %d bytes, above keepMax %d", len(v.payload), c.keepMax())
			}
			sum += locCost + int64(len(v.payload))
		}
		if sum != c.size {
			t.Fatalf("cache size %d, payloads and locations sum to %d", c.size, sum)
		}
		if int64(n) > c.keepMax() {
			continue
		}
		// The payload just cached makes a later copy of it SameAs.
		cp := &Entry{Key: e.Key, Path: "b.warc.gz"}
		cp.Offset, cp.PayloadLength = int64(i), int64(n)
		c.compare(cp, rec, bytes.Clone(p), false, nil)
		if cp.SameAs != entryID(e.Path, e.Offset) {
			t.Fatalf("payload %d: copy SameAs %q, want %q", i, cp.SameAs, entryID(e.Path, e.Offset))
		}
	}
}

// TestScanCacheReadsBack: a payload pushed out of a small cache leaves
// its location; a later copy is then compared with the original read back
// from the input, during the scan: an identical copy is SameAs the
// original, a different payload under the same declared digest (a real
// MD5 collision) is not, and the cache stays within its budget.
func TestScanCacheReadsBack(t *testing.T) {
	a, _ := hex.DecodeString("d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f8955ad340609f4b30283e488832571415a085125e8f7cdc99fd91dbdf280373c5bd8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70")
	b, _ := hex.DecodeString("d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f8955ad340609f4b30283e4888325f1415a085125e8f7cdc99fd91dbd7280373c5bd8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70")
	md := digest.Of(digest.MD5, a).String()
	recs := []testRecord{{id: id(1), uri: "http://a.example/1", date: t0, payload: a, declared: md}}
	for i := range 7 { // other payloads: with their locations, more than the 8 KiB budget holds
		recs = append(recs, testRecord{id: id(10 + i), uri: fmt.Sprintf("http://f.example/%d", i), date: t0, payload: bytes.Repeat([]byte{byte('a' + i)}, 1024)})
	}
	recs = append(recs,
		testRecord{id: id(2), uri: "http://b.example/1", date: t0, payload: b, declared: md},
		testRecord{id: id(3), uri: "http://a.example/2", date: t0, payload: a, declared: md})
	in := filepath.Join(t.TempDir(), "c.warc.gz")
	offs := writeWARC(t, in, recs, nil)
	const budget = 8 << 10
	c, got := scanWithBudget(t, in, budget)
	if c.loads == 0 {
		t.Fatal("no payload was read back: the test did not push the original out")
	}
	if e := got[id(2)]; e == nil || e.SameAs != "" {
		t.Errorf("the colliding payload: %+v, want no SameAs", e)
	}
	if e := got[id(3)]; e == nil || e.SameAs != entryID(in, offs[0]) {
		t.Errorf("the copy: %+v, want SameAs %s", e, entryID(in, offs[0]))
	}
}

// TestScanCacheKeepsLocations: locations may fill half the budget, so
// that a scan of more distinct payloads than the payload bytes hold
// still compares every later copy itself (by reading its original back)
// instead of leaving copies to Resolve: here 100 payloads of 2 KiB pass a
// 64 KiB budget, whose eighth held only 32 locations, and each one's
// copy comes after all 100.
func TestScanCacheKeepsLocations(t *testing.T) {
	const n = 100
	var recs []testRecord
	for i := range n {
		recs = append(recs, testRecord{id: id(100 + i), uri: fmt.Sprintf("http://o.example/%d", i), date: t0, payload: bytes.Repeat([]byte(fmt.Sprintf("payload %d ", i)), 200)})
	}
	for i := range n {
		recs = append(recs, testRecord{id: id(300 + i), uri: fmt.Sprintf("http://c.example/%d", i), date: t0.Add(time.Hour), payload: recs[i].payload})
	}
	in := filepath.Join(t.TempDir(), "l.warc.gz")
	offs := writeWARC(t, in, recs, nil)
	const budget = 64 << 10
	if n*locCost <= budget/8 || n*locCost > budget/locShare {
		t.Fatalf("the test needs more locations than an eighth of the budget holds and no more than its share: %d", n)
	}
	c, got := scanWithBudget(t, in, budget)
	if c.loads == 0 {
		t.Fatal("no payload was read back: the payloads all fit, the test shows nothing")
	}
	for i := range n {
		if e := got[id(300+i)]; e == nil || e.SameAs != entryID(in, offs[i]) {
			t.Errorf("copy %d: %+v, want SameAs %s (compared during the scan)", i, e, entryID(in, offs[i]))
		}
	}
}

// TestSmallCacheSamePlan: two inputs scanned in parallel through a cache
// far smaller than their payloads (so most originals are read back from
// the inputs for their copies, by two goroutines at once) give the same
// revisits as no cache at all (every copy compared by Resolve reading
// both records again), and the outputs pass deep validation.
func TestSmallCacheSamePlan(t *testing.T) {
	src, gt := warcgen(t, "small.warc.gz", "-size-mb", "12")
	dir := t.TempDir()
	a := copyInputs(t, filepath.Join(dir, "a"), src)[0]
	b := filepath.Join(dir, "a", "second.warc.gz")
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	revisits := map[int64][]string{}
	for _, cache := range []int64{-1, 256 << 10} {
		opts := RunOptions{Manifest: ManifestOptions{Jobs: 2, CompareCache: cache},
			Resolve: ResolveOptions{Policy: Policy{MinPayloadSize: 1, Statuses: allStatuses}}, Rewrite: RewriteOptions{Jobs: 2}, Validate: ValidateOptions{Jobs: 2}}
		out := filepath.Join(dir, fmt.Sprint("out", cache))
		rep := runAll(t, []string{a, b}, out, opts)
		if rep.Resolve.Collisions != 0 || rep.Validate.Revisits != rep.Resolve.Duplicates {
			t.Fatalf("cache %d: %d collisions, %d revisits validated of %d planned", cache, rep.Resolve.Collisions, rep.Validate.Revisits, rep.Resolve.Duplicates)
		}
		// The second input is all copies of the first: every response
		// of it with a payload, besides the first input's own duplicates.
		if rep.Resolve.Duplicates <= gt.DupResponses {
			t.Fatalf("cache %d: %d copies, the first input alone holds %d", cache, rep.Resolve.Duplicates, gt.DupResponses)
		}
		for _, f := range []string{filepath.Base(a), filepath.Base(b)} {
			for _, r := range readAllRecords(t, filepath.Join(out, f), warcio.Options{}) {
				if r.Type == "revisit" {
					revisits[cache] = append(revisits[cache], f+" "+r.RecordID+" "+r.Header("WARC-Refers-To"))
				}
			}
		}
	}
	if fmt.Sprint(revisits[-1]) != fmt.Sprint(revisits[256<<10]) {
		t.Errorf("revisits differ: %d without a cache, %d with a small one", len(revisits[-1]), len(revisits[256<<10]))
	}
}

// scanWithBudget scans in with a compare cache of budget bytes, failing
// the test when the cache ever holds more, and returns the cache (closed
// at the test's end) and the entries by record ID.
func scanWithBudget(t *testing.T, in string, budget int64) (*scanCache, map[string]*Entry) {
	t.Helper()
	c := newScanCache(budget)
	t.Cleanup(c.close)
	opts := ManifestOptions{}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	got := map[string]*Entry{}
	if _, _, err := scanFile(context.Background(), in, opts, c, nil, func(e *Entry) {
		got[e.RecordID] = e
		if c.size > budget {
			t.Fatalf("after %s the cache holds %d bytes, budget %d", e.RecordID, c.size, budget)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return c, got
}
