package characterize

import (
	"context"
	"os"
	"testing"
)

// BenchmarkScanFile characterizes the WARC named by $WAYSIDE_BENCH_WARC
// (the warcgen benchmark WARC; scripts/bench-characterize.sh measures the
// command on it).
func BenchmarkScanFile(b *testing.B) {
	path := os.Getenv("WAYSIDE_BENCH_WARC")
	if path == "" {
		b.Skip("set WAYSIDE_BENCH_WARC to a WARC file")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		st, _ := OpenStore("", StoreOptions{})
		c, err := New(Options{Store: st, Identifier: testIdentifier(b, Limits{})})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.ScanFile(context.Background(), path, false, nil); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
