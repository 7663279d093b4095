package cdxj

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func randomLines(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("com,site%d)/p%d %014d {\"url\": \"http://site%d/p\"}", rng.IntN(50), rng.IntN(1000), rng.Int64N(1e14), i%7)
	}
	return out
}

func TestSorterSpillsAndSorts(t *testing.T) {
	lines := randomLines(20000, 1)
	lines = append(lines, lines[:100]...) // duplicates
	tmp := t.TempDir()
	for _, unique := range []bool{false, true} {
		s := NewSorter(SortOptions{MaxMemory: 64 << 10, TempDir: tmp, Unique: unique})
		for _, l := range lines {
			if err := s.Add([]byte(l + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		if len(s.runs) < 10 {
			t.Fatalf("%d runs: the test should spill", len(s.runs))
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
		if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("unique=%v: output is not the sorted input (%d vs %d lines)", unique, len(got), len(want))
		}
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Fatalf("%d run files left behind", len(ents))
		}
	}
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func TestMergeShards(t *testing.T) {
	all := randomLines(3000, 2)
	var inputs []MergeInput
	for k := 0; k < 5; k++ {
		var shard []string
		for i := k; i < len(all); i += 5 {
			shard = append(shard, all[i])
		}
		sort.Strings(shard)
		inputs = append(inputs, MergeInput{Name: fmt.Sprintf("shard%d", k), R: strings.NewReader(strings.Join(shard, "\n") + "\n")})
	}
	var out bytes.Buffer
	if err := Merge(&out, inputs, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(all)
	if out.String() != strings.Join(all, "\n")+"\n" {
		t.Fatal("merge output differs from the sorted union")
	}
}

func TestMergeRejectsUnsortedShard(t *testing.T) {
	var out bytes.Buffer
	err := Merge(&out, []MergeInput{
		{Name: "good.cdxj", R: strings.NewReader("a 1 {}\nc 1 {}\n")},
		{Name: "bad.cdxj", R: strings.NewReader("b 1 {}\nd 1 {}\nb 2 {}\n")},
	}, MergeOptions{})
	if !errors.Is(err, ErrUnsorted) || !strings.Contains(err.Error(), "bad.cdxj line 3") {
		t.Fatalf("err = %v, want ErrUnsorted naming bad.cdxj line 3", err)
	}
}

func TestMergeWithoutTrailingNewlineAndCRLF(t *testing.T) {
	var out bytes.Buffer
	err := Merge(&out, []MergeInput{{Name: "a", R: strings.NewReader("a\r\nc")}, {Name: "b", R: strings.NewReader("b\n\n")}}, MergeOptions{})
	if err != nil || out.String() != "a\nb\nc\n" {
		t.Fatalf("%q %v", out.String(), err)
	}
}

func TestSorterTempDirError(t *testing.T) {
	s := NewSorter(SortOptions{MaxMemory: 1, TempDir: filepath.Join(t.TempDir(), "missing")})
	if err := s.Add([]byte("x")); err == nil || !strings.HasPrefix(err.Error(), "cdxj: sort:") {
		t.Fatalf("err = %v", err)
	}
}
