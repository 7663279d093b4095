package crawl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/temoto/robotstxt"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// CrawlConfig configures a Crawler.
type CrawlConfig struct {
	// Seeds are the start URLs.
	Seeds []*url.URL
	// Recorder carries every fetch (required).
	Recorder *Recorder
	// Scope limits what is fetched (default: the seeds' hosts). Use the
	// same Scope as the Recorder's Allow.
	Scope *Scope
	// MaxDepth is the number of link hops followed from a seed (-1: no
	// limit). Redirects do not count as a hop.
	MaxDepth int
	// MaxPages bounds the URLs fetched (0: no limit).
	MaxPages int
	// Delay is the pause between two requests to the same host.
	Delay time.Duration
	// UserAgent is sent with every request.
	UserAgent string
	// AcceptEncoding is sent with every request (default "gzip"): archives
	// keep the encoding the server chose.
	AcceptEncoding string
	// IgnoreRobots turns robots.txt off: by default (false) it is
	// fetched and recorded once per host and obeyed, as every peer crawler
	// does (an unreachable robots.txt disallows its host, RFC 9309).
	// Before release 3 the zero value ignored it (a field Robots turned it
	// on).
	IgnoreRobots bool
	// Parallel is the number of concurrent fetches (default 1).
	Parallel int
	// Logger receives per-URL errors at debug level.
	Logger *slog.Logger

	// Filter narrows the scope by URL pattern and host (nil: none).
	Filter *Filter
	// Sitemaps takes seeds from the Sitemap: lines of each seed host's
	// robots.txt (fetched and recorded even with IgnoreRobots) and the
	// sitemap indexes and sitemaps they lead to, within SitemapLimits.
	// The URLs a sitemap lists are crawled as seeds (depth 0).
	Sitemaps      bool
	SitemapLimits SitemapLimits
	// TimeLimit stops the crawl cleanly this long after Run starts (0:
	// none): no new fetch starts, those in flight are recorded, Run
	// returns nil and CrawlStats.Stopped says why.
	TimeLimit time.Duration
	// SizeLimit stops the crawl cleanly once the records this crawl wrote
	// (their stored, compressed lengths) reach this many bytes (0: none);
	// fetches in flight then may add up to Parallel responses more.
	SizeLimit int64
	// Log receives a crawl.log line per URL attempted (nil: none).
	Log *CrawlLog
}

// DefaultUserAgent identifies Wayside's crawler.
const DefaultUserAgent = "Wayside/1.0 (+https://github.com/wayside-archive/wayside)"

// CrawlStats are a crawler's counters.
type CrawlStats struct {
	Pages      int64 // URLs fetched and recorded
	Errors     int64 // fetches that failed
	Queued     int64 // URLs waiting
	OutOfScope int64 // links dropped as out of scope
	Robots     int64 // URLs skipped by robots.txt
	Excluded   int64 // URLs dropped by the Filter (--include/--exclude/--exclude-host)
	Sitemaps   int64 // sitemap files read
	// Stopped says why the crawl ended before its frontier was empty ("":
	// it did not): "time limit 1m0s reached", "size limit ... reached",
	// "page limit ... reached".
	Stopped string
	// Failures are the failed fetches by class (see FailureClass), most
	// frequent first; their counts add up to Errors.
	Failures []Failure
}

// Failure counts the fetches that failed for one reason.
type Failure struct {
	Class   string `json:"class"`   // FailureClass of the errors
	Count   int64  `json:"count"`   // fetches that failed so
	Example string `json:"example"` // the first such error, with its URL
}

