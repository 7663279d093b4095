package aggregate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayside-archive/wayside/mementomap"
	"github.com/wayside-archive/wayside/replay"
)

// Aggregator answers Memento TimeMap and TimeGate requests for a URI-R
// from several archives, asking only those whose MementoMap may hold it.
// Build it with New, keep its maps fresh with Run, release it with Close.
type Aggregator struct {
	cfg     Config
	log     *slog.Logger
	routing bool
	ups     []*upstream
	tr      *http.Transport

	lookups atomic.Int64
	partial atomic.Int64
	cache   *cache // nil when cache_ttl is negative
}

// upstream is one configured archive.
type upstream struct {
	cfg   ArchiveConfig
	order int
	// hosts are the scheme://host[:port] the archive may be reached at
	// (its TimeMap's, TimeGate's and configured map's): nothing else is
	// ever fetched for it, whatever a URI-R, a redirect or a Link says.
	hosts    map[string]bool
	follow   *http.Client // follows redirects within hosts
	noFollow *http.Client // TimeGate: the redirect is the answer
	amap     *archiveMap
	stats    archiveStats
	dormant  dormancy
	// pathTokens and secrets are kept out of answers (redactToken).
	pathTokens, secrets []string
}

type archiveStats struct {
	requests, avoided, hits, misses, errors, timeouts atomic.Int64
	dormant                                           atomic.Int64 // lookups skipped while dormant
	cached                                            atomic.Int64 // lookups answered from the cache
	mapFetches, mapFailures                           atomic.Int64
	latency                                           prometheus.Histogram
}

// latencyBounds are the upstream latency histogram's buckets (seconds).
var latencyBounds = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Option configures New.
type Option func(*Aggregator)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(a *Aggregator) { a.log = l } }

// WithoutRouting makes the aggregator ask every archive for every URI-R,
// as MemGator does, and fetch no map: the baseline routing is measured
// against.
func WithoutRouting() Option { return func(a *Aggregator) { a.routing = false } }

// New returns an aggregator over cfg's archives. cfg must have had
// Defaults applied; problems Check reports are an error.
func New(cfg Config, opts ...Option) (*Aggregator, error) {
	var probs []string
	cfg.Check(func(k, m string) { probs = append(probs, k+": "+m) })
	if len(probs) > 0 {
		return nil, fmt.Errorf("aggregate: config: %s", strings.Join(probs, "; "))
	}
	if !cfg.Enabled() {
		return nil, errors.New("aggregate: no archives configured")
	}
	a := &Aggregator{cfg: cfg, log: slog.New(slog.DiscardHandler), routing: true}
	if cfg.CacheTTL > 0 {
		a.cache = newCache(cfg.CacheMementos)
	}
	for _, o := range opts {
		o(a)
	}
	a.tr = &http.Transport{
		DialContext:            (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConnsPerHost:    32,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		ForceAttemptHTTP2:      true,
	}
	if a.routing {
		if err := os.MkdirAll(cfg.MapDir, 0o700); err != nil {
			return nil, fmt.Errorf("aggregate: %w", err)
		}
		removeStaleTemps(cfg.MapDir)
	}
	for i, ac := range cfg.Archives {
		up := &upstream{cfg: ac, order: i, hosts: map[string]bool{},
			amap:  &archiveMap{state: mapNone, kick: make(chan struct{}, 1)},
			stats: archiveStats{latency: newLatency(ac.Name)}}
		up.pathTokens, up.secrets = secretsOf(ac)
		for _, p := range []string{ac.TimeMap, ac.TimeGate, ac.MementoMap} {
			if u, err := url.Parse(p); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
				up.hosts[origin(u)] = true
			}
		}
		up.follow = &http.Client{Transport: a.tr, CheckRedirect: up.checkRedirect}
		up.noFollow = &http.Client{Transport: a.tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		if a.routing && ac.MementoMap != "" {
			up.amap.state = mapWaiting
			if ac.MementoMap != Discover {
				up.amap.url = ac.MementoMap
			}
		}
		a.ups = append(a.ups, up)
	}
	return a, nil
}

func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

func (up *upstream) allowed(u *url.URL) bool { return up.hosts[origin(u)] }

func (up *upstream) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return fmt.Errorf("more than 5 redirects")
	}
	if !up.allowed(req.URL) {
		return fmt.Errorf("redirect to %s, outside archive %s", origin(req.URL), up.cfg.Name)
	}
	return nil
}

