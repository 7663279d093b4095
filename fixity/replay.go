package fixity

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/fixity/merkle"
)

// ErrOutOfScope is wrapped by errors for URI-Ms fixity refuses to replay.
var ErrOutOfScope = errors.New("fixity: target out of scope")

// ReplayOptions configures a Replayer.
type ReplayOptions struct {
	// Config lists the archives that may be replayed. Required.
	Config *Config
	// ExecPath is the Chromium binary; default: chromium, chromium-browser,
	// google-chrome from PATH, or /usr/bin/chromium.
	ExecPath string
	// Quiet is how long the network must be idle (no request in flight, no
	// event) before the page counts as loaded. Default 750ms.
	Quiet time.Duration
	// HardCap bounds the wait for one page; requests still pending then are
	// recorded as timeouts. Default 30s.
	HardCap time.Duration
	// RawTimeout bounds each raw (id_) fetch. Default 20s.
	RawTimeout time.Duration
	// FreshBrowser starts a new browser process with a new temporary
	// user-data-dir for every replay. Otherwise one browser is shared and
	// every replay runs in a new incognito browser context (a fresh
	// profile: no cache, cookies, storage or service workers carried over).
	FreshBrowser bool
	// Transport is used for raw fetches; default a new http.Transport
	// without proxy.
	Transport http.RoundTripper
	// Logger receives debug and warning messages; default discards.
	Logger *slog.Logger
	// BodyBuffer is the per-resource network buffer given to the browser
	// (Network.enable maxResourceBufferSize); default 64 MiB, total 8x.
	BodyBuffer int64
}

// Replayer replays URI-Ms in headless Chromium and builds manifests. It is
// safe for concurrent use: each Replay runs in its own tab and profile.
type Replayer struct {
	opts   ReplayOptions
	cfg    *Config
	log    *slog.Logger
	client *http.Client

	mu      sync.Mutex
	bctx    context.Context
	bcancel context.CancelFunc
	acancel context.CancelFunc
	version string
	ua      string
	proxy   *scopeProxy
}

// NewReplayer checks opts and returns a Replayer. The browser starts on the
// first Replay.
func NewReplayer(opts ReplayOptions) (*Replayer, error) {
	if opts.Config == nil || len(opts.Config.Archives) == 0 {
		return nil, errors.New("fixity: new replayer: no archives configured")
	}
	if opts.Quiet <= 0 {
		opts.Quiet = 750 * time.Millisecond
	}
	if opts.HardCap <= 0 {
		opts.HardCap = 30 * time.Second
	}
	if opts.RawTimeout <= 0 {
		opts.RawTimeout = 20 * time.Second
	}
	if opts.BodyBuffer <= 0 {
		opts.BodyBuffer = 64 << 20
	}
	if opts.ExecPath == "" {
		opts.ExecPath = findChromium()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Replayer{opts: opts, cfg: opts.Config, log: opts.Logger}
	tr := opts.Transport
	if tr == nil {
		// No Accept-Encoding is sent (as with the evidence recorder), so
		// the body hashed is the entity as the archive serves it.
		tr = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second, ResponseHeaderTimeout: opts.RawTimeout, DisableCompression: true}
	}
	r.client = &http.Client{
		Transport: tr,
		// Redirects are followed by rawFetch itself, hop by hop, in scope.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r, nil
}

// Replay loads urim in a fresh profile, waits until the network is quiet
// (or the hard cap), collects every resource, fetches the raw counterparts,
// and returns the sealed manifest. Failures of the replay itself that are
// worth retrying (browser crash) are returned as errors; 5xx answers and
// timeouts give a manifest with Context.Transient set. A URI-M outside the
// configured archives gives an error wrapping ErrOutOfScope.
func (r *Replayer) Replay(ctx context.Context, urim string, opts ...ReplayOption) (*Manifest, error) {
	var call replayCall
	for _, o := range opts {
		o(&call)
	}
	arch, _, err := r.cfg.CheckTarget(urim)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOutOfScope, err)
	}
	if _, ok := ParseURIM(urim); !ok {
		return nil, fmt.Errorf("%w: fixity: target %q: not a URI-M (no /<timestamp>/<URI-R> in the path)", ErrOutOfScope, urim)
	}
	var bctx context.Context
	if r.opts.FreshBrowser {
		b, cancel, err := r.startBrowser()
		if err != nil {
			return nil, err
		}
		defer cancel()
		bctx = b
	} else if bctx, err = r.shared(); err != nil {
		return nil, err
	}

	canon, _ := r.cfg.Canonical(urim)
	m := &Manifest{Format: ManifestFormat, URIM: urim, CanonicalURIM: canon, Archive: arch.Name}
	m.Context = Context{PolicyVersion: PolicyVersion, PolicyDigest: r.cfg.Digest(), Started: time.Now().UTC()}
	r.mu.Lock()
	m.Context.Browser, m.Context.UserAgent = r.version, r.ua
	r.mu.Unlock()

	var ev *evidenceSet
	if call.evidenceDir != "" {
		if ev, err = r.openEvidence(call.evidenceDir, urim); err != nil {
			return nil, err
		}
	}
	var raws *rawFetcher
	if !arch.NoRaw {
		raws = newRawFetcher(ctx, r, ev)
	}
	reqs, bodies, settled, errs, err := r.load(ctx, bctx, urim, raws, ev != nil)
	if err != nil {
		if ev != nil {
			raws.wait()
			ev.abort()
		}
		if bctx.Err() != nil {
			return nil, fmt.Errorf("fixity: replay %s: browser died: %w", urim, err)
		}
		return nil, fmt.Errorf("fixity: replay %s: %w", urim, err)
	}
	m.Context.Settled = settled
	m.Context.Errors = append(m.Context.Errors, errs...)
	var refs map[network.RequestID]RecordRef
	if ev != nil {
		if refs, err = ev.writeRewritten(ctx, reqs, bodies); err != nil {
			raws.wait()
			ev.abort()
			return nil, fmt.Errorf("fixity: replay %s: %w", urim, err)
		}
	}
	r.build(m, reqs, bodies, raws, refs)
	if ev != nil {
		raws.wait()
		if m.Evidence, err = ev.finish(); err != nil {
			ev.abort()
			return nil, fmt.Errorf("fixity: replay %s: %w", urim, err)
		}
	}
	m.Context.Finished = time.Now().UTC()
	m.Seal()
	return m, nil
}

