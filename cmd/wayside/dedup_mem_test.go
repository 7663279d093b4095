package main

import (
	"runtime/debug"
	"testing"
)

// TestDedupMemoryFlags: --mem-mb bounds the compare cache (an eighth of it by
// default, --cache-mb alone when given, none with 0) and becomes the
// runtime's soft memory limit for the command (restored after it),
// unless GOMEMLIMIT sets one.
func TestDedupMemoryFlags(t *testing.T) {
	for _, c := range []struct {
		mem, cache int
		wantCache  int64 // ManifestOptions.CompareCache (0: the default, an eighth of MaxMemory)
		wantLimit  int64
	}{
		{200, -1, 0, 200 << 20},
		{64, 0, -1, 64 << 20},
		{64, 32, 32 << 20, 96 << 20},
	} {
		m := manifestFlags{memMB: c.mem, cacheMB: c.cache, jobs: 1}
		o, err := m.options(nil)
		if err != nil {
			t.Fatal(err)
		}
		if o.MaxMemory != int64(c.mem)<<20 || o.CompareCache != c.wantCache {
			t.Errorf("--mem-mb %d --cache-mb %d: MaxMemory %d CompareCache %d, want %d %d", c.mem, c.cache, o.MaxMemory, o.CompareCache, int64(c.mem)<<20, c.wantCache)
		}
		before := debug.SetMemoryLimit(-1)
		restore := m.limitHeap(&env{getenv: func(string) string { return "" }})
		if got := debug.SetMemoryLimit(-1); got != c.wantLimit {
			t.Errorf("--mem-mb %d --cache-mb %d: memory limit %d, want %d", c.mem, c.cache, got, c.wantLimit)
		}
		restore()
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Errorf("limit not restored: %d, want %d", got, before)
		}
		restore = m.limitHeap(&env{getenv: func(k string) string {
			if k == "GOMEMLIMIT" {
				return "1GiB"
			}
			return ""
		}})
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Errorf("with GOMEMLIMIT set the limit changed to %d", got)
		}
		restore()
	}
}
