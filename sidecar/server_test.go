package sidecar

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/fixity/testarchive"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/sidecar/loadgen"
)

// runInProcess runs a Server on a temporary data dir until the test ends
// and returns a client on its socket. These tests run the daemon's code
// under the race detector (the e2e tests run the real binary).
func runInProcess(t testing.TB, mutate func(*Config)) (*client.Client, *Config, func() error) {
	t.Helper()
	_, c, cfg, stop := runServer(t, mutate)
	return c, cfg, stop
}

// runServer is runInProcess returning the Server too.
func runServer(t testing.TB, mutate func(*Config)) (*Server, *client.Client, *Config, func() error) {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{DataDir: filepath.Join(dir, "data")}
	cfg.Ingest.PollInterval = 20 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.PrepareDirs(nil); err != nil { // as wayside serve does, before the index
		t.Fatal(err)
	}
	idx, err := pebble.Open(cfg.Index.Path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, Options{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-done
		if cerr := idx.Close(); err == nil {
			err = cerr
		}
		return err
	}
	t.Cleanup(func() { stop() })
	c, err := client.New(cfg.Listen.Unix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	deadline := time.Now().Add(2 * time.Minute)
	for c.Healthz(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("in-process server not up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return srv, c, &cfg, stop
}

// TestConcurrentClaimsOneWinner: many crawlers claim the same digest at
// once; exactly one may write the original and commit, the others see
// pending (and write full responses); after the commit all see duplicate.
func TestConcurrentClaimsOneWinner(t *testing.T) {
	c, cfg, stop := runInProcess(t, nil)
	ctx := context.Background()
	dg := "sha1:" + strings.Repeat("A", 32)
	var mu sync.Mutex
	states := map[string]int{}
	var ticket *dedupindex.Ticket
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Claim(ctx, api.Key{Digest: dg})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			states[r.State]++
			if r.Ticket != nil {
				ticket = r.Ticket
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if states["claimed"] != 1 || states["pending"] != 15 || ticket == nil {
		t.Fatalf("states %v, want one claimed and 15 pending", states)
	}
	o := dedupindex.Original{TargetURI: "http://a.example/", Date: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), RecordID: "<urn:uuid:a>", File: "a.warc.gz", Length: 10, PayloadLength: 100}
	if err := c.Commit(ctx, *ticket, o); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if r, err := c.Claim(ctx, api.Key{Digest: dg}); err != nil || r.State != "duplicate" {
			t.Fatalf("after commit: %+v %v", r, err)
		}
	}
	// Graceful stop: Run returns nil, the socket is gone, the index closes.
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(cfg.Listen.Unix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket remains after stop: %v", err)
	}
}

// TestIngestCorpus ingests the real-world corpus (messy WARCs from Heritrix,
// wget, wpull, warcio, jwat, IA gowarc) and checks that the daemon keeps
// serving, that every file is read to its end or reported truncated, and
// that CDX answers never carry a revisit.
func TestIngestCorpus(t *testing.T) {
	files := testenv.CorpusWARCs(t)
	warcs := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(warcs, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, cfg, stop := runInProcess(t, func(c *Config) { c.Ingest.Dirs = []string{warcs} })
	ctx := context.Background()
	var st api.IngestStatus
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		st, err = c.Ingest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		finished := 0
		for _, f := range st.Files {
			if f.Done || f.Truncated {
				finished++
			}
		}
		if finished == len(files) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("corpus not ingested in time: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Originals == 0 || st.Revisits == 0 {
		t.Errorf("corpus gave %d originals and %d revisits; it holds both", st.Originals, st.Revisits)
	}
	// Every CDXJ line of a response is answered by the CDX endpoint; no
	// answer line is a revisit.
	ents, _ := os.ReadDir(cfg.Ingest.CDXJDir)
	if len(ents) == 0 {
		t.Fatal("no CDXJ written")
	}
	checked := 0
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(cfg.Ingest.CDXJDir, e.Name()))
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, `"status": "200"`) || checked >= 40 {
				continue
			}
			u := line[strings.Index(line, `"url": "`)+8:]
			u = u[:strings.Index(u, `"`)]
			body, err := c.CDX(ctx, url.Values{"url": {u}})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
				if f := strings.Fields(l); len(f) >= 7 && f[3] == "warc/revisit" {
					t.Errorf("CDX answer for %s contains a revisit: %q", u, l)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Error("no 200 response in the corpus CDXJ")
	}
	if err := c.Healthz(ctx); err != nil {
		t.Fatal(err)
	}
	// The consumers of the capture spine are reported (wayside status).
	var full api.Status
	if err := c.Status(ctx, &full); err != nil {
		t.Fatal(err)
	}
	if len(full.Consumers) != 2 || full.Consumers[0].Name != "live-map" || full.Consumers[1].Name != "capture-index" ||
		full.Consumers[0].Failed != 0 || full.Consumers[1].Failed != 0 {
		t.Errorf("status consumers %+v, want a healthy live-map and capture-index", full.Consumers)
	}
	// The index the sidecar built passes `index stats --check`: one key
	// per original, each with its by-URL entry (two keys per original
	// made it fail with "1159 originals but 580 by-url entries").
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	idx, err := pebble.Open(cfg.Index.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	if err := idx.Check(ctx); err != nil {
		t.Errorf("index built by the sidecar: %v", err)
	}
	ist, err := idx.Stats(ctx)
	if err != nil || ist.Originals != st.Originals {
		t.Errorf("index holds %d originals, ingest put %d (%v)", ist.Originals, st.Originals, err)
	}
}

// TestCDXPost adds CDXJ lines over the API (OutbackCDX style): originals
// are indexed, revisits skipped, a bad line rejects the whole body.
func TestCDXPost(t *testing.T) {
	c, _, _ := runInProcess(t, nil)
	ctx := context.Background()
	body := `org,example)/ 20200101000000 {"url": "http://example.org/", "mime": "text/html", "status": "200", "digest": "OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB", "length": "2258", "offset": "334", "filename": "a.warc.gz"}
org,example)/ 20210101000000 {"url": "http://example.org/", "mime": "warc/revisit", "digest": "OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB", "length": "500", "offset": "9000", "filename": "b.warc.gz"}
org,example)/404 20200101000000 {"url": "http://example.org/404", "mime": "text/html", "status": "404", "digest": "ABSAPWJ23L56IYVRW3GFEAR4MCJMGPTB", "length": "10", "offset": "1", "filename": "a.warc.gz"}
`
	res, err := c.AddCDX(ctx, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if res.Lines != 3 || res.Added != 1 || res.Revisits != 1 || res.Skipped != 1 {
		t.Errorf("add: %+v", res)
	}
	o, found, err := c.Lookup(ctx, api.Key{Digest: "sha1:OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB"})
	if err != nil || !found || o.File != "a.warc.gz" || o.Offset != 334 {
		t.Errorf("lookup: %+v %v %v", o, found, err)
	}
	ans, err := c.CDX(ctx, url.Values{"url": {"http://example.org/"}, "limit": {"-1"}})
	if err != nil || !strings.HasPrefix(ans, "org,example)/ 20200101000000 http://example.org/ text/html 200 OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB 2258\n") {
		t.Errorf("CDX after POST: %q %v", ans, err)
	}
	_, err = c.AddCDX(ctx, strings.NewReader(body+"garbage line here\n"))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != 400 || !strings.Contains(ce.Msg, "line 4") {
		t.Errorf("bad line: %v", err)
	}
	// Classic CDX with its header line (OutbackCDX accepts these too).
	cdx := " CDX N b a m s k r M S V g\n" +
		"org,example)/cdx 20190101000000 http://example.org/cdx text/html 200 B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A - - 1046 334 dupes.warc.gz\n"
	res, err = c.AddCDX(ctx, strings.NewReader(cdx))
	if err != nil || res.Added != 1 {
		t.Fatalf("classic CDX: %+v %v", res, err)
	}
	if o, found, _ := c.Lookup(ctx, api.Key{Digest: "sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A"}); !found || o.File != "dupes.warc.gz" || o.Offset != 334 || o.Length != 1046 {
		t.Errorf("classic CDX original: %+v %v", o, found)
	}
}

// TestFixitySweepOnDemand runs a configured sweep against a local
// Memento-compliant archive in real headless Chromium, on demand through
// the API, and checks the results, the metrics and the HTML report.
func TestFixitySweepOnDemand(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		testenv.MissingTool(t, "sidecar: no chromium on PATH: install chromium to run the fixity sweep test")
	}
	arch := testarchive.Start(t)
	uris := arch.Mementos()
	if len(uris) == 0 {
		t.Fatal("test archive is empty")
	}
	urim := arch.URIM("20240101000000", uris[0])
	var c0 *Config
	c, _, _ := runInProcess(t, func(c *Config) {
		c0 = c
		c.Fixity.Sweeps = []SweepConfig{{Name: "demo", URIMs: []string{urim}, Schedule: "@every 1h", Parallelism: 1,
			ArchiveHosts: []string{arch.Host(), arch.AliasHost()}, Timeout: 10 * time.Second, Evidence: "keep-all"}}
	})
	ctx := context.Background()
	var sw []api.SweepStatus
	var err error
	deadline := time.Now().Add(2 * time.Minute)
	for {
		sw, err = c.FixitySweeps(ctx)
		if err == nil && len(sw) == 1 && sw[0].Next != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweeps never scheduled: %+v %v", sw, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for run := 0; run < 2; run++ {
		st, err := c.RunSweep(ctx, "demo", true)
		if err != nil {
			t.Fatal(err)
		}
		if st.LastRun == nil || st.LastRun.Finished == "" || st.LastRun.Error != "" {
			t.Fatalf("run %d: %+v", run, st.LastRun)
		}
		total := 0
		for _, n := range st.LastRun.Classes {
			total += n
		}
		if total != 1 {
			t.Errorf("run %d: classes %v, want one result", run, st.LastRun.Classes)
		}
	}
	m, _ := c.Metrics(ctx)
	if !strings.Contains(m, "wayside_sweep_runs_total 2\n") || !strings.Contains(m, `wayside_sweep_results_total{class=`) || !strings.Contains(m, `,sweep="demo"} `) ||
		!strings.Contains(m, `wayside_sweep_duration_seconds_count{sweep="demo"} 2`) {
		t.Errorf("sweep metrics missing:\n%s", m)
	}
	hc := &httpGetter{c: c}
	html := hc.get(t, api.PathFixityReport)
	if !strings.Contains(html, "<html") || !strings.Contains(html, arch.Host()) {
		t.Errorf("report is not the HTML report of the sweep:\n%.400s", html)
	}
	// The report reads the manifests: the study's tables cover the
	// Algorithm 1 root too.
	if !strings.Contains(html, "<td>algorithm1</td>") {
		t.Errorf("report has no Algorithm 1 row in its Table 5:\n%.2000s", html)
	}
	// evidence: keep-all kept both replays as WARC evidence.
	var warcs []string
	filepath.WalkDir(filepath.Join(c0.Fixity.Dir, "evidence"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".warc.gz") {
			warcs = append(warcs, p)
		}
		return nil
	})
	if len(warcs) < 4 {
		t.Errorf("evidence WARCs kept in %s: %v, want a raw and a rewritten WARC per replay", c0.Fixity.Dir, warcs)
	}
}

type httpGetter struct{ c *client.Client }

func (h *httpGetter) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := h.c.Raw(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// BenchmarkLookupOverSocket measures single digest lookups through the Go
// client over the Unix socket, half hits (the figure scripts/bench-sidecar.sh
// measures for 60 s against the real binary).
func BenchmarkLookupOverSocket(b *testing.B) {
	c, _, _ := runInProcess(b, nil)
	ctx := context.Background()
	if err := loadgen.Seed(ctx, c, "", 1000); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, _, err := c.Lookup(ctx, api.Key{Digest: loadgen.SeedDigest(i % 2000)}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// TestLoadgenWrites: the bench's writer (bench-sidecar.sh WRITES=N) commits
// originals through claims while the lookups run; every write it counts is
// in the index, each answered by a lookup, and nothing failed.
func TestLoadgenWrites(t *testing.T) {
	c, _, _ := runInProcess(t, nil)
	ctx := context.Background()
	if err := loadgen.Seed(ctx, c, "", 100); err != nil {
		t.Fatal(err)
	}
	r, err := loadgen.Run(ctx, c, loadgen.Options{Keys: 100, Workers: 2, Duration: 2 * time.Second, HitRatio: 0.5, WriteRate: 200})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.WriteErrors != 0 || r.Writes == 0 || r.Lookups == 0 || r.Hits == 0 {
		t.Fatalf("bench with writes: %v (first error %q), want lookups, hits and writes without errors", r, r.FirstError)
	}
	var st Status
	if err := c.Status(ctx, &st); err != nil {
		t.Fatal(err)
	}
	if st.Index.Originals != 100+r.Writes || st.Claims < r.Writes {
		t.Errorf("index holds %d originals after %d claims, want 100 seeded + %d written", st.Index.Originals, st.Claims, r.Writes)
	}
}

// TestCrawlLogTail follows a Heritrix crawl.log that grows (including a
// line written in two pieces) and reports status codes and duplicates.
func TestCrawlLogTail(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "crawl.log")
	lines := []string{
		"2014-11-24T21:11:46.471Z   200      12345 http://www.example.com/ - - text/html #042 20141124211146143+311 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 - - {\"warcFilename\":\"X.warc.gz\",\"warcFileOffset\":123}\n",
		"2014-11-24T21:11:47.001Z   200        310 http://www.example.com/a L http://www.example.com/ text/html #007 20141124211146900+98 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 - duplicate:digest {}\n",
		"2014-11-24T21:11:48.020Z   404        120 http://www.example.com/missing L http://www.example.com/ text/html #007 20141124211147900+20 sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ - - {}\n",
	}
	first := lines[0] + lines[1][:40]
	os.WriteFile(logPath, []byte(first), 0o644)
	c, _, _ := runInProcess(t, func(c *Config) { c.Ingest.CrawlLog = logPath })
	var st Status
	crawlLog := func() *api.CrawlLogStatus {
		if err := c.Status(context.Background(), &st); err != nil {
			t.Fatal(err)
		}
		return st.CrawlLog
	}
	// The tail has read the partial second line (and counted one line)
	// before the rest of it is written.
	waitUntil(t, "the partial line read", func() bool { cl := crawlLog(); return cl != nil && cl.Offset == int64(len(first)) })
	if cl := st.CrawlLog; cl.Lines != 1 || cl.Unparsed != 0 {
		t.Fatalf("after a line and a half: %+v, want one line and the partial one held back", cl)
	}
	f, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(lines[1][40:] + lines[2])
	f.Close()
	waitUntil(t, "three crawl.log lines", func() bool { cl := crawlLog(); return cl != nil && cl.Lines == 3 })
	cl := st.CrawlLog
	if cl.ByStatus["200"] != 2 || cl.ByStatus["404"] != 1 || cl.Duplicates != 1 || cl.Bytes != 12345+310+120 || cl.Unparsed != 0 {
		t.Errorf("crawl.log status: %+v", cl)
	}
	m, _ := c.Metrics(context.Background())
	if !strings.Contains(m, "wayside_crawllog_duplicates_total 1\n") || !strings.Contains(m, `wayside_crawllog_lines_total{status="404"} 1`) {
		t.Errorf("crawl.log metrics missing:\n%s", m)
	}
}

// TestClaimLeaseExpires: a crawler that claims and dies does not block the
// digest for good: after limits.claim_ttl the daemon cancels the claim, the
// next claimer gets it, and a late commit of the dead claim is refused.
func TestClaimLeaseExpires(t *testing.T) {
	c, _, _ := runInProcess(t, func(c *Config) { c.Limits.ClaimTTL = 5 * time.Second })
	ctx := context.Background()
	k := api.Key{Digest: "sha1:" + strings.Repeat("B", 32)}
	r1, err := c.Claim(ctx, k)
	if err != nil || r1.State != "claimed" {
		t.Fatalf("claim: %+v %v", r1, err)
	}
	if r, _ := c.Claim(ctx, k); r.State != "pending" {
		t.Fatalf("second claim within the TTL: %+v", r)
	}
	var r2 api.ClaimResult
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r2, err = c.Claim(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if r2.State == "claimed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim never expired: %+v", r2)
		}
		time.Sleep(50 * time.Millisecond)
	}
	o := dedupindex.Original{TargetURI: "http://b.example/", Date: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), RecordID: "<urn:uuid:b>", File: "b.warc.gz", Length: 10}
	if err := c.Commit(ctx, *r1.Ticket, o); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Errorf("late commit of the expired claim: %v, want 409", err)
	}
	if err := c.Commit(ctx, *r2.Ticket, o); err != nil {
		t.Errorf("commit of the live claim: %v", err)
	}
	m, _ := c.Metrics(ctx)
	if !strings.Contains(m, "wayside_claims_expired_total 1\n") {
		t.Errorf("expired claim not counted:\n%s", m)
	}
}