// Crawler is a bounded, polite breadth-first crawler on top of a Recorder.
type Crawler struct {
	cfg    CrawlConfig
	client *http.Client
	log    *slog.Logger

	// inflight counts fetches whose records are written but not yet
	// durable (their crawl.log lines and counts follow then).
	inflight sync.WaitGroup

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []item
	seen    map[string]bool
	busy    int
	started int
	hosts   map[string]*hostState
	done    bool

	pages, errs, oos, robotsSkipped atomic.Int64
	excluded, sitemaps, stored      atomic.Int64
	stopped                         string              // why the crawl ended early; guarded by mu
	sitemapsQueued                  int                 // guarded by mu
	stopErr                         error               // why the crawl stopped early (a full disk); guarded by mu
	failures                        map[string]*Failure // guarded by mu
}

type item struct {
	u       *url.URL
	depth   int
	path    string // discovery path (hop codes)
	via     string // the URL it was found on
	sitemap bool   // a sitemap or sitemap index to read for seeds
}

type hostState struct {
	mu     sync.Mutex
	next   time.Time
	robots *robotstxt.Group
	loaded bool
	// unreachable: robots.txt could not be fetched (network error); RFC
	// 9309 2.3.1.4 says to assume complete disallow.
	unreachable bool
}

// NewCrawler returns a crawler; Run starts it.
func NewCrawler(cfg CrawlConfig) (*Crawler, error) {
	if cfg.Recorder == nil {
		return nil, errors.New("crawl: crawler needs a Recorder")
	}
	if len(cfg.Seeds) == 0 {
		return nil, errors.New("crawl: no seed URLs")
	}
	if cfg.Scope == nil {
		s, err := NewScope(cfg.Seeds, nil)
		if err != nil {
			return nil, err
		}
		cfg.Scope = s
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.AcceptEncoding == "" {
		cfg.AcceptEncoding = "gzip"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Crawler{cfg: cfg, log: cfg.Logger, seen: map[string]bool{}, hosts: map[string]*hostState{}, failures: map[string]*Failure{}}
	c.cond = sync.NewCond(&c.mu)
	c.client = &http.Client{
		Transport:     cfg.Recorder,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.cfg.SitemapLimits.defaults()
	for _, s := range cfg.Seeds {
		c.enqueueLocked(item{u: s})
	}
	return c, nil
}

// Stats returns a snapshot of the counters.
func (c *Crawler) Stats() CrawlStats {
	c.mu.Lock()
	q := int64(len(c.queue))
	fs := make([]Failure, 0, len(c.failures))
	for _, f := range c.failures {
		fs = append(fs, *f)
	}
	c.mu.Unlock()
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].Count != fs[j].Count {
			return fs[i].Count > fs[j].Count
		}
		return fs[i].Class < fs[j].Class
	})
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	return CrawlStats{Pages: c.pages.Load(), Errors: c.errs.Load(), Queued: q, OutOfScope: c.oos.Load(), Robots: c.robotsSkipped.Load(),
		Excluded: c.excluded.Load(), Sitemaps: c.sitemaps.Load(), Stopped: stopped, Failures: fs}
}

// failed counts a fetch of u that failed with err.
func (c *Crawler) failed(u *url.URL, err error) { c.failedAs(u, FailureClass(err), err) }

// failedAs counts a failure of class about u.
func (c *Crawler) failedAs(u *url.URL, class string, err error) {
	c.errs.Add(1)
	c.mu.Lock()
	f := c.failures[class]
	if f == nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // "Get URL": the recorder's error names the URL
		}
		ex := err.Error()
		if !strings.Contains(ex, u.String()) {
			ex = u.String() + ": " + ex
		}
		f = &Failure{Class: class, Example: ex}
		c.failures[class] = f
	}
	f.Count++
	c.mu.Unlock()
}

// Failure classes (FailureClass).
const (
	FailDNS      = "DNS lookup failed"
	FailRefused  = "connection refused"
	FailReset    = "connection reset"
	FailTimeout  = "timeout"
	FailTLS      = "TLS error"
	FailDiskFull = "disk full"
	FailOriginal = "archived original unreadable"
	FailOther    = "other error"
)

