package pebble_test

// Benchmarks for the dedup index. scripts/bench-index.sh runs them on a
// 10M-entry index; by default they use 200k entries so `go test -bench .`
// stays quick. Environment:
//
//	WAYSIDE_BENCH_ENTRIES  index size for the decision and size benchmarks (default 200000)
//	WAYSIDE_BENCH_DIR      directory to keep built indexes in between runs (default: a temp dir)
//	WAYSIDE_BENCH_WARC     WARC file for the import benchmark (default: the shared corpus)
//	WAYSIDE_BENCH_SNAPPY   set to 1 to compress tables with Snappy instead of the default Zstandard
//	WAYSIDE_BENCH_BLOCK    table block size in bytes (default: the index's default)
//	WAYSIDE_BENCH_BYURL    true or false: only that variant of the by-URL index (default both)
//	WAYSIDE_BENCH_WARM     untimed random lookups that warm the cache first (default 50000)
//	WAYSIDE_BENCH_CACHE    block cache size in bytes when reopening a built index (default: the
//	                       index's default); e.g. 1/10 of the default on a 1M index gives the
//	                       cache-to-data ratio of a 10M index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/internal/testenv"
)

// benchByURL returns the by-URL variants to measure.
func benchByURL() []bool {
	switch os.Getenv("WAYSIDE_BENCH_BYURL") {
	case "true":
		return []bool{true}
	case "false":
		return []bool{false}
	}
	return []bool{true, false}
}

