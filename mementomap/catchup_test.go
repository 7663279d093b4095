package mementomap

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// writeCDXJ writes the lines of cs to dir/name, sorted when sorted is set
// (a closed WARC's CDXJ) or in capture order (an open one's).
func writeCDXJ(t *testing.T, dir, name string, cs []wayside.Capture, sorted bool) {
	t.Helper()
	var lines []string
	for _, c := range cs {
		l := cdxj.FromCapture(c)
		lines = append(lines, l.String())
	}
	if sorted {
		sort.Strings(lines)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func freqOf(t *testing.T, l *Live, uri string) ukvs.Freq {
	t.Helper()
	m, err := l.Lookup(uri)
	if err != nil || !m.Present {
		t.Fatalf("%s absent: %v", uri, err)
	}
	return m.Freq
}

// TestLiveCatchUp: a live map with CDXJ directories catches up from the
// CDXJ files (append order or sorted) exactly once: after a clean close
// nothing is fed twice, a capture fed from CDXJ is not counted again when
// delivered, and a merge cut short makes the replayed counts upper bounds.
func TestLiveCatchUp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "map.ukvs")
	all := captures(310, 9)
	cs := all[:300]
	for i := range all {
		all[i].URI = "http://example.com/same" // one key, counts are checkable
		all[i].Offset = int64(1000 + 10*i)
		if i >= 200 {
			all[i].File = "b.warc.gz"
		}
	}
	writeCDXJ(t, dir, "a.cdxj", cs[:150], true)  // a closed WARC: sorted
	writeCDXJ(t, dir, "b.cdxj", cs[200:], false) // an open one: append order
	opts := LiveOptions{CDXJDirs: []string{dir}}
	l, err := OpenLive(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if f := freqOf(t, l, cs[0].URI); f.M.N != 250 || f.M.Bound != ukvs.Exact {
		t.Fatalf("after catch-up: %v, want exactly 250 mementos", f)
	}
	// Delivered captures already fed are not counted again; new ones are.
	for _, c := range append(append([]wayside.Capture{}, cs[140:200]...), cs[290:]...) {
		if err := l.OnCapture(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if f := freqOf(t, l, cs[0].URI); f.M.N != 300 {
		t.Fatalf("after delivery: %v, want 300 (50 new captures)", f)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened after a clean close: the CDXJ holds nothing after the marks.
	writeCDXJ(t, dir, "a.cdxj", cs[:200], true)
	l, err = OpenLive(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if f := freqOf(t, l, cs[0].URI); f.M.N != 300 || f.M.Bound != ukvs.Exact {
		t.Fatalf("after reopening: %v, want exactly 300", f)
	}
	// A crash in the middle of a merge (state names the next marks): what
	// is fed again counts as an upper bound, never less.
	writeCDXJ(t, dir, "b.cdxj", all[200:], false)
	if err := l.beginMerge(marks{"a.warc.gz": all[199].Offset, "b.warc.gz": all[309].Offset}); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.m.Close()
	l.m, l.closed = nil, true
	l.mu.Unlock()
	l, err = OpenLive(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if f := freqOf(t, l, cs[0].URI); f.M.N != 310 || f.M.Bound != ukvs.AtMost {
		t.Fatalf("after a merge cut short: %v, want at most 310", f)
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}

// A live map without CDXJ directories cannot catch up, and says so.
func TestLiveResyncNeedsCDXJ(t *testing.T) {
	l, err := OpenLive(filepath.Join(t.TempDir(), "m.ukvs"), LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Resync(context.Background()); err == nil || !strings.Contains(err.Error(), "CDXJ") {
		t.Fatalf("Resync without CDXJ directories: %v", err)
	}
}