type bodyResult struct {
	hash merkle.Hash
	n    int64
	data []byte // kept only for evidence
	err  error
}

// load runs the browser part of a replay.
func (r *Replayer) load(ctx context.Context, bctx context.Context, urim string, raws *rawFetcher, keepBodies bool) ([]trackedReq, map[network.RequestID]bodyResult, string, []string, error) {
	var tctx context.Context
	var tcancel context.CancelFunc
	if r.opts.FreshBrowser {
		tctx, tcancel = chromedp.NewContext(bctx)
	} else {
		tctx, tcancel = chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	}
	defer tcancel()
	stop := context.AfterFunc(ctx, tcancel)
	defer stop()

	tr := newTracker()
	if err := chromedp.Listen(tctx, tr.onEvent); err != nil {
		return nil, nil, "", nil, fmt.Errorf("listen: %w", err)
	}
	paused := chromedp.Events(tctx, fetch.RequestPaused)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.interceptLoop(tctx, paused, tr)
	}()
	defer func() { tcancel(); wg.Wait() }()

	buf := r.opts.BodyBuffer
	total := 8 * buf
	if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{MaxTotalBufferSize: &total, MaxResourceBufferSize: &buf}); err != nil {
		return nil, nil, "", nil, fmt.Errorf("network enable: %w", err)
	}
	if _, err := chromedp.Call(tctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		return nil, nil, "", nil, fmt.Errorf("disable cache: %w", err)
	}
	if _, err := chromedp.Call(tctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		return nil, nil, "", nil, fmt.Errorf("fetch enable: %w", err)
	}

	start := time.Now()
	deadline := start.Add(r.opts.HardCap)
	var errs []string
	nctx, ncancel := context.WithDeadline(tctx, deadline)
	nav, err := chromedp.Call(nctx, page.Navigate, page.NavigateParams{URL: urim})
	ncancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, nil, "", nil, ctx.Err()
	case err != nil && bctx.Err() != nil:
		return nil, nil, "", nil, err
	case err != nil:
		errs = append(errs, "navigate: "+err.Error())
	case nav.ErrorText != "":
		errs = append(errs, "navigate: "+nav.ErrorText)
	}

	settled := "cap"
	seenDone := 0
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			return nil, nil, "", nil, ctx.Err()
		case <-bctx.Done():
			return nil, nil, "", nil, fmt.Errorf("browser exited while loading: %w", context.Cause(bctx))
		case now := <-tick.C:
			if raws != nil {
				var chains [][]string
				chains, seenDone = tr.finishedSince(seenDone)
				for _, c := range chains {
					if eff, why := r.cfg.exclusion(c...); why == "" {
						raws.start(eff)
					}
				}
			}
			inflight, last := tr.state()
			if inflight == 0 && now.Sub(last) >= r.opts.Quiet && now.Sub(start) >= r.opts.Quiet {
				settled = "quiet"
				break wait
			}
			if now.After(deadline) {
				break wait
			}
		}
	}

	// Fetch the bodies now, before anything navigates or evicts them.
	reqs := tr.snapshot()
	bodies := map[network.RequestID]bodyResult{}
	for i := range reqs {
		q := &reqs[i]
		needed := r.needsBody(q)
		if !needed && !(keepBodies && q.resp != nil && q.done && q.failed == "" && hasEntity(int(q.resp.Status))) {
			continue
		}
		res, err := chromedp.Call(tctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: q.id})
		if err != nil {
			if needed {
				bodies[q.id] = bodyResult{err: err}
			}
			continue
		}
		b := bodyResult{hash: merkle.Sum(res.Body), n: int64(len(res.Body))}
		if keepBodies {
			b.data = res.Body
		}
		bodies[q.id] = b
	}
	return reqs, bodies, settled, errs, nil
}

