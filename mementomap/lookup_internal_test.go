package mementomap

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// seekScan is seek without the sparse index: a plain binary search over
// bytes, to cross-check seek.
// Invariants: every line starting before lo has a smaller key; every line
// starting at or after hi has a key >= key; both are line starts.
func (m *Map) seekScan(key []byte) int {
	lo, hi := m.start, len(m.data)
	for lo < hi {
		mid := lo + (hi-lo)/2
		p := lo
		if i := bytes.LastIndexByte(m.data[lo:mid], '\n'); i >= 0 {
			p = lo + i + 1
		}
		k, end := m.lineAt(p)
		if bytes.Compare(k, key) < 0 {
			lo = end + 1
			if lo > hi {
				lo = hi
			}
		} else {
			hi = p
		}
	}
	return lo
}

// TestSeekPrefixIndex: seek, whose binary search and scan decide on the
// first 8 bytes of keys when they differ, finds the line the plain
// search finds, on maps of hundreds of lines with keys shorter and longer
// than 8 bytes, sharing long prefixes, prefixes of one another, and
// probes of every length around them.
func TestSeekPrefixIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	parts := []string{"a", "b", "c,", "com,", "com,ex", "org,x", ")/", "/a", "/ab", "-", "_", "z", "9"}
	gen := func() string {
		var b strings.Builder
		for n := 1 + rng.IntN(6); n > 0; n-- {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		return b.String()
	}
	for c := range 40 {
		set := map[string]bool{}
		for range 50 + rng.IntN(600) {
			set[gen()] = true
		}
		keys := slices.Sorted(maps.Keys(set))
		var data strings.Builder
		for i, k := range keys {
			data.WriteString(k + []string{" 1\n", "\t2\n", " 3 {}\n"}[i%3])
		}
		body := data.String()
		if c%2 == 1 {
			body = strings.TrimSuffix(body, "\n") // the last line unterminated
		}
		m := &Map{data: []byte(body), name: "test"}
		if err := m.index(); err != nil {
			t.Fatal(err)
		}
		probes := append(slices.Clone(keys), "", "!", "~~~~~~~~~~")
		for range 400 {
			probes = append(probes, gen())
		}
		for _, k := range keys {
			probes = append(probes, k[:rng.IntN(len(k)+1)], k+"a", k+"!")
		}
		for _, k := range probes {
			if got, want := firstOf(m.seek([]byte(k))), m.seekScan([]byte(k)); got != want {
				t.Fatalf("map %d (%d lines): seek(%q) = %d, plain search %d", c, len(keys), k, got, want)
			}
		}
	}
}

func firstOf(a, _ int) int { return a }