// Run keeps every MementoMap fresh (fetched at once, then every Refresh)
// until ctx ends. Without it, archives are asked for every URI-R.
func (a *Aggregator) Run(ctx context.Context) error {
	if !a.routing {
		<-ctx.Done()
		return nil
	}
	var wg sync.WaitGroup
	for _, up := range a.ups {
		if up.cfg.MementoMap == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.runMaps(ctx, up)
		}()
	}
	wg.Wait()
	return nil
}

// RefreshMaps fetches every map once, now (in parallel), and returns the
// failures joined; the archives whose map failed are asked for every
// URI-R.
func (a *Aggregator) RefreshMaps(ctx context.Context) error {
	if !a.routing {
		return nil
	}
	errs := make([]error, len(a.ups))
	var wg sync.WaitGroup
	for i, up := range a.ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = a.refreshMap(ctx, up)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close unmaps the maps and closes idle connections.
func (a *Aggregator) Close() error {
	for _, up := range a.ups {
		up.amap.install(nil, mapNone, 0, "")
	}
	a.tr.CloseIdleConnections()
	return nil
}

// ParseURIR reads a URI-R as the aggregate routes take it (see
// replay.ParseURIR: http:// assumed, http(s) with a host required),
// without its fragment, at most 8 KiB.
func ParseURIR(s string) (string, error) {
	if len(s) > 8<<10 {
		return "", fmt.Errorf("URI-R of %d bytes: at most 8192", len(s))
	}
	if strings.ContainsAny(s, " \t\r\n\x00") {
		return "", fmt.Errorf("URI-R %q: contains white space or control characters", s)
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	s, err := replay.ParseURIR(s)
	if err != nil {
		return "", err
	}
	return normalizeURIR(s)
}

// Outcome is what one archive contributed to an answer.
type Outcome struct {
	Archive string `json:"archive"`
	// Asked is false when the archive's map said it holds nothing of the
	// URI-R (the request was avoided).
	Asked    bool   `json:"asked"`
	Mementos int    `json:"mementos"`
	Error    string `json:"error,omitempty"`
	Timeout  bool   `json:"timeout,omitempty"`
	// Cached is true when the answer came from the cache.
	Cached bool `json:"cached,omitempty"`
	// Dormant is true when the archive was not asked because it failed
	// repeatedly (MemGator's dormant mode); Error says until when.
	Dormant  bool          `json:"dormant,omitempty"`
	Duration time.Duration `json:"-"`
}

// Result is an aggregated answer: the mementos of every archive that
// answered, oldest first.
type Result struct {
	URIR     string
	Mementos []Memento
	Archives []Outcome
}

// Partial reports whether an asked archive did not answer.
func (r *Result) Partial() bool {
	for _, o := range r.Archives {
		if o.Error != "" {
			return true
		}
	}
	return false
}

// Asked returns the number of archives asked.
func (r *Result) Asked() int {
	n := 0
	for _, o := range r.Archives {
		if o.Asked {
			n++
		}
	}
	return n
}

// failures describes the archives that did not answer ("name (reason)").
func (r *Result) failures() []string {
	var out []string
	for _, o := range r.Archives {
		if o.Error != "" {
			out = append(out, o.Archive+" ("+o.Error+")")
		}
	}
	return out
}

// TimeMap returns every memento of uriR (a URI-R as ParseURIR returns it)
// the archives that may hold it list, merged by time, within the deadline.
func (a *Aggregator) TimeMap(ctx context.Context, uriR string) (*Result, error) {
	return a.aggregate(ctx, uriR, nil)
}

// TimeGate returns the mementos of uriR near at: each asked archive's
// TimeGate answer (its closest memento and the first, previous, next and
// last it links), or its TimeMap when it has no TimeGate. Closest picks
// the answer from them.
func (a *Aggregator) TimeGate(ctx context.Context, uriR string, at time.Time) (*Result, error) {
	return a.aggregate(ctx, uriR, &at)
}

func (a *Aggregator) aggregate(ctx context.Context, uriR string, at *time.Time) (*Result, error) {
	if uriR == "" {
		return nil, errors.New("aggregate: no URI-R")
	}
	a.lookups.Add(1)
	key, keyErr := mementomap.KeyFor(uriR)
	res := &Result{URIR: uriR, Archives: make([]Outcome, len(a.ups))}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Deadline)
	defer cancel()
	type answer struct {
		i  int
		ms []Memento
		o  Outcome
	}
	ch := make(chan answer, len(a.ups))
	asked := make([]bool, len(a.ups))
	pending := 0
	for i, up := range a.ups {
		res.Archives[i] = Outcome{Archive: up.cfg.Name}
		if a.routing && keyErr == nil && !up.amap.mayHold([]byte(key)) {
			up.stats.avoided.Add(1)
			continue
		}
		if until, ok := up.dormant.asleep(time.Now()); ok {
			up.stats.dormant.Add(1)
			res.Archives[i].Dormant = true
			res.Archives[i].Error = fmt.Sprintf("dormant until %s after repeated failures", until.UTC().Format(time.RFC3339))
			continue
		}
		asked[i] = true
		pending++
		go func() {
			start := time.Now()
			ms, cached, err := a.ask(ctx, up, uriR, at)
			if cached {
				up.stats.cached.Add(1)
				ch <- answer{i: i, ms: ms, o: Outcome{Archive: up.cfg.Name, Asked: true, Cached: true, Mementos: len(ms)}}
				return
			}
			ch <- answer{i: i, ms: ms, o: a.account(up, ms, err, time.Since(start))}
		}()
	}
	// Every ask ends by the deadline (its context's); the answer does not
	// wait for a straggler past it (it is counted when it ends).
	deadline := time.NewTimer(a.cfg.Deadline + 50*time.Millisecond)
	defer deadline.Stop()
	got := make([]bool, len(a.ups))
collect:
	for pending > 0 {
		select {
		case ans := <-ch:
			pending--
			got[ans.i] = true
			res.Archives[ans.i] = ans.o
			res.Mementos = append(res.Mementos, ans.ms...)
		case <-deadline.C:
			break collect
		}
	}
	for i := range a.ups {
		if asked[i] && !got[i] {
			o := &res.Archives[i]
			o.Asked, o.Timeout, o.Error = true, true, fmt.Sprintf("no answer within the deadline (%v)", a.cfg.Deadline)
		}
	}
	a.merge(res)
	if res.Partial() {
		a.partial.Add(1)
	}
	return res, nil
}

// account records an archive's answer in its statistics.
func (a *Aggregator) account(up *upstream, ms []Memento, err error, d time.Duration) Outcome {
	st := &up.stats
	st.requests.Add(1)
	st.latency.Observe(d.Seconds())
	o := Outcome{Archive: up.cfg.Name, Asked: true, Mementos: len(ms), Duration: d}
	if !errors.Is(err, context.Canceled) {
		if until, slept := up.dormant.record(err != nil, time.Now(), &a.cfg); slept {
			a.log.Warn("aggregate: archive dormant", "archive", up.cfg.Name, "until", until, "err", err)
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		// The client went away: not the archive's failure.
		o.Error = "canceled"
	case err != nil:
		st.errors.Add(1)
		o.Error = err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			st.timeouts.Add(1)
			o.Timeout = true
			o.Error = fmt.Sprintf("timeout after %v", d.Round(time.Millisecond))
		}
		a.log.Debug("aggregate: archive failed", "archive", up.cfg.Name, "err", err)
	case len(ms) > 0:
		st.hits.Add(1)
	default:
		st.misses.Add(1)
	}
	return o
}

// merge sorts the mementos by time (then archive priority and order, then
// URI-M) and drops repeats of a URI-M.
func (a *Aggregator) merge(res *Result) {
	rank := map[string]int{}
	for _, up := range a.ups {
		rank[up.cfg.Name] = -up.cfg.Priority*1_000_000 + up.order
	}
	sort.SliceStable(res.Mementos, func(i, j int) bool {
		x, y := res.Mementos[i], res.Mementos[j]
		if !x.Datetime.Equal(y.Datetime) {
			return x.Datetime.Before(y.Datetime)
		}
		if rank[x.Archive] != rank[y.Archive] {
			return rank[x.Archive] < rank[y.Archive]
		}
		return x.URI < y.URI
	})
	seen := make(map[string]bool, len(res.Mementos))
	out := res.Mementos[:0]
	for _, m := range res.Mementos {
		if !seen[m.URI] {
			seen[m.URI] = true
			out = append(out, m)
		}
	}
	res.Mementos = out
}

// Closest returns the index of the memento closest to at (ties go to the
// earlier, then to the archive listed first in the merged order), or -1.
func Closest(ms []Memento, at time.Time) int {
	best, bestD := -1, time.Duration(math.MaxInt64)
	for i, m := range ms {
		d := m.Datetime.Sub(at)
		if d < 0 {
			d = -d
		}
		if d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// ask fetches the archive's mementos of uriR: its TimeMap (all pages, up
// to MaxPages), or for a TimeGate request its TimeGate's Link header when
// it has one.
func (a *Aggregator) ask(ctx context.Context, up *upstream, uriR string, at *time.Time) ([]Memento, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, up.cfg.Timeout)
	defer cancel()
	ckey := up.cfg.Name + "\x00" + uriR
	if at == nil && !noCache(ctx) {
		if ms, ok := a.cache.get(ckey, time.Now()); ok {
			return ms, true, nil
		}
	}
	ttl := a.cfg.CacheTTL
	ms, err := a.askOnce(withTTL(ctx, &ttl), up, uriR, at)
	if err != nil && ctx.Err() != nil {
		err = ctx.Err() // the deadline, a timeout, or the client gone
	}
	// The archive's tokens never reach an answer (nor the cache).
	kept := ms[:0]
	for _, m := range ms {
		if u, ok := up.redactToken(m.URI); ok {
			m.URI = u
			kept = append(kept, m)
		}
	}
	if err == nil && at == nil {
		a.cache.put(ckey, kept, ttl, time.Now())
	}
	return kept, false, err
}

func (a *Aggregator) askOnce(ctx context.Context, up *upstream, uriR string, at *time.Time) ([]Memento, error) {
	if at != nil && up.cfg.TimeGate != "" {
		hdr := http.Header{}
		hdr.Set("Accept-Datetime", at.UTC().Format(http.TimeFormat))
		resp, err := a.get(ctx, up, up.cfg.TimeGate+uriR, hdr, false)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		switch {
		case resp.StatusCode == http.StatusNotFound:
			return nil, nil
		case resp.StatusCode >= 400:
			return nil, fmt.Errorf("TimeGate: HTTP %d", resp.StatusCode)
		}
		links, perr := ParseLinks(strings.Join(resp.Header.Values("Link"), ", "))
		ms, _ := mementos(links, resp.Request.URL, up.cfg.Name)
		if len(ms) == 0 {
			if perr != nil {
				return nil, fmt.Errorf("TimeGate: HTTP %d with an unreadable Link header: %v", resp.StatusCode, perr)
			}
			return nil, fmt.Errorf("TimeGate: HTTP %d without memento links", resp.StatusCode)
		}
		return ms, nil
	}
	next := up.cfg.TimeMap + uriR
	var out []Memento
	for page := 0; next != "" && page < a.cfg.MaxPages; page++ {
		ms, n, err := a.timeMapPage(ctx, up, next)
		if err != nil {
			if page > 0 && len(out) > 0 {
				return out, fmt.Errorf("TimeMap page %d: %w", page+1, err)
			}
			return nil, err
		}
		out = append(out, ms...)
		next = n
	}
	return out, nil
}

// timeMapPage fetches one TimeMap page and returns its mementos and the
// next page's URL (Link: rel="next", on the archive's hosts only).
func (a *Aggregator) timeMapPage(ctx context.Context, up *upstream, target string) ([]Memento, string, error) {
	hdr := http.Header{}
	hdr.Set("Accept", "application/link-format")
	resp, err := a.get(ctx, up, target, hdr, true)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, "", nil
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("TimeMap: HTTP %d", resp.StatusCode)
	}
	if ttl, ok := ctx.Value(ttlKey{}).(*time.Duration); ok {
		*ttl = min(*ttl, freshFor(resp.Header, *ttl))
	}
	ms, nlinks, bad, nonEmpty, perr, err := a.readTimeMap(resp, up)
	if err != nil {
		return nil, "", err
	}
	if nlinks == 0 && nonEmpty {
		return nil, "", fmt.Errorf("TimeMap: not a link-format list: %v", perr)
	}
	if perr != nil || bad > 0 {
		a.log.Warn("aggregate: TimeMap entries skipped", "archive", up.cfg.Name, "unreadable", bad, "err", perr)
	}
	next := ""
	hl, _ := ParseLinks(strings.Join(resp.Header.Values("Link"), ", "))
	for _, l := range hl {
		if l.HasRel("next") {
			if u, err := url.Parse(l.Target); err == nil {
				if u = resp.Request.URL.ResolveReference(u); up.allowed(u) && u.String() != target {
					next = u.String()
				}
			}
			break
		}
	}
	return ms, next, nil
}

// ttlKey carries, through an ask's context, how long its answer may be
// cached: each TimeMap page's Cache-Control lowers it.
type ttlKey struct{}

func withTTL(ctx context.Context, ttl *time.Duration) context.Context {
	return context.WithValue(ctx, ttlKey{}, ttl)
}

// noCacheKey marks a request whose client asked for a fresh answer
// (Cache-Control: no-cache).
type noCacheKey struct{}

// WithoutCache returns a context whose lookups ask the archives even
// when the cache holds their answers (a client's Cache-Control: no-cache).
func WithoutCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, noCacheKey{}, true)
}

