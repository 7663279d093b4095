// Package cdxjtest checks CDXJ files the way their readers use them: in
// byte order, accepted by `wayside cdxj --merge` (cdxj.Merge), and
// searchable by pywb's binary search over the file.
package cdxjtest

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
)

// CheckSorted fails t unless every file is in byte order, the files merge
// (as `wayside cdxj --merge` merges them) and pywb's exact-URL query finds
// every line of each file (see CheckSearchable). It returns the merged
// lines.
func CheckSorted(t testing.TB, paths []string) []string {
	t.Helper()
	var inputs []cdxj.MergeInput
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := cdxj.CheckSorted(f, p); err != nil {
			t.Errorf("%v (pywb's binary search cannot find its lines)", err)
			continue
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, cdxj.MergeInput{Name: p, R: f})
		CheckSearchable(t, p)
	}
	var merged bytes.Buffer
	if err := cdxj.Merge(&merged, inputs, cdxj.MergeOptions{}); err != nil {
		t.Fatalf("merge: %v", err)
	}
	if merged.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(merged.String(), "\n"), "\n")
}

// CheckSearchable fails t unless pywb's exact-URL query — IterRange from
// key to key+"!", as pywb's calc_search_range gives it for match type
// exact — returns, for every urlkey of the file, exactly the lines with
// that key. Block sizes: pywb's 8192, and the smallest power of two above
// the longest line (pywb's search needs blocks longer than lines), so that
// small files are bisected too.
func CheckSearchable(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	byKey := map[string][]string{}
	small := 128
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		for small <= len(l)+1 {
			small *= 2
		}
		k, _, _ := strings.Cut(l, " ")
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], l)
	}
	for _, bs := range []int{8192, small} {
		for _, k := range keys {
			if got := IterRange(b, k, k+"!", bs); !slices.Equal(got, byKey[k]) {
				t.Errorf("%s: pywb's binary search (block %d) for %q finds %d lines, the file holds %d", path, bs, k, len(got), len(byKey[k]))
			}
		}
	}
}

// IterRange returns the lines of a sorted file that pywb's
// pywb.utils.binsearch.iter_range(reader, start, end) yields, step for
// step: binsearch_offset narrows the search to a block (comparing start
// with the first whole line after each block start, newline included, an
// empty line at the end of the file), then lines are read from the first
// whole line of that block, skipped while < start and taken while < end,
// trailing white space removed as pywb's rstrip does.
func IterRange(b []byte, start, end string, blockSize int) []string {
	readline := func(off int) (string, int) {
		if off >= len(b) {
			return "", len(b)
		}
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return string(b[off:]), len(b)
		}
		return string(b[off : off+i+1]), off + i + 1
	}
	lo, hi := 0, len(b)/blockSize
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		off := mid * blockSize
		if mid > 0 {
			_, off = readline(off) // skip the partial line
		}
		if line, _ := readline(off); start > line {
			lo = mid
		} else {
			hi = mid
		}
	}
	off := lo * blockSize
	if lo > 0 {
		_, off = readline(off)
	}
	var out []string
	matched := false
	for off < len(b) {
		var line string
		line, off = readline(off)
		line = strings.TrimRight(line, " \t\r\n")
		if !matched {
			if line < start {
				continue
			}
			matched = true
		}
		if line >= end {
			break
		}
		out = append(out, line)
	}
	return out
}
