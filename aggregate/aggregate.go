package aggregate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
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
	if err := os.MkdirAll(cfg.SpillDir, 0o700); err != nil {
		return nil, fmt.Errorf("aggregate: spill directory: %w", err)
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
	URIR string
	// Mementos is the merged TimeMap, filled by TimeMap and TimeGate (the
	// whole answer in memory: for library callers and evaluation); the
	// HTTP routes (Serve) stream it from disk instead and leave it nil.
	Mementos []Memento
	// Count is the number of merged mementos.
	Count    int
	Archives []Outcome

	merged *merger
	run    run
	first  Memento
	last   Memento
}

// close releases the merged run's files.
func (r *Result) close() {
	if r.merged != nil {
		r.merged.close()
		r.merged = nil
	}
}

// each calls fn with each merged memento, oldest first.
func (r *Result) each(fn func(Memento) error) error {
	if r.merged == nil || r.Count == 0 {
		for _, m := range r.Mementos {
			if err := fn(m); err != nil {
				return err
			}
		}
		return nil
	}
	return r.merged.each([]run{r.run}, fn)
}

// materialize reads the merged mementos into Mementos and releases the
// files.
func (r *Result) materialize() error {
	defer r.close()
	if r.merged == nil {
		return nil
	}
	ms := make([]Memento, 0, r.Count)
	err := r.each(func(m Memento) error { ms = append(ms, m); return nil })
	r.Mementos = ms
	return err
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
// The answer is held in memory (Result.Mementos); Serve streams it.
func (a *Aggregator) TimeMap(ctx context.Context, uriR string) (*Result, error) {
	res, err := a.aggregate(ctx, uriR, nil)
	if err != nil {
		return nil, err
	}
	return res, res.materialize()
}

// TimeGate returns the mementos of uriR near at: each asked archive's
// TimeGate answer (its closest memento and the first, previous, next and
// last it links), or its TimeMap when it has no TimeGate. Closest picks
// the answer from them.
func (a *Aggregator) TimeGate(ctx context.Context, uriR string, at time.Time) (*Result, error) {
	res, err := a.aggregate(ctx, uriR, &at)
	if err != nil {
		return nil, err
	}
	return res, res.materialize()
}

// aggregate asks the archives and merges their answers into a sorted run
// on disk (see spill.go): the caller releases it with res.close.
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
		sp *spill
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
			sp, err := newSpill(a.cfg.SpillDir, uint16(i), a.cacheEntryMax())
			if err != nil {
				ch <- answer{i: i, o: Outcome{Archive: up.cfg.Name, Asked: true, Error: err.Error()}}
				return
			}
			cached, err := a.ask(ctx, up, uriR, at, sp)
			if ferr := sp.finish(); ferr != nil && err == nil {
				err = ferr
			}
			if cached {
				up.stats.cached.Add(1)
				ch <- answer{i: i, sp: sp, o: Outcome{Archive: up.cfg.Name, Asked: true, Cached: true, Mementos: sp.count}}
				return
			}
			ch <- answer{i: i, sp: sp, o: a.account(up, sp.count, err, time.Since(start))}
		}()
	}
	// Every ask ends by the deadline (its context's); the answer does not
	// wait for a straggler past it (it is counted when it ends, and its
	// spill file closed).
	deadline := time.NewTimer(a.cfg.Deadline + 50*time.Millisecond)
	defer deadline.Stop()
	got := make([]bool, len(a.ups))
	var spills []*spill
	defer func() {
		for _, sp := range spills {
			sp.close()
		}
	}()
collect:
	for pending > 0 {
		select {
		case ans := <-ch:
			pending--
			got[ans.i] = true
			res.Archives[ans.i] = ans.o
			if ans.sp != nil {
				spills = append(spills, ans.sp)
			}
		case <-deadline.C:
			break collect
		}
	}
	if pending > 0 {
		go func(n int) {
			for range n {
				if ans := <-ch; ans.sp != nil {
					ans.sp.close()
				}
			}
		}(pending)
	}
	for i := range a.ups {
		if asked[i] && !got[i] {
			o := &res.Archives[i]
			o.Asked, o.Timeout, o.Error = true, true, fmt.Sprintf("no answer within the deadline (%v)", a.cfg.Deadline)
		}
	}
	if err := a.merge(res, spills); err != nil {
		res.close()
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	if res.Partial() {
		a.partial.Add(1)
	}
	return res, nil
}

// cacheEntryMax is the most mementos one archive's answer may list to be
// cached (an eighth of the cache's bound, at most 10,000): larger answers
// are not kept, so an answer being read holds at most this many for the
// cache whatever the archive sends.
func (a *Aggregator) cacheEntryMax() int {
	if a.cache == nil {
		return 0
	}
	return max(1, min(a.cfg.CacheMementos/8, 10_000))
}