// FailureClass names why a fetch failed, in the words of a crawl summary:
// DNS lookup failed, connection refused, connection reset, timeout, TLS
// error, disk full, or other error.
func FailureClass(err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var hdrErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	switch {
	case errors.As(err, &dnsErr):
		return FailDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailRefused
	case errors.Is(err, syscall.ENOSPC):
		return FailDiskFull
	case errors.As(err, &certErr), errors.As(err, &hdrErr), errors.As(err, &alertErr),
		errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalidCert):
		return FailTLS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return FailTimeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return FailReset
	}
	return FailOther
}

func (c *Crawler) enqueueLocked(it item) {
	key := it.u.String()
	if it.sitemap {
		key = "sitemap " + key // a sitemap URL may also be a page
	}
	if c.seen[key] {
		return
	}
	if err := c.cfg.Scope.Allow(it.u); err != nil {
		c.oos.Add(1)
		return
	}
	if !it.sitemap {
		if why := c.cfg.Filter.Check(it.u); why != "" {
			c.seen[key] = true
			c.excluded.Add(1)
			c.log.Debug("crawl: excluded", "url", key, "why", why)
			return
		}
	}
	c.seen[key] = true
	c.queue = append(c.queue, it)
	c.cond.Broadcast()
}

// child is the item for u found on parent by hop.
func child(parent item, u *url.URL, hop byte, depth int) item {
	return item{u: u, depth: depth, path: parent.path + string(hop), via: parent.u.String()}
}

// stopFor ends the crawl cleanly (no new fetch starts; fetches in flight
// are recorded) and records why.
func (c *Crawler) stopFor(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped == "" && !c.done {
		c.stopped = why
	}
	c.done = true
	c.cond.Broadcast()
}

// Run crawls until the frontier is empty, MaxPages is reached or ctx is
// cancelled; fetches in flight when ctx is cancelled are abandoned without
// recording anything partial. A fetch that cannot be stored because the
// disk is full (or below the writer's reserve) stops the crawl: Run then
// returns that error once the fetches in flight have finished.
func (c *Crawler) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.done = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	if c.cfg.TimeLimit > 0 {
		t := time.AfterFunc(c.cfg.TimeLimit, func() { c.stopFor(fmt.Sprintf("time limit %s reached", c.cfg.TimeLimit)) })
		defer t.Stop()
	}
	var wg sync.WaitGroup
	for i := 0; i < c.cfg.Parallel; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, ok := c.next()
				if !ok {
					return
				}
				c.visit(ctx, it, i)
				c.mu.Lock()
				c.busy--
				c.cond.Broadcast()
				c.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	c.inflight.Wait()
	c.cfg.Recorder.CloseIdleConnections()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr != nil {
		return c.stopErr
	}
	return ctx.Err()
}

// stopOn ends the crawl when err means nothing more can be stored (the
// disk is full or below the writer's reserve): every later fetch would
// fail the same way. Fetches in flight finish; Run returns the error.
func (c *Crawler) stopOn(err error) {
	if !fsutil.IsDiskFull(err) {
		return
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // "Get URL": the recorder's error names the URL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr == nil {
		c.stopErr = fmt.Errorf("crawl: stopped: %w", err)
	}
	c.done = true
	c.cond.Broadcast()
}

func (c *Crawler) next() (item, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.done {
			return item{}, false
		}
		if c.cfg.MaxPages > 0 && c.started >= c.cfg.MaxPages {
			if len(c.queue) > 0 && c.stopped == "" {
				c.stopped = fmt.Sprintf("page limit %d reached", c.cfg.MaxPages)
			}
			return item{}, false
		}
		if len(c.queue) > 0 {
			it := c.queue[0]
			c.queue = c.queue[1:]
			c.busy++
			c.started++
			return it, true
		}
		if c.busy == 0 {
			return item{}, false
		}
		c.cond.Wait()
	}
}

func (c *Crawler) host(u *url.URL) *hostState {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hosts[u.Host]
	if h == nil {
		h = &hostState{}
		c.hosts[u.Host] = h
	}
	return h
}