// interceptLoop answers every paused request: in-scope requests continue,
// everything else fails as blocked by the client (the tracker records it as
// a live-web or non-http resource).
func (r *Replayer) interceptLoop(tctx context.Context, paused iter.Seq2[fetch.EventRequestPaused, error], tr *tracker) {
	// Each answer runs in its own goroutine: answering one at a time would
	// queue every request of the page behind the round trips of the others.
	var wg sync.WaitGroup
	defer wg.Wait()
	for ev, err := range paused {
		if err != nil {
			return
		}
		if ev.Request == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.allowed(ev.Request.URL) {
				chromedp.Call(tctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				return
			}
			r.log.Debug("fixity: blocked request outside the archive list", "url", ev.Request.URL)
			chromedp.Call(tctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
			if ev.NetworkID != "" {
				tr.markBlocked(ev.NetworkID, ev.Request.URL)
			}
		}()
	}
}

// allowed reports whether the browser may load u during a replay.
func (r *Replayer) allowed(u string) bool {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		return false
	}
	return r.cfg.ArchiveFor(pu.Host) != nil
}

// needsBody reports whether the rewritten body of q is hashed.
func (r *Replayer) needsBody(q *trackedReq) bool {
	if q.resp == nil || !q.done || q.failed != "" {
		return false
	}
	if _, why := r.cfg.exclusion(q.chain()...); why != "" {
		return false
	}
	return hasEntity(int(q.resp.Status)) && !isText(contentTypeOf(q.resp))
}

func hasEntity(status int) bool {
	return status >= 200 && status < 300 && status != 204
}

func contentTypeOf(resp *network.Response) string {
	for k, v := range resp.Headers {
		if strings.EqualFold(k, "content-type") {
			return fmt.Sprint(v)
		}
	}
	return resp.MimeType
}

