package mementomap

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/profiler/internal/zipfgen"
	"github.com/wayside-archive/wayside/profiler/ukvs"
)

// writeSynth writes a synthetic full map of n keys to dir and returns its
// path and absent keys.
func writeSynth(tb testing.TB, dir string, n int, absent int) (string, []zipfgen.Entry, []string) {
	tb.Helper()
	present, abs := zipfgen.Generate(zipfgen.Config{Keys: n, Seed: 1, Absent: absent})
	p := filepath.Join(dir, fmt.Sprintf("full-%d.ukvs", n))
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w := ukvs.NewWriter(f)
	for _, e := range present {
		if err := w.Write(ukvs.Record{Key: []byte(e.Key), Freq: ukvs.Freq{M: ukvs.Exactly(e.M), R: ukvs.Exactly(e.R)}}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p, present, abs
}

func benchCompact(b *testing.B, n, workers int) {
	dir := b.TempDir()
	in, _, _ := writeSynth(b, dir, n, 0)
	out := filepath.Join(dir, "out.ukvs")
	var st CompactStats
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var err error
		st, err = CompactFile(context.Background(), in, out, CompactOptions{Wh: 1, Wp: 1, Workers: workers})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.InLines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(st.OutLines)/float64(st.InLines), "relcost")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heapMB")
}

// BenchmarkCompact measures both passes of CompactFile (validate+measure,
// then compact) on synthetic Zipf inputs. lines/s counts input lines per
// full two-pass compaction.
func BenchmarkCompact(b *testing.B) {
	sizes := []int{1_000_000}
	if s := os.Getenv("MEMENTOMAP_BENCH_SIZES"); s != "" {
		sizes = nil
		for _, f := range splitComma(s) {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		for _, w := range []int{1, 2} {
			b.Run(fmt.Sprintf("keys=%d/workers=%d", n, w), func(b *testing.B) { benchCompact(b, n, w) })
		}
	}
}

func splitComma(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		for i, c := range data {
			if c == ',' {
				return i + 1, data[:i], nil
			}
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
