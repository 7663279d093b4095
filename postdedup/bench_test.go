package postdedup

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRun runs the whole pipeline (byte verification, fast
// validation) on $WAYSIDE_BENCH_WARC (the default warcgen WARC, see
// scripts/bench-dedup.sh); rawMB/cpu-s is uncompressed megabytes per CPU
// second (user+sys).
func BenchmarkRun(b *testing.B) {
	path := os.Getenv("WAYSIDE_BENCH_WARC")
	if path == "" {
		b.Skip("WAYSIDE_BENCH_WARC is not set: scripts/bench-dedup.sh sets it")
	}
	var raw int64
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "out")
		rep, err := Run(context.Background(), []string{path}, out, RunOptions{})
		if err != nil {
			b.Fatal(err)
		}
		raw = rep.RawBytes
		b.ReportMetric(rep.Saving*100, "saving-%")
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(raw)*float64(b.N)/1e6/cpu.Seconds(), "rawMB/cpu-s")
}