// polite waits until the host may be contacted again and books the next
// slot.
func (c *Crawler) polite(ctx context.Context, h *hostState) error {
	h.mu.Lock()
	now := time.Now()
	wait := h.next.Sub(now)
	if wait < 0 {
		wait = 0
	}
	h.next = now.Add(wait + c.cfg.Delay)
	h.mu.Unlock()
	if wait == 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Crawler) visit(ctx context.Context, it item, worker int) {
	h := c.host(it.u)
	if (!c.cfg.IgnoreRobots || c.cfg.Sitemaps) && it.u.Path != "/robots.txt" {
		// Sitemap files named by robots.txt are read even where it
		// disallows crawling them: the site offers them to crawlers.
		if !c.robotsAllow(ctx, h, it, worker) && !c.cfg.IgnoreRobots && !it.sitemap {
			if ctx.Err() != nil {
				return
			}
			c.robotsSkipped.Add(1)
			e := LogEntry{Status: LogRobots, Size: -1, URI: it.u.String(), Path: it.path, Via: it.via, Worker: worker}
			h.mu.Lock()
			if h.unreachable {
				e.Status = LogRobotsFailed // counted once, as the robots.txt fetch that failed
			}
			h.mu.Unlock()
			c.cfg.Log.Write(e)
			return
		}
	}
	if err := c.polite(ctx, h); err != nil {
		return
	}
	resp, res, body, ok := c.fetch(ctx, it, worker)
	if !ok {
		return
	}
	if it.sitemap {
		c.readSitemap(it, resp, body)
		return
	}
	mime := mimeOf(resp.Header.Get("Content-Type"))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if loc := resp.Header.Get("Location"); loc != "" {
			if u, err := it.u.Parse(loc); err == nil {
				u.Fragment, u.RawFragment = "", ""
				c.mu.Lock()
				c.enqueueLocked(child(it, u, HopRedirect, it.depth))
				c.mu.Unlock()
			}
		}
	}
	if c.cfg.MaxDepth >= 0 && it.depth >= c.cfg.MaxDepth {
		return
	}
	if !linkBearing(mime) && resp.StatusCode != http.StatusNotModified {
		return
	}
	enc := resp.Header.Get("Content-Encoding")
	if resp.StatusCode == http.StatusNotModified && res.Original != nil {
		// The page is unchanged: follow the links of the archived copy.
		hdr, payload, err := c.cfg.Recorder.ReadOriginalResponse(ctx, *res.Original)
		if err != nil {
			c.failedAs(it.u, FailOriginal, err)
			c.log.Warn("crawl: cannot read the original of a 304 to follow its links", "url", it.u.String(), "err", err)
			return
		}
		body, mime, enc = payload, mimeOf(hdr.Get("Content-Type")), hdr.Get("Content-Encoding")
	}
	if resp.StatusCode >= 400 {
		return
	}
	links := extractLinks(it.u, mime, decodeContent(body, enc, 32<<20))
	c.mu.Lock()
	for _, l := range links {
		c.enqueueLocked(child(it, l.u, l.hop, it.depth+1))
	}
	c.mu.Unlock()
}

