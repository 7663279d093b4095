package fixity

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/fixity/testarchive"
)

// benchPages returns the first n pages, or the first $env of them when
// that is set (scripts/bench-fixity.sh: fewer in its short form).
func benchPages(pages []string, n int, env string) []string {
	if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
		n = v
	}
	return pages[:min(n, len(pages))]
}

// benchEnv loads the real IANA WARC when ../shared is present (a composite
// page of ~20 resources), else uses the built-in site.
func benchEnv(b *testing.B) (*testEnv, string, []string) {
	e := newEnv(b, func(o *ReplayOptions) { o.HardCap = 20 * time.Second; o.RawTimeout = 10 * time.Second })
	wd, _ := os.Getwd()
	warc := filepath.Join(filepath.Dir(filepath.Dir(wd)), "shared", "corpus", "warc", "pywb-iana.warc.gz")
	if _, err := os.Stat(warc); err == nil {
		if _, err := e.arch.LoadWARCFile(warc); err != nil {
			b.Fatal(err)
		}
		return e, e.arch.URIM("20140126200624", "http://www.iana.org/"), e.arch.Pages()
	}
	return e, e.arch.URIM(testarchive.SiteTS, testarchive.PageDeterministic), e.arch.Pages()
}

// bareLoad loads a page the way a plain crawler would: a fresh incognito
// tab, the network domain on, navigate, the same quiet-period wait. No
// interception, no bodies, no raw fetches, no hashing.
func bareLoad(b *testing.B, r *Replayer, bctx context.Context, u string) int {
	tctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancel()
	tr := newTracker()
	if err := chromedp.Listen(tctx, tr.onEvent); err != nil {
		b.Fatal(err)
	}
	if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
		b.Fatal(err)
	}
	if _, err := chromedp.Call(tctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := chromedp.Call(tctx, page.Navigate, page.NavigateParams{URL: u}); err != nil {
		b.Fatal(err)
	}
	for {
		time.Sleep(25 * time.Millisecond)
		n, last := tr.state()
		if now := time.Now(); n == 0 && now.Sub(last) >= r.opts.Quiet && now.Sub(start) >= r.opts.Quiet {
			break
		}
		if time.Since(start) > r.opts.HardCap {
			break
		}
	}
	return len(tr.snapshot())
}

