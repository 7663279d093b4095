package cdxj

import (
	"bytes"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
)

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
