package cdxj

import (
	"bytes"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// fillRandom fills b with random lower-case letters.
func fillRandom(rng *rand.Rand, b []byte) {
	for j := range b {
		b[j] = byte('a' + rng.IntN(26))
	}
}

// TestSorterMemoryBounded: a Sorter holds about MaxMemory of lines
// whatever it is given: 10× MaxMemory of lines of varying length, spilled
// in runs, never keep more than twice MaxMemory live (the lines of
// earlier runs, scattered over the array by sorting, stayed referenced
// from the entries a shorter run did not overwrite: 4× MaxMemory and
// more), and the merge still gives every line in order.
func TestSorterMemoryBounded(t *testing.T) {
	const budget = 4 << 20
	s := NewSorter(SortOptions{MaxMemory: budget, TempDir: t.TempDir()})
	defer s.Close()
	rng := rand.New(rand.NewPCG(7, 1))
	line := make([]byte, 2000)
	base := testenv.LiveHeap()
	var most int64
	total, n := 0, 0
	for total < 10*budget {
		k := 100 + rng.IntN(1500)
		fillRandom(rng, line[:k])
		if err := s.Add(line[:k]); err != nil {
			t.Fatal(err)
		}
		total += k
		n++
		if n%2000 == 0 {
			most = max(most, testenv.LiveHeap()-base)
		}
	}
	if most > 2*budget {
		t.Errorf("%d MB of lines added with MaxMemory %d MB: up to %d MB live", total>>20, budget>>20, most>>20)
	}
	var out bytes.Buffer
	if _, err := s.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	got := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte{'\n'}), []byte{'\n'})
	if len(got) != n {
		t.Fatalf("%d lines out, %d in", len(got), n)
	}
	for i := 1; i < len(got); i++ {
		if bytes.Compare(got[i-1], got[i]) > 0 {
			t.Fatalf("line %d out of order", i)
		}
	}
}

// countLive is a writer that takes the live heap once, after the first
// megabyte written to it.
type countLive struct {
	n    int
	live int64
}

func (c *countLive) Write(p []byte) (int, error) {
	if c.n < 1<<20 && c.n+len(p) >= 1<<20 {
		c.live = testenv.LiveHeap()
	}
	c.n += len(p)
	return len(p), nil
}

// TestSorterMergeMemoryBounded: merging many runs reads each through a
// buffer sized so that all of them take about MaxMemory (256 KiB each,
// as before, would hold 300 runs × 256 KiB = 75 MB for a 64 KiB sort).
func TestSorterMergeMemoryBounded(t *testing.T) {
	const budget = 64 << 10
	s := NewSorter(SortOptions{MaxMemory: budget, TempDir: t.TempDir()})
	defer s.Close()
	rng := rand.New(rand.NewPCG(9, 1))
	line := make([]byte, 200)
	n := 0
	for total := 0; total < 300*budget; total += len(line) {
		fillRandom(rng, line)
		if err := s.Add(line); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if len(s.runs) < 250 {
		t.Fatalf("%d runs spilled, want about 300", len(s.runs))
	}
	runs := len(s.runs)
	base := testenv.LiveHeap()
	var c countLive
	if _, err := s.WriteTo(&c); err != nil {
		t.Fatal(err)
	}
	if c.n != n*(len(line)+1) {
		t.Fatalf("%d bytes merged, want %d", c.n, n*(len(line)+1))
	}
	if grew := c.live - base; grew > int64(runs)*(32<<10) {
		t.Errorf("merging %d runs of a %d KiB sort: %d KiB more live, want at most 32 KiB per run", runs, budget>>10, grew>>10)
	}
}

// TestSorterManyRuns spills more runs than one merge reads at once (so
// WriteTo merges groups of runs first) and lines longer than the whole
// memory (a run each): the output is still the sorted input, duplicates
// dropped with Unique, and no run file is left.
func TestSorterManyRuns(t *testing.T) {
	lines := randomLines(30000, 3)
	long := "com,long)/" + strings.Repeat("x", 5000) + " 20240101000000 {}"
	lines = append(lines, long, long, lines[7], lines[9])
	tmp := t.TempDir()
	for _, unique := range []bool{false, true} {
		s := NewSorter(SortOptions{MaxMemory: 4 << 10, TempDir: tmp, Unique: unique})
		for _, l := range lines {
			if err := s.Add([]byte(l + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		if len(s.runs) <= 2*mergeFanIn {
			t.Fatalf("%d runs: the test should spill more than %d", len(s.runs), 2*mergeFanIn)
		}
		if s.Len() != len(lines) {
			t.Fatalf("Len = %d, want %d", s.Len(), len(lines))
		}
		var out bytes.Buffer
		if _, err := s.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		want := append([]string(nil), lines...)
		sort.Strings(want)
		if unique {
			want = dedupe(want)
		}
		if out.String() != strings.Join(want, "\n")+"\n" {
			t.Fatalf("unique=%v: output is not the sorted input", unique)
		}
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Fatalf("%d run files left behind", len(ents))
		}
	}
}

// TestSorterLinesOffHeap: the lines a Sorter holds are not in the
// collected heap, so they do not raise the collector's goal (a multiple of
// the live heap): 24 MB of held lines leave the live heap within 1 MB of
// what it was.
func TestSorterLinesOffHeap(t *testing.T) {
	line := []byte(strings.Repeat("com,example)/path?q=", 15) + " 20240101000000 {}")
	heapAlloc := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	s := NewSorter(SortOptions{MaxMemory: 64 << 20, TempDir: t.TempDir()})
	defer s.Close()
	before := heapAlloc()
	var held int
	for held < 24<<20 {
		if err := s.Add(line); err != nil {
			t.Fatal(err)
		}
		held += len(line)
	}
	if len(s.runs) != 0 {
		t.Fatalf("%d runs: the lines should all be held in memory", len(s.runs))
	}
	after := heapAlloc()
	if after > before+1<<20 {
		t.Fatalf("live heap grew from %d to %d bytes holding %d bytes of lines", before, after, held)
	}
	runtime.KeepAlive(s)
}