func noCache(ctx context.Context) bool { v, _ := ctx.Value(noCacheKey{}).(bool); return v }

// timeMapChunk is how much of a TimeMap is parsed at once: the body is
// read a chunk at a time (cut where a line ends an entry with ","), so a
// TimeMap costs the mementos it lists, not its bytes several times over.
const timeMapChunk = 256 << 10

// readTimeMap reads a link-format TimeMap from resp, streamed, up to
// max_timemap_bytes: the mementos, the links read, the entries skipped,
// whether the body held anything but white space, the first parse
// problem.
func (a *Aggregator) readTimeMap(resp *http.Response, up *upstream) (ms []Memento, nlinks, bad int, nonEmpty bool, perr, err error) {
	br := bufio.NewReaderSize(io.LimitReader(resp.Body, a.cfg.MaxTimeMapBytes+1), 64<<10)
	var chunk []byte
	var total int64
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		if !nonEmpty && len(bytes.TrimSpace(chunk)) > 0 {
			nonEmpty = true
		}
		links, pe := ParseLinks(string(chunk))
		if pe != nil && perr == nil {
			perr = pe
		}
		m, b := mementos(links, resp.Request.URL, up.cfg.Name)
		ms, nlinks, bad = append(ms, m...), nlinks+len(links), bad+b
		chunk = chunk[:0]
	}
	for {
		line, rerr := br.ReadSlice('\n')
		total += int64(len(line))
		if total > a.cfg.MaxTimeMapBytes {
			return nil, 0, 0, false, nil, fmt.Errorf("TimeMap larger than %d bytes (max_timemap_bytes)", a.cfg.MaxTimeMapBytes)
		}
		chunk = append(chunk, line...)
		if rerr == bufio.ErrBufferFull {
			continue // a long line: keep reading it
		}
		if rerr != nil && rerr != io.EOF {
			return nil, 0, 0, false, nil, fmt.Errorf("TimeMap: read: %w", rerr)
		}
		if rerr == io.EOF {
			flush()
			return ms, nlinks, bad, nonEmpty, perr, nil
		}
		if len(chunk) >= timeMapChunk && bytes.HasSuffix(bytes.TrimRight(chunk, " \t\r\n"), []byte(",")) {
			flush()
		}
	}
}

