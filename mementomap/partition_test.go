package mementomap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// TestCompactPartitionsEqualSingle: on a 20k-key Zipf input, compaction by
// 2..7 workers (cuts inside TLDs, between registrable domains, both passes
// parallel) gives byte for byte the single-process output and the same
// measured means.
func TestCompactPartitionsEqualSingle(t *testing.T) {
	dir := t.TempDir()
	in, _, _ := writeSynth(t, dir, 20000, 0)
	for _, given := range []bool{false, true} {
		opts := CompactOptions{Wh: 1, Wp: 1, NoSync: true}
		if given {
			opts.Means = &DepthMeans{Host: []float64{1000, 1000, 8.53, 8.95}, Path: []float64{25, 7.25, 4.96, 3.26}}
		}
		single := filepath.Join(dir, "single.ukvs")
		st1, err := CompactFile(context.Background(), in, single, opts)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(single)
		for _, w := range []int{2, 3, 4, 7} {
			o := opts
			o.Workers = w
			out := filepath.Join(dir, fmt.Sprintf("par-%d.ukvs", w))
			st, err := CompactFile(context.Background(), in, out, o)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(out)
			if string(got) != string(want) {
				t.Fatalf("given=%v workers=%d: output differs from the single-process output", given, w)
			}
			if st.Partitions < 2 || st.InLines != st1.InLines || st.OutLines != st1.OutLines || st.Rollups != st1.Rollups || st.Means.String() != st1.Means.String() {
				t.Fatalf("given=%v workers=%d: %+v vs single %+v", given, w, st, st1)
			}
		}
	}
}

// TestCompactPartitionErrorLine: a bad line deep in a later partition is
// reported with its absolute line number.
func TestCompactPartitionErrorLine(t *testing.T) {
	var sb strings.Builder
	for i := 0; i < 3000; i++ {
		if i == 2500 {
			sb.WriteString("com,h02500)/ notacount\n")
			continue
		}
		fmt.Fprintf(&sb, "com,h%05d)/ 1\n", i)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ukvs")
	if err := os.WriteFile(in, []byte("!meta {}\n"+sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 4} {
		_, err := CompactFile(context.Background(), in, filepath.Join(dir, "out.ukvs"), CompactOptions{Wh: 1, Wp: 1, Workers: w, NoSync: true})
		if err == nil || !strings.Contains(err.Error(), "in.ukvs:2502:") {
			t.Fatalf("workers=%d: got %v, want an error at line 2502", w, err)
		}
		var skipped []string
		st, err := CompactFile(context.Background(), in, filepath.Join(dir, "out.ukvs"), CompactOptions{Wh: 1, Wp: 1, Workers: w, NoSync: true, SkipBad: true,
			OnSkip: func(e *ukvs.Error) { skipped = append(skipped, e.Error()) }})
		if err != nil || st.Skipped != 1 || len(skipped) != 1 || !strings.Contains(skipped[0], ":2502:") || st.InLines != 2999 {
			t.Fatalf("workers=%d skip-bad: %+v %v %q", w, st, err, skipped)
		}
	}
}