// account records an archive's answer in its statistics.
func (a *Aggregator) account(up *upstream, n int, err error, d time.Duration) Outcome {
	st := &up.stats
	st.requests.Add(1)
	st.latency.Observe(d.Seconds())
	o := Outcome{Archive: up.cfg.Name, Asked: true, Mementos: n, Duration: d}
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
	case n > 0:
		st.hits.Add(1)
	default:
		st.misses.Add(1)
	}
	return o
}

// merge merges the archives' runs into one sorted by time (then archive
// priority and order, then URI-M), a URI-M repeated at the same datetime
// kept once, in a file res then reads from.
func (a *Aggregator) merge(res *Result, spills []*spill) error {
	mg := &merger{dir: a.cfg.SpillDir, names: make([]string, len(a.ups)), ranks: make([]int, len(a.ups))}
	for i, up := range a.ups {
		mg.names[i] = up.cfg.Name
		mg.ranks[i] = -up.cfg.Priority*1_000_000 + up.order
	}
	var runs []run
	for _, sp := range spills {
		if sp.err != nil {
			continue // its error is in its outcome
		}
		for _, seg := range sp.runs {
			if seg.end > seg.start {
				runs = append(runs, run{f: sp.f, seg: seg})
			}
		}
	}
	res.merged = mg
	if len(runs) == 0 {
		return nil
	}
	var err error
	res.run, res.Count, res.first, res.last, err = mg.mergeAll(runs)
	return err
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

// ask fetches the archive's mementos of uriR into sp: its TimeMap (all
// pages, up to MaxPages), or for a TimeGate request its TimeGate's Link
// header when it has one. cached reports an answer from the cache.
func (a *Aggregator) ask(ctx context.Context, up *upstream, uriR string, at *time.Time, sp *spill) (cached bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, up.cfg.Timeout)
	defer cancel()
	ckey := up.cfg.Name + "\x00" + uriR
	if at == nil && !noCache(ctx) {
		if ms, ok := a.cache.get(ckey, time.Now()); ok {
			for _, m := range ms {
				sp.add(m)
			}
			return true, nil
		}
	}
	ttl := a.cfg.CacheTTL
	// The archive's tokens never reach an answer (nor the cache).
	emit := func(m Memento) {
		if u, ok := up.redactToken(m.URI); ok {
			m.URI = u
			sp.add(m)
		}
	}
	err = a.askOnce(withTTL(ctx, &ttl), up, uriR, at, sp, emit)
	if err != nil && ctx.Err() != nil {
		err = ctx.Err() // the deadline, a timeout, or the client gone
	}
	if err == nil && at == nil && sp.keep != nil {
		a.cache.put(ckey, sp.keep, ttl, time.Now())
	}
	return false, err
}

func (a *Aggregator) askOnce(ctx context.Context, up *upstream, uriR string, at *time.Time, sp *spill, emit func(Memento)) error {
	if at != nil && up.cfg.TimeGate != "" {
		hdr := http.Header{}
		hdr.Set("Accept-Datetime", at.UTC().Format(http.TimeFormat))
		resp, err := a.get(ctx, up, up.cfg.TimeGate+uriR, hdr, false)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		switch {
		case resp.StatusCode == http.StatusNotFound:
			return nil
		case resp.StatusCode >= 400:
			return fmt.Errorf("TimeGate: HTTP %d", resp.StatusCode)
		}
		links, perr := ParseLinks(strings.Join(resp.Header.Values("Link"), ", "))
		ms, _ := mementos(links, resp.Request.URL, up.cfg.Name)
		if len(ms) == 0 {
			if perr != nil {
				return fmt.Errorf("TimeGate: HTTP %d with an unreadable Link header: %v", resp.StatusCode, perr)
			}
			return fmt.Errorf("TimeGate: HTTP %d without memento links", resp.StatusCode)
		}
		for _, m := range ms {
			emit(m)
		}
		return nil
	}
	next := up.cfg.TimeMap + uriR
	for page := 0; next != "" && page < a.cfg.MaxPages; page++ {
		mk := sp.mark()
		n, err := a.timeMapPage(ctx, up, next, emit)
		if err == nil {
			err = sp.err
		}
		if err != nil {
			// A page that failed is dropped whole; earlier pages stay.
			sp.rollback(mk)
			if page > 0 && sp.count > 0 {
				return fmt.Errorf("TimeMap page %d: %w", page+1, err)
			}
			return err
		}
		next = n
	}
	return nil
}