// build turns tracked requests into manifest resources and fetches raw
// counterparts.
func (r *Replayer) build(m *Manifest, reqs []trackedReq, bodies map[network.RequestID]bodyResult, raws *rawFetcher, refs map[network.RequestID]RecordRef) {
	for i := range reqs {
		q := &reqs[i]
		pu, err := url.Parse(q.first)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
			continue // data:, blob:, about: are not network resources
		}
		eff, why := r.cfg.exclusion(q.chain()...)
		res := Resource{URL: eff, Type: q.typ, Excluded: why}
		if eff != q.first {
			res.RequestedURL = q.first
		}
		res.Key = r.cfg.URIR(eff)
		if canon, isM := r.cfg.Canonical(eff); isM {
			res.URIM = canon
			pm, _ := ParseURIM(eff)
			res.Datetime = pm.Datetime
		}
		if res.Excluded == "live-web" {
			m.Context.LiveWeb = append(m.Context.LiveWeb, q.first)
		}
		res.Rewritten = r.rewrittenResponse(q, bodies)
		if ref, ok := refs[q.id]; ok {
			res.Rewritten.Evidence = &ref
		}
		if res.Included() && res.Rewritten.Body == "" {
			res.Rewritten.Body = BodyNone
		}
		if b, ok := bodies[q.id]; ok && b.err != nil {
			m.Context.Transient = true
			m.Context.Errors = append(m.Context.Errors, fmt.Sprintf("body of %s: %v", q.first, b.err))
		}
		m.Resources = append(m.Resources, res)
	}
	if len(m.Resources) == 0 {
		m.Context.Transient = true
		m.Context.Errors = append(m.Context.Errors, "no resource was loaded")
	}
	if raws != nil {
		r.fetchRaws(raws, m)
		for i := range m.Resources {
			if raw := m.Resources[i].Raw; raw != nil && raw.Suspect != "" {
				m.Context.Warnings = append(m.Context.Warnings, m.Resources[i].URL+": "+raw.Suspect)
			}
		}
	}
	runChecks(m)
	r.markTransient(m)
}

func (r *Replayer) rewrittenResponse(q *trackedReq, bodies map[network.RequestID]bodyResult) *Response {
	p := &Response{FinalURL: q.url}
	p.FinalURIM, _ = r.cfg.Canonical(q.url)
	for _, h := range q.hops {
		c, _ := r.cfg.Canonical(h.url)
		hop := Hop{Status: h.status, URIM: c, URL: h.url}
		if h.resp != nil {
			hop.Headers = r.cfg.selectHeaders(h.url, cdpHeaders(h.resp.Headers))
		}
		p.Redirects = append(p.Redirects, hop)
	}
	switch {
	case !q.done:
		p.Outcome, p.Body = OutcomeTimeout, BodyNone
		return p
	case q.failed != "" && (q.blocked || strings.Contains(q.failed, "ERR_BLOCKED_BY_CLIENT")):
		p.Outcome, p.Error, p.Body = OutcomeBlocked, q.failed, BodyNone
		return p
	case q.failed != "" || q.resp == nil:
		p.Outcome, p.Error, p.Body = OutcomeFailed, q.failed, BodyNone
		return p
	}
	p.Outcome, p.Status = OutcomeOK, int(q.resp.Status)
	p.MIME = q.resp.MimeType
	p.Cache = cacheSignals(cdpHeaders(q.resp.Headers))
	switch {
	case q.resp.FromDiskCache, q.resp.FromPrefetchCache:
		p.Cache = strings.TrimPrefix(p.Cache+"; browser cache", "; ")
	case q.resp.FromServiceWorker:
		p.Cache = strings.TrimPrefix(p.Cache+"; service worker", "; ")
	}
	p.Headers = r.cfg.selectHeaders(q.url, cdpHeaders(q.resp.Headers))
	switch {
	case !hasEntity(p.Status):
		p.Body = BodyNone
	case isText(contentTypeOf(q.resp)):
		p.Body = BodyTextRewritten
	default:
		if b, ok := bodies[q.id]; ok && b.err == nil {
			p.Body, p.BodyHash, p.BodyLength = BodyHashed, b.hash, b.n
		} else {
			p.Body = BodyNone
		}
	}
	return p
}

// markTransient flags replays that met a 5xx, a timeout or a failed main
// document: they are retried and never compared as changes.
func (r *Replayer) markTransient(m *Manifest) {
	for i := range m.Resources {
		res := &m.Resources[i]
		if !res.Included() {
			continue
		}
		for _, side := range []struct {
			name string
			p    *Response
		}{{"rewritten", res.Rewritten}, {"raw", res.Raw}} {
			p := side.p
			if p == nil {
				continue
			}
			if p.Outcome == OutcomeTimeout || (p.Outcome == OutcomeOK && p.Status >= 500) {
				m.Context.Transient = true
				m.Context.Errors = append(m.Context.Errors, fmt.Sprintf("%s %s: %s", side.name, res.URL, p.statusField()))
			}
		}
	}
	if res := m.Main(); res != nil {
		if main := res.Rewritten; main != nil && main.Outcome != OutcomeOK {
			m.Context.Transient = true
			m.Context.Errors = append(m.Context.Errors, fmt.Sprintf("main document %s: %s %s", res.URL, main.Outcome, main.Error))
		}
	}
}