// An access route of a collection the daemon does not hold answers 404
// "unknown collection" listing the ones it has (issue 21: the README's
// /default/cdx against the example config, whose collection is
// crawl-2026, answered "no such route"); other unknown paths stay "no such
// route".
func TestUnknownCollectionNamed(t *testing.T) {
	c, _, _ := runInProcess(t, func(c *Config) { c.Index.Scope = "crawl-2026" })
	ctx := context.Background()
	for path, want := range map[string]string{
		"/default/cdx?url=example.org/":                   `unknown collection "default" (collections: crawl-2026)`,
		"/default/timemap/link/https://example.org/":      `unknown collection "default" (collections: crawl-2026)`,
		"/default/20230601000000id_/https://example.org/": `unknown collection "default" (collections: crawl-2026)`,
		"/v2/nothing": "no such route /v2/nothing",
	} {
		resp, err := c.Raw(ctx, path)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("GET %s: %d %s, want 404 %s", path, resp.StatusCode, body, want)
			continue
		}
		if !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), want) {
			t.Errorf("GET %s: %v, want 404 %s", path, err, want)
		}
	}
	resp, err := c.Raw(ctx, "/crawl-2026/cdx?url=example.org/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /crawl-2026/cdx: %d, want 200 (an empty answer)", resp.StatusCode)
	}
}