// timeMapPage fetches one TimeMap page, gives each memento to emit, and
// returns the next page's URL (Link: rel="next", on the archive's hosts
// only).
func (a *Aggregator) timeMapPage(ctx context.Context, up *upstream, target string, emit func(Memento)) (string, error) {
	hdr := http.Header{}
	hdr.Set("Accept", "application/link-format")
	resp, err := a.get(ctx, up, target, hdr, true)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return "", nil
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("TimeMap: HTTP %d", resp.StatusCode)
	}
	if ttl, ok := ctx.Value(ttlKey{}).(*time.Duration); ok {
		*ttl = min(*ttl, freshFor(resp.Header, *ttl))
	}
	bad, perr, err := a.readTimeMap(resp, up, emit)
	if err != nil {
		return "", err
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
	return next, nil
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
// TimeMap costs a chunk and its parse, not its bytes.
const timeMapChunk = 256 << 10

// readTimeMap reads a TimeMap from resp, streamed, up to
// max_timemap_bytes, giving each memento to emit: link format, or
// MemGator's CDXJ TimeMap (application/cdxj+ors, or a body whose first
// line starts with "!context"). It returns the entries skipped and the
// first parse problem; a body with something but no entry is an error.
func (a *Aggregator) readTimeMap(resp *http.Response, up *upstream, emit func(Memento)) (bad int, perr, err error) {
	var nlinks int
	var nonEmpty bool
	br := bufio.NewReaderSize(io.LimitReader(resp.Body, a.cfg.MaxTimeMapBytes+1), 64<<10)
	cdxj := strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "application/cdxj")
	if head, _ := br.Peek(9); string(head) == "!context " {
		cdxj = true
	}
	var chunk []byte
	var total int64
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		if !nonEmpty && len(bytes.TrimSpace(chunk)) > 0 {
			nonEmpty = true
		}
		var ms []Memento
		var n, b int
		var pe error
		if cdxj {
			ms, n, b, pe = cdxjMementos(chunk, resp.Request.URL, up.cfg.Name)
		} else if fm, fn, fb, ok := fastMementos(chunk, resp.Request.URL, up.cfg.Name); ok {
			ms, n, b = fm, fn, fb
		} else {
			var links []Link
			links, pe = ParseLinks(string(chunk))
			n = len(links)
			ms, b = mementos(links, resp.Request.URL, up.cfg.Name)
		}
		if pe != nil && perr == nil {
			perr = pe
		}
		for _, m := range ms {
			emit(m)
		}
		nlinks, bad = nlinks+n, bad+b
		chunk = chunk[:0]
	}
	for {
		line, rerr := br.ReadSlice('\n')
		total += int64(len(line))
		if total > a.cfg.MaxTimeMapBytes {
			return 0, nil, fmt.Errorf("TimeMap larger than %d bytes (max_timemap_bytes)", a.cfg.MaxTimeMapBytes)
		}
		chunk = append(chunk, line...)
		if rerr == bufio.ErrBufferFull {
			continue // a long line: keep reading it
		}
		if rerr != nil && rerr != io.EOF {
			return 0, nil, fmt.Errorf("TimeMap: read: %w", rerr)
		}
		if rerr == io.EOF {
			flush()
			if nlinks == 0 && nonEmpty {
				if cdxj {
					return 0, nil, fmt.Errorf("TimeMap: not a CDXJ TimeMap: %v", perr)
				}
				return 0, nil, fmt.Errorf("TimeMap: not a link-format list: %v", perr)
			}
			return bad, perr, nil
		}
		if len(chunk) >= timeMapChunk && (cdxj || bytes.HasSuffix(bytes.TrimRight(chunk, " \t\r\n"), []byte(","))) {
			flush()
		}
	}
}

// cdxjMementos reads the lines of a CDXJ TimeMap (MemGator's: "!" header
// lines, then `YYYYMMDDhhmmss {"uri": …, "rel": …, "datetime": …}`): the
// mementos (URIs resolved against base), the lines that were entries,
// the entries skipped, the first problem.
func cdxjMementos(chunk []byte, base *url.URL, archive string) (out []Memento, n, bad int, perr error) {
	for len(chunk) > 0 {
		var line []byte
		line, chunk, _ = bytes.Cut(chunk, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		n++
		if line[0] == '!' {
			continue
		}
		ts, js, _ := bytes.Cut(line, []byte(" "))
		var e struct {
			URI      string `json:"uri"`
			Rel      string `json:"rel"`
			Datetime string `json:"datetime"`
		}
		if err := json.Unmarshal(js, &e); err != nil {
			bad++
			if perr == nil {
				perr = fmt.Errorf("CDXJ TimeMap line %q: %v", truncate(line, 80), err)
			}
			continue
		}
		if e.Rel != "" && !(Link{Params: map[string]string{"rel": e.Rel}}).HasRel("memento") {
			continue
		}
		t, err := replay.ParseTimestamp(string(ts), false)
		if e.Datetime != "" {
			t, err = http.ParseTime(e.Datetime)
		}
		u, uerr := url.Parse(e.URI)
		if err != nil || uerr != nil || e.URI == "" {
			bad++
			continue
		}
		if base != nil {
			u = base.ResolveReference(u)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			bad++
			continue
		}
		out = append(out, Memento{URI: u.String(), Datetime: t.UTC(), Archive: archive})
	}
	return out, n, bad, perr
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
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
