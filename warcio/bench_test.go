package warcio

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// benchWARC is the warcgen file the benchmarks read: $WAYSIDE_BENCH_WARC, or
// the default output of scripts/bench-cdxj.sh.
func benchWARC(b *testing.B) string {
	p := os.Getenv("WAYSIDE_BENCH_WARC")
	if p == "" {
		p = "/tmp/bench.warc.gz"
	}
	if _, err := os.Stat(p); err != nil {
		b.Skipf("benchmark WARC %s absent: generate it with scripts/bench-cdxj.sh or ../shared/tools/warcgen", p)
	}
	return p
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchRead(b *testing.B, opts Options) {
	path := benchWARC(b)
	var raw int64
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		r, err := Open(path, opts)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		raw = r.dataPos()
		r.Close()
	}
	cpu := cpuTime() - cpu0
	b.SetBytes(raw)
	b.ReportMetric(float64(raw)*float64(b.N)/1e6/cpu.Seconds(), "rawMB/cpu-s")
}

// BenchmarkRead reads the warcgen WARC computing payload digests;
// rawMB/cpu-s is uncompressed megabytes per CPU second (user+sys).
func BenchmarkRead(b *testing.B) { benchRead(b, Options{}) }

// BenchmarkReadNoDigest is BenchmarkRead without payload digests.
func BenchmarkReadNoDigest(b *testing.B) { benchRead(b, Options{SkipPayloadDigest: true}) }

// rawSize returns the uncompressed size of a WARC file.
func rawSize(b *testing.B, path string) int64 {
	r, err := Open(path, Options{SkipPayloadDigest: true})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err == io.EOF {
			return r.dataPos()
		} else if err != nil {
			b.Fatal(err)
		}
	}
}