// BenchmarkPageLoad compares a bare page load with a full fixity replay
// (interception, scope proxy, bodies, raw fetches, hashing) of the same
// memento; ns/op is the pair.
func BenchmarkPageLoad(b *testing.B) {
	e, u, _ := benchEnv(b)
	// The bare browser has the same flags but no scope proxy.
	actx, acancel := chromedp.NewExecAllocator(context.Background(), e.rep.allocatorOptions("")...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil { // start the bare browser
		b.Fatal(err)
	}
	bareLoad(b, e.rep, bctx, u) // start the browser and warm the archive
	if _, err := e.rep.Replay(context.Background(), u); err != nil {
		b.Fatal(err)
	}
	// Alternate the two loads so that load from elsewhere on the machine
	// hits both alike.
	var bare, fix time.Duration
	var m *Manifest
	n := 0
	for b.Loop() {
		t0 := time.Now()
		n = bareLoad(b, e.rep, bctx, u)
		t1 := time.Now()
		var err error
		if m, err = e.rep.Replay(context.Background(), u); err != nil {
			b.Fatal(err)
		}
		bare, fix = bare+t1.Sub(t0), fix+time.Since(t1)
	}
	b.ReportMetric(float64(bare.Milliseconds())/float64(b.N), "bare-ms")
	b.ReportMetric(float64(fix.Milliseconds())/float64(b.N), "fixity-ms")
	b.ReportMetric(100*(float64(fix)-float64(bare))/float64(bare), "overhead-%")
	b.ReportMetric(float64(n), "requests")
	b.ReportMetric(float64(len(includedKeys(m))), "hashed-resources")
}

// BenchmarkSweep measures sweep throughput with 1, 2 and 4 pages at once
// and the peak RSS of this process plus its Chromium children.
func BenchmarkSweep(b *testing.B) {
	e, _, pages := benchEnv(b)
	pages = benchPages(pages, 16, "WAYSIDE_BENCH_SWEEP_PAGES")
	for _, par := range []int{1, 2, 4} {
		b.Run("parallel="+strconv.Itoa(par), func(b *testing.B) {
			h, err := OpenHistory(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			s, err := NewSweeper(SweeperOptions{Replayer: e.rep, Config: e.cfg, History: h, Parallel: par, Retries: -1})
			if err != nil {
				b.Fatal(err)
			}
			peak, peakPSS := watchRSS()
			total := 0
			start := time.Now()
			for b.Loop() {
				res, err := s.Run(context.Background(), pages)
				if err != nil {
					b.Fatal(err)
				}
				total += res.Total
			}
			el := time.Since(start)
			b.ReportMetric(float64(total)/el.Minutes(), "mementos/min")
			b.ReportMetric(float64(peak())/(1<<20), "peak-RSS-MB")
			b.ReportMetric(float64(peakPSS())/(1<<20), "peak-PSS-MB")
		})
	}
}

// watchRSS samples the memory of this process and all its descendants
// every 50ms until the first returned func is called; the funcs return the
// peak summed RSS (counts pages shared between Chromium processes once per
// process) and the peak summed PSS (shares them out: the fair total), in
// bytes.
func watchRSS() (stop func() int64, pss func() int64) {
	var mu sync.Mutex
	var peak, peakP int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v, p := treeRSS(os.Getpid()); v > 0 {
				mu.Lock()
				peak, peakP = max(peak, v), max(peakP, p)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	stop = func() int64 {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
	pss = func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return peakP
	}
	return stop, pss
}

// treeRSS sums VmRSS and Pss over pid and its descendants (Linux /proc).
func treeRSS(root int) (int64, int64) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				parent[pid] = pp
			}
		}
	}
	in := func(pid int) bool {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				return true
			}
		}
		return pid == root
	}
	var rss, pss int64
	field := func(path, name string) int64 {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, name) {
				if f := strings.Fields(l); len(f) >= 2 {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					return kb << 10
				}
			}
		}
		return 0
	}
	for pid := range parent {
		if !in(pid) {
			continue
		}
		dir := filepath.Join("/proc", strconv.Itoa(pid))
		rss += field(filepath.Join(dir, "status"), "VmRSS:")
		pss += field(filepath.Join(dir, "smaps_rollup"), "Pss:")
	}
	return rss, pss
}

// BenchmarkSweepEvidence measures what keeping evidence costs: each
// iteration sweeps the same pages once without evidence and once with
// every replay kept (keep-all), alternated so machine load hits both
// alike; it reports the throughput of each, their ratio, and the disk used
// per memento replay by each store (manifests, log and evidence WARCs).
func BenchmarkSweepEvidence(b *testing.B) {
	e, _, pages := benchEnv(b)
	pages = benchPages(pages, 8, "WAYSIDE_BENCH_EVIDENCE_PAGES")
	type arm struct {
		name  string
		dir   string
		s     *Sweeper
		h     *History
		dur   time.Duration
		total int
	}
	var arms []*arm
	for _, ret := range []Retention{RetainNone, RetainAll} {
		dir := b.TempDir()
		h, err := OpenHistory(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		s, err := NewSweeper(SweeperOptions{Replayer: e.rep, Config: e.cfg, History: h, Parallel: 2, Retries: -1, Evidence: ret, EvidenceMaxBytes: 1 << 40})
		if err != nil {
			b.Fatal(err)
		}
		arms = append(arms, &arm{name: string(ret), dir: dir, s: s, h: h})
	}
	// Warm the browser and the archive.
	if _, err := arms[0].s.Run(context.Background(), pages[:1]); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for _, a := range arms {
			t0 := time.Now()
			res, err := a.s.Run(context.Background(), pages)
			if err != nil {
				b.Fatal(err)
			}
			a.dur += time.Since(t0)
			a.total += res.Total
		}
	}
	for _, a := range arms {
		b.ReportMetric(float64(a.total)/a.dur.Minutes(), a.name+"-mementos/min")
		b.ReportMetric(float64(dirBytes(b, a.dir))/float64(a.total)/1024, a.name+"-KiB/memento")
	}
	b.ReportMetric(100*(float64(arms[1].dur)-float64(arms[0].dur))/float64(arms[0].dur), "keep-all-time-overhead-%")
	b.ReportMetric(float64(arms[1].h.EvidenceBytes())/float64(arms[1].total)/1024, "evidence-KiB/memento")
}