// get issues one GET to an archive, refusing any URL outside its hosts (a
// URI-R cannot steer it elsewhere), with its token when it has one.
func (a *Aggregator) get(ctx context.Context, up *upstream, target string, hdr http.Header, follow bool) (*http.Response, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("request URL: %v", err)
	}
	if !up.allowed(u) {
		return nil, fmt.Errorf("refusing %s: outside archive %s", origin(u), up.cfg.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header = hdr
	req.Header.Set("User-Agent", a.cfg.UserAgent)
	if up.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+up.cfg.Token)
	}
	c := up.noFollow
	if follow {
		c = up.follow
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry a token
		}
		return nil, err
	}
	a.noteMapLink(up, resp)
	return resp, nil
}

// Stats returns each archive's counters.
func (a *Aggregator) Stats() Stats {
	st := Stats{DeadlineSeconds: a.cfg.Deadline.Seconds(), Lookups: a.lookups.Load(), Partial: a.partial.Load()}
	ms := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return math.Min(v, latencyBounds[len(latencyBounds)-1]) * 1000
	}
	for _, up := range a.ups {
		s := &up.stats
		ar := ArchiveStats{Name: up.cfg.Name,
			MapFetches: s.mapFetches.Load(), MapFailures: s.mapFailures.Load(),
			Requests: s.requests.Load(), Avoided: s.avoided.Load(), Hits: s.hits.Load(), Misses: s.misses.Load(),
			Errors: s.errors.Load(), Timeouts: s.timeouts.Load(),
		}
		lat := latencyOf(s.latency)
		ar.LatencyP50Ms, ar.LatencyP99Ms = ms(lat.quantile(0.5)), ms(lat.quantile(0.99))
		if lat.count > 0 {
			ar.LatencyMeanMs = lat.sum / float64(lat.count) * 1000
		}
		var u string
		ar.MapState, u, ar.MapLines, ar.MapFetchedAt, ar.MapError = up.amap.status()
		ar.MapURL = redact(u)
		st.Archives = append(st.Archives, ar)
	}
	return st
}