// fetch gets it.u through the Recorder and returns the response (its
// body the recorded payload) as soon as the records are written; ok is
// false when the fetch failed (counted and logged) or was abandoned. The
// crawl.log line and the counts follow once the records are durable
// (recorded), while this worker fetches on: records of many fetches
// become durable in one fsync.
func (c *Crawler) fetch(ctx context.Context, it item, worker int) (resp *http.Response, res *Result, body []byte, ok bool) {
	start := time.Now()
	// e is complete when ready is closed; done may run before get returns.
	var e LogEntry
	ready := make(chan struct{})
	b := &batched{done: func(res *Result, err error) {
		defer c.inflight.Done()
		<-ready
		c.recorded(it, e, res, err)
	}}
	c.inflight.Add(1)
	resp, res, err := c.get(withBatched(ctx, b), it.u)
	if !b.started {
		c.inflight.Done()
	}
	if err != nil {
		close(ready)
		if ctx.Err() == nil && !b.started {
			c.failed(it.u, err)
			c.log.Debug("crawl: fetch failed", "url", it.u.String(), "err", err)
			c.cfg.Log.Write(LogEntry{Status: logStatus(err), Size: -1, URI: it.u.String(), Path: it.path, Via: it.via, Worker: worker,
				Start: start, Duration: time.Since(start), Annotations: []string{"err=" + strings.ReplaceAll(FailureClass(err), " ", "-")}})
			c.stopOn(err)
		}
		return nil, nil, nil, false
	}
	// The body is the recorded payload, replayed from memory: taken as it
	// is rather than copied.
	body = b.payload
	if !b.started {
		body, _ = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	e = LogEntry{Status: resp.StatusCode, Size: int64(len(body)), URI: it.u.String(), Path: it.path, Via: it.via,
		MIME: mimeOf(resp.Header.Get("Content-Type")), Worker: worker, Start: start, Duration: time.Since(start)}
	if e.MIME == "" {
		e.MIME = "no-type"
	}
	close(ready)
	if total := c.stored.Add(b.written); c.cfg.SizeLimit > 0 && total >= c.cfg.SizeLimit {
		c.stopFor(fmt.Sprintf("size limit %d bytes reached (%d bytes of records written)", c.cfg.SizeLimit, total))
	}
	return resp, res, body, true
}

// recorded completes a fetch once its records are durable (err: they
// could not be made so): it counts it and writes its crawl.log line e,
// with the digest and annotations of res.
func (c *Crawler) recorded(it item, e LogEntry, res *Result, err error) {
	if err != nil {
		c.failed(it.u, err)
		c.log.Debug("crawl: record failed", "url", it.u.String(), "err", err)
		c.cfg.Log.Write(LogEntry{Status: logStatus(err), Size: -1, URI: e.URI, Path: e.Path, Via: e.Via, Worker: e.Worker,
			Start: e.Start, Duration: e.Duration, Annotations: []string{"err=" + strings.ReplaceAll(FailureClass(err), " ", "-")}})
		c.stopOn(err)
		return
	}
	c.pages.Add(1)
	for i, cp := range res.Captures {
		if i > 0 {
			continue
		}
		e.Digest = cp.Digest
		if cp.IsRevisit() {
			if e.Status == http.StatusNotModified {
				e.Annotations = append(e.Annotations, "duplicate:server-not-modified")
			} else {
				e.Annotations = append(e.Annotations, "duplicate:digest")
			}
		}
	}
	switch {
	case res.Truncated == "" || e.Digest != "" && res.Captures[0].IsRevisit():
		// A revisit's body is left out on purpose (WARC-Truncated: length).
	case res.Truncated == "length":
		e.Annotations = append(e.Annotations, "lenTrunc")
	case res.Truncated == "time":
		e.Annotations = append(e.Annotations, "timeTrunc")
	default:
		e.Annotations = append(e.Annotations, "midFetchTrunc")
	}
	c.cfg.Log.Write(e)
}

// logStatus is the crawl.log status of a failed fetch (Heritrix's codes).
func logStatus(err error) int {
	switch FailureClass(err) {
	case FailDNS:
		return LogDNSFailed
	case FailRefused:
		return LogConnectFailed
	case FailReset:
		return LogConnectBroken
	case FailTimeout:
		return LogTimeout
	}
	return LogOtherError
}

// readSitemap queues the sitemaps of a sitemap index, or the URLs of a
// sitemap as seeds, within SitemapLimits.
func (c *Crawler) readSitemap(it item, resp *http.Response, body []byte) {
	if resp.StatusCode != http.StatusOK {
		c.log.Warn("crawl: sitemap not read", "url", it.u.String(), "status", resp.StatusCode)
		return
	}
	c.sitemaps.Add(1)
	body = decodeContent(body, resp.Header.Get("Content-Encoding"), c.cfg.SitemapLimits.MaxBytes+1)
	locs, index, truncated, err := parseSitemap(it.u, body, c.cfg.SitemapLimits)
	if err != nil {
		c.log.Warn("crawl: sitemap", "err", err)
	}
	if truncated {
		c.log.Warn("crawl: sitemap over the limits; the rest is ignored", "url", it.u.String(),
			"max_urls", c.cfg.SitemapLimits.MaxURLs, "max_bytes", c.cfg.SitemapLimits.MaxBytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range locs {
		if index {
			c.enqueueSitemapLocked(child(it, u, HopManifest, 0))
		} else {
			c.enqueueLocked(child(it, u, HopManifest, 0))
		}
	}
}

// enqueueSitemapLocked queues a sitemap file, at most
// SitemapLimits.MaxFiles per crawl.
func (c *Crawler) enqueueSitemapLocked(it item) {
	it.sitemap = true
	if c.seen["sitemap "+it.u.String()] {
		return
	}
	if c.sitemapsQueued >= c.cfg.SitemapLimits.MaxFiles {
		if c.sitemapsQueued == c.cfg.SitemapLimits.MaxFiles {
			c.log.Warn("crawl: sitemap file limit reached; further sitemaps are ignored", "max_files", c.cfg.SitemapLimits.MaxFiles, "url", it.u.String())
			c.sitemapsQueued++
		}
		return
	}
	c.sitemapsQueued++
	c.enqueueLocked(it)
}

func (c *Crawler) get(ctx context.Context, u *url.URL) (*http.Response, *Result, error) {
	res := &Result{}
	req, err := http.NewRequestWithContext(WithResult(ctx, res), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("crawl: %s: %w", u, err)
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	req.Header.Set("Accept-Encoding", c.cfg.AcceptEncoding)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	return resp, res, nil
}

func (c *Crawler) robotsAllow(ctx context.Context, h *hostState, it item, worker int) bool {
	u := it.u
	h.mu.Lock()
	loaded := h.loaded
	h.mu.Unlock()
	if !loaded {
		c.loadRobots(ctx, h, it, worker)
	}
	h.mu.Lock()
	g, unreachable := h.robots, h.unreachable
	h.mu.Unlock()
	if unreachable {
		return false
	}
	if g == nil {
		return true
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return g.Test(p)
}

// loadRobots fetches robots.txt once per host (recorded and logged like
// any fetch, as a prerequisite of it) and, with Sitemaps, queues the
// sitemaps it names.
func (c *Crawler) loadRobots(ctx context.Context, h *hostState, it item, worker int) {
	u := it.u
	c.mu.Lock()
	key := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}).String()
	first := !c.seen[key]
	c.seen[key] = true
	c.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.loaded {
		return
	}
	h.loaded = true
	if !first {
		return
	}
	ru := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}
	rit := child(it, ru, HopPrereq, it.depth)
	resp, _, body, ok := c.fetch(ctx, rit, worker)
	if !ok {
		h.unreachable = true
		return
	}
	body = decodeContent(body, resp.Header.Get("Content-Encoding"), 1<<20)
	data, err := robotstxt.FromStatusAndBytes(resp.StatusCode, body)
	if err != nil {
		return
	}
	if !c.cfg.IgnoreRobots {
		h.robots = data.FindGroup(c.cfg.UserAgent)
	}
	if c.cfg.Sitemaps && resp.StatusCode == http.StatusOK {
		c.mu.Lock()
		for _, sm := range data.Sitemaps {
			if su, err := ru.Parse(strings.TrimSpace(sm)); err == nil && (su.Scheme == "http" || su.Scheme == "https") {
				c.enqueueSitemapLocked(child(rit, su, HopManifest, 0))
			}
		}
		c.mu.Unlock()
	}
}
