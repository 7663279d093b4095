package pebble_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
)

// BenchmarkDelete builds an index of WAYSIDE_BENCH_DELETE_ENTRIES
// (default 1M) realistic originals with PutBatch (10,000 a durable batch:
// the floor, writing them) and deletes every one with one selector (all
// dates), then reports the CPU seconds of both, the originals deleted per
// CPU-second and the ratio delete/build. scripts/bench-validate.sh runs it.
func BenchmarkDelete(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("WAYSIDE_BENCH_DELETE_ENTRIES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("WAYSIDE_BENCH_DELETE_ENTRIES=%q", s)
		}
		n = v
	}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ix, err := pebble.Open(filepath.Join(b.TempDir(), "ix"))
		if err != nil {
			b.Fatal(err)
		}
		c0 := cpuTime()
		batch := make([]dedupindex.Entry, 0, 10000)
		for j := range n {
			o := indextest.SyntheticOriginal(j)
			batch = append(batch, dedupindex.Entry{Key: dedupindex.Key{Scope: "s", Digest: o.Digest}, Original: o})
			if len(batch) == cap(batch) || j == n-1 {
				if _, err := ix.PutBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		build := cpuTime() - c0
		b.StartTimer()
		c1 := cpuTime()
		got, err := ix.Delete(ctx, dedupindex.Selector{Scope: "s"})
		del := cpuTime() - c1
		b.StopTimer()
		if err != nil || got != int64(n) {
			b.Fatalf("Delete = %d, %v; want %d", got, err, n)
		}
		if err := ix.Check(ctx); err != nil {
			b.Fatal(err)
		}
		ix.Close()
		b.ReportMetric(float64(n)/del.Seconds(), "deleted/cpu-s")
		b.ReportMetric(del.Seconds(), "delete-cpu-s")
		b.ReportMetric(build.Seconds(), "build-cpu-s")
		b.ReportMetric(del.Seconds()/build.Seconds(), "delete/build")
	}
}