func benchEntries() int {
	if s := os.Getenv("WAYSIDE_BENCH_ENTRIES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 200_000
}

// benchDigest and benchOriginal are the shared synthetic workload: a
// realistic original per i (~70-byte URI, UUID record id, one WARC file
// per 20,000 records, validators on a third).
func benchDigest(i int) string                { return indextest.SyntheticDigest(i) }
func benchOriginal(i int) dedupindex.Original { return indextest.SyntheticOriginal(i) }

// benchIndex opens an index of n synthetic entries, building it (batched,
// one sync per 10,000 entries) and compacting it on first use.
func benchIndex(b *testing.B, n int, byURL bool) *pebble.Index {
	b.Helper()
	snappy := os.Getenv("WAYSIDE_BENCH_SNAPPY") == "1"
	block, _ := strconv.Atoi(os.Getenv("WAYSIDE_BENCH_BLOCK"))
	name := fmt.Sprintf("index-%d-byurl-%v-snappy-%v-block-%d", n, byURL, snappy, block)
	root := os.Getenv("WAYSIDE_BENCH_DIR")
	if root == "" {
		root = filepath.Join(os.TempDir(), "wayside-bench-"+strconv.Itoa(os.Getpid()))
		b.Cleanup(func() { os.RemoveAll(root) })
	}
	dir := filepath.Join(root, name)
	done := filepath.Join(dir, "BUILT")
	opts := []pebble.Option{pebble.WithCompressionForBench(!snappy)}
	if block > 0 {
		opts = append(opts, pebble.WithBlockSize(block))
	}
	if !byURL {
		opts = append(opts, pebble.WithoutURLIndex())
	}
	if _, err := os.Stat(done); err != nil {
		os.RemoveAll(dir)
		ix, err := pebble.Open(dir, opts...)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		ctx := context.Background()
		batch := make([]dedupindex.Entry, 0, 10000)
		for i := 0; i < n; i++ {
			o := benchOriginal(i)
			batch = append(batch, dedupindex.Entry{Key: dedupindex.Key{Scope: "bench", Digest: o.Digest}, Original: o})
			if len(batch) == cap(batch) || i == n-1 {
				if _, err := ix.PutBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		built := time.Since(start)
		if err := ix.Compact(); err != nil {
			b.Fatal(err)
		}
		b.Logf("built %d entries in %s (%.0f entries/s), compacted in %s", n, built.Round(time.Millisecond), float64(n)/built.Seconds(), (time.Since(start) - built).Round(time.Millisecond))
		if err := ix.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if c, _ := strconv.ParseInt(os.Getenv("WAYSIDE_BENCH_CACHE"), 10, 64); c > 0 {
		opts = append(opts, pebble.WithCacheSize(c))
	}
	ix, err := pebble.Open(dir, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	return ix
}

// reportLatencies reports p50 and p99 of the recorded durations.
func reportLatencies(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(0, "ns/op") // per-op figures above are what counts
}

// BenchmarkDecision measures the dedup decision (Deduper.Decide: digest
// normalisation, policy, Claim) and a bare Claim, for digests present in the
// index (Duplicate) and absent (Claimed, then cancelled outside the timing),
// with and without the by-URL index.
func BenchmarkDecision(b *testing.B) {
	n := benchEntries()
	for _, byURL := range benchByURL() {
		ix := benchIndex(b, n, byURL)
		d, err := dedupindex.NewDeduper(ix, dedupindex.Policy{Scope: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		// Warm the block cache to its steady state (untimed) so the first
		// sub-benchmark does not pay for a cold cache.
		warm := rand.New(rand.NewPCG(5, 6))
		warmOps := 50_000
		if w, err := strconv.Atoi(os.Getenv("WAYSIDE_BENCH_WARM")); err == nil && w >= 0 {
			warmOps = w
		}
		for range warmOps {
			if _, _, err := ix.Lookup(ctx, dedupindex.Key{Scope: "bench", Digest: benchDigest(warm.IntN(n))}); err != nil {
				b.Fatal(err)
			}
		}
		for _, present := range []bool{true, false} {
			for _, op := range []string{"decide", "claim"} {
				b.Run(fmt.Sprintf("entries=%d/byurl=%v/present=%v/%s", n, byURL, present, op), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(uint64(len(op)), uint64(time.Now().UnixNano()))) // fresh keys per sub-benchmark
					lat := make([]time.Duration, 0, b.N)
					for b.Loop() {
						i := rng.IntN(n)
						if !present {
							i = -1 - rng.IntN(1<<40)
						}
						dig := benchDigest(i)
						var tk dedupindex.Ticket
						start := time.Now()
						if op == "decide" {
							dec, err := d.Decide(ctx, dedupindex.Candidate{URI: "http://x/", Digest: dig, PayloadLength: 100, Status: 200})
							if err != nil {
								b.Fatal(err)
							}
							lat = append(lat, time.Since(start))
							if (dec.Action == dedupindex.WriteRevisit) != present {
								b.Fatalf("decision %v for present=%v", dec.Action, present)
							}
							tk = dec.Ticket
						} else {
							r, err := ix.Claim(ctx, dedupindex.Key{Scope: "bench", Digest: dig})
							if err != nil {
								b.Fatal(err)
							}
							lat = append(lat, time.Since(start))
							if (r.State == dedupindex.Duplicate) != present {
								b.Fatalf("claim %v for present=%v", r.State, present)
							}
							tk = r.Ticket
						}
						if !present {
							if err := ix.Cancel(ctx, tk); err != nil {
								b.Fatal(err)
							}
						}
					}
					reportLatencies(b, lat)
				})
			}
		}
		b.Run(fmt.Sprintf("entries=%d/byurl=%v/byurl-lookup", n, byURL), func(b *testing.B) {
			if !byURL {
				b.Skip("no by-URL index")
			}
			rng := rand.New(rand.NewPCG(3, 4))
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				o := benchOriginal(rng.IntN(n))
				start := time.Now()
				got, err := ix.ByURL(ctx, "bench", dedupindex.URLKey(o.TargetURI))
				lat = append(lat, time.Since(start))
				if err != nil || len(got) != 1 {
					b.Fatalf("ByURL = %d, %v", len(got), err)
				}
			}
			reportLatencies(b, lat)
		})
	}
}

// BenchmarkSize reports bytes on disk per entry after compaction, in total
// and for the primary and by-URL parts.
func BenchmarkSize(b *testing.B) {
	n := benchEntries()
	for _, byURL := range benchByURL() {
		b.Run(fmt.Sprintf("entries=%d/byurl=%v", n, byURL), func(b *testing.B) {
			ix := benchIndex(b, n, byURL)
			for b.Loop() {
			}
			st, err := ix.Stats(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			p, s, err := ix.Sizes()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.DiskBytes)/float64(n), "disk-B/entry")
			b.ReportMetric(float64(p)/float64(n), "primary-B/entry")
			b.ReportMetric(float64(s)/float64(n), "byurl-B/entry")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkCommit measures durable commit latency (Claim, then Commit with
// fsync) with 1 and 8 concurrent committers sharing Pebble's group commit.
func BenchmarkCommit(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("committers=%d", workers), func(b *testing.B) {
			ix, err := pebble.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			ctx := context.Background()
			var mu sync.Mutex
			var lat []time.Duration
			var next int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					for {
						mu.Lock()
						i := next
						next++
						mu.Unlock()
						if i >= int64(b.N) {
							break
						}
						o := benchOriginal(int(i))
						r, err := ix.Claim(ctx, dedupindex.Key{Scope: "bench", Digest: o.Digest})
						if err != nil {
							b.Error(err)
							return
						}
						start := time.Now()
						if err := ix.Commit(ctx, r.Ticket, o); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, time.Since(start))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			b.StopTimer()
			reportLatencies(b, lat)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkImportWARC measures seeding throughput from WARC files:
// records/s and raw (stored) MB per CPU-second, including digesting every
// payload and the batched durable writes.
func BenchmarkImportWARC(b *testing.B) {
	var files []string
	if f := os.Getenv("WAYSIDE_BENCH_WARC"); f != "" {
		files = []string{f}
	} else {
		files = testenv.CorpusWARCs(b)
	}
	var size int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	var records int64
	var cpu, wall time.Duration
	for b.Loop() {
		b.StopTimer()
		ix, err := pebble.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0, w0 := cpuTime(), time.Now()
		st, err := dedupindex.Import(context.Background(), ix, files, dedupindex.ImportOptions{})
		cpu += cpuTime() - c0
		wall += time.Since(w0)
		if err != nil {
			b.Fatal(err)
		}
		records += st.Records
		b.StopTimer()
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(records)/wall.Seconds(), "records/s")
	b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	b.ReportMetric(float64(size)*float64(b.N)/1e6/wall.Seconds(), "MB/s")
}

// BenchmarkLookup measures Lookup (half hits, half misses) on an index of
// 100,000 originals put in batches of 500, as `wayside status bench` seeds
// the daemon: once settled after the puts (the newest entries still in the
// memtable) and once after a full compaction. cpu-ns/op is the process's
// CPU time per lookup (less noisy than wall time on a shared machine).
func BenchmarkLookup(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	for _, state := range []string{"fresh", "compacted"} {
		b.Run(state, func(b *testing.B) {
			ix, err := pebble.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			batch := make([]dedupindex.Entry, 0, 500)
			for i := range n {
				o := benchOriginal(i)
				batch = append(batch, dedupindex.Entry{Key: dedupindex.Key{Scope: "bench", Digest: o.Digest}, Original: o})
				if len(batch) == cap(batch) {
					if _, err := ix.PutBatch(ctx, batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			ix.WaitCompactionsForBench()
			if state == "compacted" {
				if err := ix.Compact(); err != nil {
					b.Fatal(err)
				}
			}
			keys := make([]dedupindex.Key, 1<<14)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range keys {
				d := benchDigest(-1 - i)
				if i%2 == 0 {
					d = benchDigest(rng.IntN(n))
				}
				keys[i] = dedupindex.Key{Scope: "bench", Digest: d}
			}
			for _, k := range keys { // warm the block cache
				if _, _, err := ix.Lookup(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
			i, hits := 0, 0
			cpu0 := cpuTime()
			for b.Loop() {
				_, ok, err := ix.Lookup(ctx, keys[i%len(keys)])
				if err != nil {
					b.Fatal(err)
				}
				if ok {
					hits++
				}
				i++
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			if hits != (i+1)/2 {
				b.Fatalf("%d hits in %d lookups, want half", hits, i)
			}
		})
	}
}
