// Package loadgen drives a running sidecar with digest lookups over its API
// and measures throughput and latency (`wayside status bench`,
// scripts/bench-sidecar.sh). It is a measuring tool, not a test.
package loadgen

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
)

// Options configure a run.
type Options struct {
	// Seed originals stored before the run (PUT batches). 0: none.
	Seed int
	// Keys is how many seeded digests (SeedDigest(0..Keys-1)) hits are drawn
	// from; default Seed. Set it without Seed to reuse an earlier seeding.
	Keys int
	// Workers issuing lookups concurrently. Default 16.
	Workers int
	// Duration of the measured run. Default 60s.
	Duration time.Duration
	// Scope used for seeding and lookups ("" = daemon default).
	Scope string
	// HitRatio is the share of lookups for seeded digests (the rest miss).
	HitRatio float64
	// Progress receives one line per 10 s when not nil.
	Progress io.Writer
	// WriteRate, when above 0, runs a writer alongside the lookups for the
	// whole run: WriteRate new originals per second, each claimed and
	// committed (a crawler's path; every commit a durable write), as a
	// crawl ingesting while others look digests up.
	WriteRate int
	// WriteTo is the daemon the writer writes to. Default: the lookups'
	// client (another daemon keeps the machine's load the same while the
	// lookups measure something else, such as a floor).
	WriteTo *client.Client
}

// Result is what a run measured.
type Result struct {
	Lookups   int64
	Hits      int64
	Errors    int64
	Elapsed   time.Duration
	PerSecond float64
	P50       time.Duration
	P99       time.Duration
	P999      time.Duration
	Max       time.Duration
	// ClientCPU is the CPU time the generator itself used (user+system).
	ClientCPU  time.Duration
	FirstError string
	// Writes is how many originals the writer committed (WriteRate), and
	// WriteErrors how many claims or commits failed.
	Writes      int64
	WriteErrors int64
}

func (r Result) String() string {
	s := fmt.Sprintf("lookups=%d hits=%d errors=%d elapsed=%s rate=%.0f/s p50=%s p99=%s p99.9=%s max=%s client_cpu=%s",
		r.Lookups, r.Hits, r.Errors, r.Elapsed.Round(time.Millisecond), r.PerSecond, r.P50, r.P99, r.P999, r.Max, r.ClientCPU.Round(time.Millisecond))
	if r.Writes > 0 || r.WriteErrors > 0 {
		s += fmt.Sprintf(" writes=%d write_errors=%d", r.Writes, r.WriteErrors)
	}
	return s
}

// SeedDigest returns the i-th deterministic seed digest.
func SeedDigest(i int) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	h := sha1.Sum(append([]byte("wayside-loadgen-"), b[:]...))
	return digest.Digest{Alg: digest.SHA1, Sum: h[:]}.String()
}

// Seed stores n originals through the API (PUT batches of 500: one
// durable sync per batch, as an index seeded from an earlier crawl).
func Seed(ctx context.Context, c *client.Client, scope string, n int) error {
	const batch = 500
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += batch {
		var entries []dedupindex.Entry
		for k := i; k < i+batch && k < n; k++ {
			entries = append(entries, dedupindex.Entry{
				Key: dedupindex.Key{Scope: scope, Digest: SeedDigest(k)},
				Original: dedupindex.Original{
					TargetURI: fmt.Sprintf("http://bench.example/%d", k), Date: base.Add(time.Duration(k) * time.Second),
					RecordID: fmt.Sprintf("<urn:uuid:00000000-0000-4000-8000-%012d>", k), File: "bench.warc.gz",
					Offset: int64(k) * 1000, Length: 1000, PayloadLength: 5000, Status: 200, MIME: "text/html",
				}})
		}
		if _, err := c.Put(ctx, entries); err != nil {
			return fmt.Errorf("loadgen: seed: %w", err)
		}
	}
	return nil
}

