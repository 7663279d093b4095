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
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/zipfgen"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
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

func benchCompact(b *testing.B, in string, opts CompactOptions) {
	out := filepath.Join(filepath.Dir(in), "out.ukvs")
	var st CompactStats
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		var err error
		st, err = CompactFile(context.Background(), in, out, opts)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.InLines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(st.InLines)*float64(b.N)/(cpuTime()-c0).Seconds(), "lines/cpu-s")
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
		in, _, _ := writeSynth(b, b.TempDir(), n, 0)
		runtime.GC()
		// Means measured in a first pass (two passes), by 1 and 2 workers;
		// means given (the paper's Arquivo.pt table): one pass.
		for _, w := range []int{1, 2} {
			b.Run(fmt.Sprintf("keys=%d/measured/workers=%d", n, w), func(b *testing.B) {
				benchCompact(b, in, CompactOptions{Wh: 1, Wp: 1, Workers: w})
			})
		}
		paper := DepthMeans{Host: []float64{1000, 1000, 8.53, 8.95, 5}, Path: []float64{25.0, 7.25, 4.96, 3.26, 2}}
		b.Run(fmt.Sprintf("keys=%d/given/workers=1", n), func(b *testing.B) {
			benchCompact(b, in, CompactOptions{Wh: 1, Wp: 1, Workers: 1, Means: &paper})
		})
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

// BenchmarkLookup measures in-process lookups on a 1M-line map (the full
// synthetic key list, and its W=1 compaction): half present keys, half
// absent ones (which walk the whole key hierarchy). "normalised" is Lookup
// (keys normalised first, as every caller now gets); "unnormalised" is the
// lookup of an already canonical key alone, i.e. Lookup before keys were
// normalised: their ratio is the cost of the normalisation. "uri" adds the
// SURT canonicalisation of a URI (ParseTarget), "respelled" looks up keys
// in another tool's spelling (host roots without "/", upper case, www).
func BenchmarkLookup(b *testing.B) {
	dir := b.TempDir()
	full, present, absent := writeSynth(b, dir, 1_000_000, 50_000)
	comp := filepath.Join(dir, "compact.ukvs")
	if _, err := CompactFile(context.Background(), full, comp, CompactOptions{Wh: 1, Wp: 1, NoSync: true}); err != nil {
		b.Fatal(err)
	}
	var keys, uris, foreign [][]byte
	for i := 0; i < len(absent); i++ {
		for _, k := range []string{present[(i*7919)%len(present)].Key, absent[i]} {
			keys = append(keys, []byte(k))
			uris = append(uris, []byte(zipfgen.URI(k)))
			f := strings.ToUpper(k)
			if strings.HasSuffix(f, ")/") {
				f = strings.TrimSuffix(f, "/")
			} else if i%2 == 0 {
				f = strings.Replace(f, ")", ",WWW)", 1)
			}
			foreign = append(foreign, []byte(f))
		}
	}
	for _, p := range []string{full, comp} {
		m, err := OpenMap(p)
		if err != nil {
			b.Fatal(err)
		}
		lines, _ := DataSize(m)
		for _, v := range []struct {
			name string
			in   [][]byte
			fn   func(k []byte, s *Scratch) (Match, error)
		}{
			{"unnormalised", keys, m.lookupCanonical},
			{"normalised", keys, m.Lookup},
			{"respelled", foreign, m.Lookup},
			{"uri", uris, func(k []byte, s *Scratch) (Match, error) {
				key, err := ParseTarget(string(k))
				if err != nil {
					return Match{}, err
				}
				return m.Lookup(key, s)
			}},
		} {
			b.Run(fmt.Sprintf("lines=%d/%s", lines, v.name), func(b *testing.B) {
				var s Scratch
				b.ReportAllocs()
				i := 0
				// The setup's garbage is collected now, not on the clock:
				// lookups/cpu-s counts the whole process's CPU time.
				runtime.GC()
				c0 := cpuTime()
				for b.Loop() {
					if _, err := v.fn(v.in[i%len(v.in)], &s); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
				b.ReportMetric(float64(b.N)/(cpuTime()-c0).Seconds(), "lookups/cpu-s")
			})
		}
		b.Run(fmt.Sprintf("lines=%d/normalised/parallel", lines), func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var s Scratch
				for i := 0; pb.Next(); i++ {
					if _, err := m.Lookup(keys[(i*13)%len(keys)], &s); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
		})
		m.Close()
	}
}

// cpuTime returns the CPU time (user + system) the process has used: on a
// shared machine it measures work where wall time measures contention.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
