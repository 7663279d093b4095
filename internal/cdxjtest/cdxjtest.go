// Package cdxjtest checks CDXJ files the way their readers use them: in
// byte order, accepted by `wayside cdxj --merge` (cdxj.Merge), and
// searchable by pywb's binary search over the file.
package cdxjtest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
)

// CheckSorted fails t unless every file is in byte order, the files merge
// (as `wayside cdxj --merge` merges them) and a pywb-style bisect of each
// file finds every one of its lines. It returns the merged lines.
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
			t.Errorf("%v", err)
			continue
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, cdxj.MergeInput{Name: p, R: f})
		checkBisect(t, p)
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

// checkBisect looks every line of the file up by its "key timestamp"
// prefix with Bisect.
func checkBisect(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		key, ts, _ := strings.Cut(line, " ")
		ts, _, _ = strings.Cut(ts, " ")
		prefix := key + " " + ts
		found := false
		for _, l := range Bisect(t, f, int64(len(b)), prefix, 64) {
			if l == line {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: a binary search for %q does not find its line", path, prefix)
		}
	}
}

// Bisect returns the lines of the sorted file r (size bytes) that start
// with prefix, found as pywb's binsearch does: a binary search over blocks
// of blockSize bytes, each probe reading the first whole line after the
// block start, then a forward scan.
func Bisect(t testing.TB, r io.ReaderAt, size int64, prefix string, blockSize int64) []string {
	t.Helper()
	lineAt := func(off int64) (string, int64) {
		br := bufio.NewReader(io.NewSectionReader(r, off, size-off))
		n := int64(0)
		if off > 0 { // skip the partial line the block starts in
			s, err := br.ReadString('\n')
			n += int64(len(s))
			if err != nil {
				return "", off + n
			}
		}
		s, _ := br.ReadString('\n')
		return strings.TrimSuffix(s, "\n"), off + n
	}
	lo, hi := int64(0), size/blockSize
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if l, _ := lineAt(mid * blockSize); l != "" && prefix > l {
			lo = mid
		} else {
			hi = mid
		}
	}
	_, start := lineAt(lo * blockSize)
	br := bufio.NewReader(io.NewSectionReader(r, start, size-start))
	var out []string
	for {
		s, err := br.ReadString('\n')
		s = strings.TrimSuffix(s, "\n")
		switch {
		case strings.HasPrefix(s, prefix):
			out = append(out, s)
		case s > prefix:
			return out
		}
		if err != nil {
			return out
		}
	}
}