// Run issues lookups for o.Duration and reports what it measured.
func Run(ctx context.Context, c *client.Client, o Options) (Result, error) {
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.Seed > 0 {
		if err := Seed(ctx, c, o.Scope, o.Seed); err != nil {
			return Result{}, err
		}
	}
	if o.Keys == 0 {
		o.Keys = o.Seed
	}
	// Pre-build the request paths, and only look for "found":true in the
	// answers: the generator shares the CPUs with the daemon, so it spends
	// as little as it can.
	const pool = 1 << 14
	paths := make([]string, pool)
	for i := range paths {
		d := SeedDigest(1<<40 + i)
		if o.Keys > 0 && float64(i%100) < o.HitRatio*100 {
			d = SeedDigest(i % o.Keys)
		}
		q := url.Values{"digest": {d}}
		if o.Scope != "" {
			q.Set("scope", o.Scope)
		}
		paths[i] = api.PathLookup + "?" + q.Encode()
	}
	var lookups, hits, errs atomic.Int64
	var firstErr atomic.Value
	lat := make([][]time.Duration, o.Workers)
	runCtx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	cpu0 := processCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ls := make([]time.Duration, 0, 1<<16)
			buf := make([]byte, 0, 4096)
			for i := w; runCtx.Err() == nil; i += o.Workers {
				t0 := time.Now()
				found, err := lookupRaw(runCtx, c, paths[i%pool], &buf)
				d := time.Since(t0)
				if err != nil {
					if runCtx.Err() != nil {
						break
					}
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ls = append(ls, d)
				lookups.Add(1)
				if found {
					hits.Add(1)
				}
			}
			lat[w] = ls
		}(w)
	}
	var writes, writeErrs atomic.Int64
	var wgw sync.WaitGroup // the writer: its last writes finish after the lookups
	if o.WriteRate > 0 {
		wc := o.WriteTo
		if wc == nil {
			wc = c
		}
		wgw.Add(1)
		go func() {
			defer wgw.Done()
			write(ctx, runCtx, wc, o, &writes, &writeErrs, &firstErr)
		}()
	}
	if o.Progress != nil {
		go func() {
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			last := int64(0)
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
					n := lookups.Load()
					fmt.Fprintf(o.Progress, "loadgen: %s: %d lookups (%.0f/s over the last 10 s)\n", time.Since(start).Round(time.Second), n, float64(n-last)/10)
					last = n
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	clientCPU := processCPU() - cpu0
	wgw.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p*float64(len(all))))]
	}
	r := Result{
		Lookups: lookups.Load(), Hits: hits.Load(), Errors: errs.Load(), Elapsed: elapsed,
		PerSecond: float64(lookups.Load()) / elapsed.Seconds(),
		P50:       q(0.50), P99: q(0.99), P999: q(0.999), ClientCPU: clientCPU,
		Writes: writes.Load(), WriteErrors: writeErrs.Load(),
	}
	if len(all) > 0 {
		r.Max = all[len(all)-1]
	}
	if v, ok := firstErr.Load().(string); ok {
		r.FirstError = v
	}
	return r, nil
}

// writeConns is how many claim-commit sequences the writer runs at once
// (a crawler's fetch threads: a commit waits for its durable write, and
// concurrent ones share a sync).
const writeConns = 8

// write claims and commits o.WriteRate new originals per second until run
// ends, from writeConns goroutines taking the next due original in turn
// (paced in ticks of 10 ms); a claim and commit started before run ended
// finish under ctx (no claim left pending, every commit counted). Its
// digests are new to the index: a random 62-bit base per run, so runs
// against the same daemon do not collide.
func write(ctx, run context.Context, c *client.Client, o Options, writes, errs *atomic.Int64, firstErr *atomic.Value) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		firstErr.CompareAndSwap(nil, "writer: "+err.Error())
		errs.Add(1)
		return
	}
	base := int(binary.BigEndian.Uint64(b[:]) >> 2)
	date := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, "writer: "+err.Error())
	}
	start := time.Now()
	var next atomic.Int64
	one := func(n int) {
		d := SeedDigest(base + n)
		cr, err := c.Claim(ctx, api.Key{Scope: o.Scope, Digest: d})
		if err != nil {
			fail(err)
			return
		}
		if cr.State != dedupindex.Claimed.String() || cr.Ticket == nil {
			return // a digest committed before: nothing to write
		}
		err = c.Commit(ctx, *cr.Ticket, dedupindex.Original{
			Digest: d, TargetURI: fmt.Sprintf("http://write.bench.example/%d", n), Date: date.Add(time.Duration(n) * time.Millisecond),
			RecordID: fmt.Sprintf("<urn:uuid:00000000-0000-4000-9000-%012d>", n), File: "bench-write.warc.gz",
			Offset: int64(n) * 1000, Length: 1000, PayloadLength: 5000, Status: 200, MIME: "text/html",
		})
		if err != nil {
			fail(err)
			return
		}
		writes.Add(1)
	}
	var wg sync.WaitGroup
	for range writeConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-run.Done():
					return
				case <-t.C:
				}
				due := int64(time.Since(start) * time.Duration(o.WriteRate) / time.Second)
				for run.Err() == nil && ctx.Err() == nil {
					n := next.Load()
					if n >= due {
						break
					}
					if next.CompareAndSwap(n, n+1) {
						one(int(n))
					}
				}
			}
		}()
	}
	wg.Wait()
}

var foundTrue = []byte(`"found":true`)

// lookupRaw GETs a lookup path and reports whether the answer says found.
func lookupRaw(ctx context.Context, c *client.Client, path string, buf *[]byte) (bool, error) {
	resp, err := c.Raw(ctx, path)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
	}
	*buf = b
	return bytes.Contains(b, foundTrue), nil
}

// processCPU returns this process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
