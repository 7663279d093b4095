package postdedup

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/wayside-archive/wayside/warcio"
)

// TestManifestMemoryBudget: --mem-mb bounds the compare cache too (half
// of MaxMemory unless CompareCache is set), so that the scan's memory
// does not depend on a separate, unbounded default.
func TestManifestMemoryBudget(t *testing.T) {
	for _, c := range []struct{ mem, cache, want int64 }{
		{0, 0, 128 << 20},
		{64 << 20, 0, 32 << 20},
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
		c.compare(e, rec, p, i%2 == 0)
		if c.size > max {
			t.Fatalf("after %d payloads the cache holds %d bytes, budget %d", i+1, c.size, max)
		}
		var sum int64
		for _, v := range c.byKey {
			if int64(len(v.payload)) > c.keepMax() {
				t.Fatalf("the cache holds a payload of %d bytes, above keepMax %d", len(v.payload), c.keepMax())
			}
			sum += int64(len(v.payload))
		}
		if sum != c.size {
			t.Fatalf("cache size %d, payloads sum to %d", c.size, sum)
		}
		if int64(n) > c.keepMax() {
			continue
		}
		// The payload just cached makes a later copy of it SameAs.
		cp := &Entry{Key: e.Key, Path: "b.warc.gz"}
		cp.Offset, cp.PayloadLength = int64(i), int64(n)
		c.compare(cp, rec, bytes.Clone(p), false)
		if cp.SameAs != entryID(e.Path, e.Offset) {
			t.Fatalf("payload %d: copy SameAs %q, want %q", i, cp.SameAs, entryID(e.Path, e.Offset))
		}
	}
}
