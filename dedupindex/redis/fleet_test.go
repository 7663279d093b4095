package redis_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/dedupindex"
	wredis "github.com/wayside-archive/wayside/dedupindex/redis"
	"github.com/wayside-archive/wayside/internal/redistest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/internal/warctest"
)

// The wayside binary, built once for the fleet tests.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func waysideBinary(t *testing.T) string {
	t.Helper()
	root := testenv.RepoRoot(t)
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "wayside-fleet-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "wayside")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/wayside")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/wayside: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// gatedSite serves a site in three phases, per section: the first k1
// requests, then (once the test opens the first gate) up to k2, then
// (second gate) the rest. A request beyond a closed gate waits in the
// handler, so the test knows when every crawler is parked at a gate and
// every fetch before it is recorded. It notes the phase each path was
// served in.
type gatedSite struct {
	site    *sitetest.Site
	k1, k2  int
	mu      sync.Mutex
	cond    *sync.Cond
	phase   int
	served  map[string]int // section → requests served
	blocked map[string]int // section → requests waiting at a gate
	phaseOf map[string]int // path → phase it was served in
}

func newGatedSite(site *sitetest.Site, k1, k2 int) *gatedSite {
	g := &gatedSite{site: site, k1: k1, k2: k2, phase: 1, served: map[string]int{}, blocked: map[string]int{}, phaseOf: map[string]int{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gatedSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sec, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	g.mu.Lock()
	for g.phase == 1 && g.served[sec] >= g.k1 || g.phase == 2 && g.served[sec] >= g.k2 {
		g.blocked[sec]++
		g.cond.Wait()
		g.blocked[sec]--
	}
	g.served[sec]++
	g.phaseOf[r.URL.Path] = g.phase
	g.mu.Unlock()
	g.site.ServeHTTP(w, r)
}

func (g *gatedSite) open(phase int) {
	g.mu.Lock()
	g.phase = phase
	g.cond.Broadcast()
	g.mu.Unlock()
}

// waitParked waits until every section has n requests waiting at a gate.
func (g *gatedSite) waitParked(t *testing.T, ctx context.Context, sections []string, n int, crawlers []*fleetCrawler) {
	t.Helper()
	for {
		g.mu.Lock()
		ok := true
		for _, s := range sections {
			ok = ok && g.blocked[s] == n
		}
		g.mu.Unlock()
		if ok {
			return
		}
		for _, c := range crawlers {
			select {
			case err := <-c.done:
				t.Fatalf("crawler %s exited before the gate (%v):\n%s", c.dir, err, c.stderr.String())
			default:
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("crawlers not parked at the gate: %v", ctx.Err())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fleetCrawler is one `wayside crawl` child process.
type fleetCrawler struct {
	dir            string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
	exited         chan struct{} // closed once Wait returned
}

const fleetParallel = 4

func startCrawler(t *testing.T, bin, dir, indexURL, name, seed string) *fleetCrawler {
	t.Helper()
	c := &fleetCrawler{dir: dir, done: make(chan error, 1), exited: make(chan struct{})}
	// --ignore-robots: the local site has no robots.txt to obey, and the
	// page counts below are of the site's pages.
	c.cmd = exec.Command(bin, "crawl", "-v", "--quiet", "--ignore-robots", "--delay", "0", "--parallel", strconv.Itoa(fleetParallel),
		"--max-pages", "0", "--warc-prefix", name, "--warc-dir", dir, "--index", indexURL, "--prefix", seed, seed)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		// Killing a process that already exited is harmless; waiting on
		// exited (not reading ProcessState) keeps this free of races with
		// the goroutine in Wait.
		c.cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// commitLine is the crawler's debug line for a commit that returned nil.
var commitLine = regexp.MustCompile(`msg="crawl: original committed" digest=(\S+) uri=(\S+) record=(\S+)`)

// The summary lines of `wayside crawl`: pages fetched (and fetches
// failed), and the claims that failed (those responses written in full).
var (
	pagesLine      = regexp.MustCompile(`pages fetched +(\d+) \(failed (\d+),`)
	dedupErrorLine = regexp.MustCompile(`dedup index errors +(\d+)`)
)

// TestFleetCrawlFailover runs three real `wayside crawl` processes that
// share one index on a real 3-master + 3-replica Redis Cluster, crawling
// sections of a site whose payloads repeat across URLs and sections. The
// master of one third of the slots is SIGKILLed while every crawler is
// parked mid-crawl; the crawlers go on through the failover window and
// after a replica has taken over. Then: every crawler captured every URL
// of its section and exits 0, or 1 exactly when some of its claims failed
// during the outage (the summary counts them; those responses were
// written in full); every revisit resolves to a durable
// original with the same payload digest; duplicates fetched during the
// outage were written as full responses; after the failover revisits are
// written again; every original the index holds points at the complete
// record it names. With wait=1 every commit a crawler saw acknowledged
// (its debug log) is still in the index, including those held by the
// killed master.
func TestFleetCrawlFailover(t *testing.T) {
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) { testFleet(t, wait) })
	}
}

func testFleet(t *testing.T, wait bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := waysideBinary(t)
	cl := redistest.New(t, redistest.Options{Args: recommendedArgs})

	const sections, pages, distinct, k1, k2 = 3, 150, 40, 50, 90
	g := newGatedSite(sitetest.NewDuplicates(sections, pages, distinct, 4096, 0), k1, k2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		g.open(3) // release any handler still waiting
		srv.Close()
	})
	base := "http://" + ln.Addr().String()

	q := "prefix=fleet:&capacity=100000"
	if wait {
		q += "&wait=1&wait_timeout=500ms"
	}
	indexURL := cl.URL(q)
	var crawlers []*fleetCrawler
	var secNames []string
	for s := range sections {
		sec := fmt.Sprintf("s%d", s)
		secNames = append(secNames, sec)
		crawlers = append(crawlers, startCrawler(t, bin, filepath.Join(t.TempDir(), sec), indexURL, "FLEET-"+sec, base+"/"+sec+"/"))
	}

	// Phase 1 done: every fetch so far is recorded and committed.
	g.waitParked(t, ctx, secNames, fleetParallel, crawlers)
	const victim = "fleet-victim"
	killed, err := cl.KillMaster(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	g.open(2) // phase 2: crawling while the master is down
	g.waitParked(t, ctx, secNames, fleetParallel, crawlers)
	promoted, err := cl.WaitFailover(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	if wait {
		// Operators restart the failed node; it rejoins as a replica and
		// commits are acknowledged again.
		if err := cl.Restart(ctx, killed); err != nil {
			t.Fatal(err)
		}
		if err := cl.WaitHealthy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	g.open(3) // phase 3: after the failover

	totalErrors := 0
	for _, c := range crawlers {
		select {
		case err := <-c.done:
			// A crawler whose claims failed during the outage exits 1
			// (partial failure: the dedup it was asked for did not
			// happen) saying those responses were written in full; any
			// other error, or exit 1 for another reason, fails.
			if err != nil && !(exitCode(err) == 1 && strings.Contains(c.stderr.String(), "dedup index errors (those responses were written in full")) {
				t.Fatalf("crawler %s exited with %v:\n%s\n%s", c.dir, err, c.stdout.String(), c.stderr.String())
			}
		case <-ctx.Done():
			t.Fatalf("crawler %s still running: %v", c.dir, ctx.Err())
		}
		m := pagesLine.FindStringSubmatch(c.stdout.String())
		if m == nil || m[1] != strconv.Itoa(pages+1) || m[2] != "0" {
			t.Fatalf("crawler %s summary, want %d pages fetched, none failed:\n%s", c.dir, pages+1, c.stdout.String())
		}
		n := 0
		if m := dedupErrorLine.FindStringSubmatch(c.stdout.String()); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		if exited := (c.cmd.ProcessState != nil && !c.cmd.ProcessState.Success()); exited != (n > 0) {
			t.Fatalf("crawler %s: %d dedup index errors but exit status %v (want 1 exactly when claims failed):\n%s\n%s",
				c.dir, n, c.cmd.ProcessState, c.stdout.String(), c.stderr.String())
		}
		totalErrors += n
	}

	var dirs []string
	for _, c := range crawlers {
		dirs = append(dirs, c.dir)
	}
	recs := warctest.ReadDirs(t, dirs...)
	// Every URL captured exactly once, by the crawler of its section.
	captured := map[string]int{}
	for _, r := range recs {
		if r.Type == "response" || r.Type == "revisit" {
			captured[r.TargetURI]++
		}
	}
	for s := range sections {
		urls := []string{fmt.Sprintf("%s/s%d/", base, s)}
		for i := range pages {
			urls = append(urls, fmt.Sprintf("%s/s%d/%d.bin", base, s, i))
		}
		for _, u := range urls {
			if captured[u] != 1 {
				t.Errorf("%s captured %d times, want once", u, captured[u])
			}
		}
	}
	if len(captured) != sections*(pages+1) {
		t.Errorf("%d URLs captured, want %d", len(captured), sections*(pages+1))
	}
	revisits := warctest.CheckRevisits(t, recs)

	// What each phase wrote for payloads already captured in phase 1.
	phase := func(uri string) int { return g.phaseOf[strings.TrimPrefix(uri, base)] }
	firstFull := map[string]bool{}
	for _, r := range recs {
		if r.Type == "response" && phase(r.TargetURI) == 1 {
			firstFull[r.PayloadDigest] = true
		}
	}
	var fullDupsInOutage, revisitsAfter int
	for _, r := range recs {
		switch {
		case r.Type == "response" && phase(r.TargetURI) == 2 && firstFull[r.PayloadDigest]:
			fullDupsInOutage++
		case r.Type == "revisit" && phase(r.TargetURI) == 3:
			revisitsAfter++
		}
	}
	t.Logf("killed %s, %s took over; %d records, %d revisits, %d index errors reported by the crawlers, %d duplicates written in full during the outage, %d revisits after the failover",
		killed.Addr, promoted.Addr, len(recs), revisits, totalErrors, fullDupsInOutage, revisitsAfter)
	if totalErrors == 0 {
		t.Error("no crawler reported an index error: the outage was not exercised")
	}
	if fullDupsInOutage == 0 {
		t.Error("no duplicate was written in full during the outage")
	}
	if revisitsAfter == 0 {
		t.Error("no revisit after the failover: dedup did not resume")
	}

	// The index: every original it holds points at its complete record.
	cc := clusterClient(t, cl)
	ix, err := wredis.New(ctx, cc, wredis.WithPrefix("fleet:"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var originals []dedupindex.Original
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Type != "response" || seen[r.PayloadDigest] {
			continue
		}
		seen[r.PayloadDigest] = true
		o, ok, err := ix.Lookup(ctx, dedupindex.Key{Scope: dedupindex.DefaultScope, Digest: r.PayloadDigest})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			originals = append(originals, o)
		}
		byURL, err := ix.ByURL(ctx, dedupindex.DefaultScope, dedupindex.URLKey(r.TargetURI))
		if err != nil {
			t.Fatal(err)
		}
		originals = append(originals, byURL...)
	}
	if len(originals) == 0 {
		t.Fatal("the index holds no original of the crawl")
	}
	warctest.CheckOriginals(t, recs, originals)

	// Commits the crawlers saw acknowledged.
	acked, lost, onFailedOver := 0, 0, 0
	for _, c := range crawlers {
		for _, m := range commitLine.FindAllStringSubmatch(c.stderr.String(), -1) {
			acked++
			k := dedupindex.Key{Scope: dedupindex.DefaultScope, Digest: m[1]}
			if n, err := cl.MasterFor(ctx, ix.DigestKeyForTest(k)); err == nil && n == promoted && phase(m[2]) == 1 {
				onFailedOver++
			}
			o, ok, err := ix.Lookup(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if !ok || o.RecordID != m[3] {
				lost++
				if wait {
					t.Errorf("acknowledged commit of %s (%s, record %s) lost: index holds %+v (found %v)", m[1], m[2], m[3], o, ok)
				}
			}
		}
	}
	t.Logf("%d commits acknowledged to the crawlers, %d lost; %d made before the kill on the failed-over slots", acked, lost, onFailedOver)
	if onFailedOver == 0 {
		t.Error("no acknowledged commit from before the kill on the failed-over slots: the failover proved nothing")
	}

	if _, err := ix.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	// The CLI sees the same index and its invariants hold.
	out, err := exec.CommandContext(ctx, bin, "index", "stats", "--check", "--index", indexURL).CombinedOutput()
	if err != nil && wait {
		t.Fatalf("wayside index stats --check: %v\n%s", err, out)
	}
	if err == nil && !strings.Contains(string(out), "check:      ok") {
		t.Fatalf("wayside index stats --check:\n%s", out)
	}
	t.Logf("wayside index stats --check (%v):\n%s", err, out)
	if err := ix.Check(ctx); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			if wait || !strings.Contains(line, "has no original") {
				t.Fatalf("Check: %v", err)
			}
		}
	}
}

// exitCode is the exit status in err from exec.Cmd.Wait (-1 if it is not
// an exit status).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
