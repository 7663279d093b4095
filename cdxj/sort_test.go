package cdxj

import (
	"bytes"
	"math/rand/v2"
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
