package cdxj

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIndex indexes the warcgen benchmark WARC ($WAYSIDE_BENCH_WARC or
// /tmp/bench.warc.gz, made by scripts/bench-cdxj.sh) into a sorted CDXJ
// index, payload digests computed, and reports uncompressed MB per CPU
// second (user+sys).
func BenchmarkIndex(b *testing.B) {
	path := os.Getenv("WAYSIDE_BENCH_WARC")
	if path == "" {
		path = "/tmp/bench.warc.gz"
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("benchmark WARC %s absent: run scripts/bench-cdxj.sh or ../shared/tools/warcgen first", path)
	}
	cpu0 := cpuTime()
	var data int64
	for i := 0; i < b.N; i++ {
		s := NewSorter(SortOptions{})
		st, err := IndexFile(context.Background(), path, IndexOptions{}, s.AddLine)
		if err != nil || len(st.Problems) > 0 {
			b.Fatal(err, st.Problems)
		}
		if _, err := s.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		data = st.DataBytes
	}
	cpu := cpuTime() - cpu0
	b.SetBytes(data)
	b.ReportMetric(float64(data)*float64(b.N)/1e6/cpu.Seconds(), "rawMB/cpu-s")
}
