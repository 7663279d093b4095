package crawl

import (
	"context"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/crawl/sitetest"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCrawl crawls a large local site (distinct payloads: full
// records) and reports raw WARC megabytes written per CPU-second. The site
// is served in the same process, so its CPU is counted too (the figure is
// conservative); scripts/bench-crawl.sh measures the crawler alone.
func BenchmarkCrawl(b *testing.B) {
	srv, err := sitetest.Start(sitetest.NewLarge(120, 256<<10))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	seed, _ := ParseSeed(srv.URL + "/")
	var raw int64
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		c0 := cpuTime()
		s, err := Open(Config{WARCDir: dir, Recorder: Options{MaxConnsPerHost: 4}})
		if err != nil {
			b.Fatal(err)
		}
		cr, err := NewCrawler(CrawlConfig{Seeds: []*url.URL{seed}, Recorder: s.Recorder, MaxDepth: -1, Parallel: 4})
		if err != nil {
			b.Fatal(err)
		}
		if err := cr.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
		raw += s.Writer.Stats().RawBytes
	}
	b.SetBytes(raw / int64(b.N))
	b.ReportMetric(float64(raw)/1e6/cpu.Seconds(), "rawMB/cpu-s")
}
