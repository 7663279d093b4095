package fixity

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sync"

	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/fixity/merkle"
)

// maxRawHops bounds the redirects a raw fetch follows.
const maxRawHops = 10

// rawFetcher fetches raw (id_) counterparts, four at a time, each URL once.
// Fetches start while the page is still settling, so they overlap the
// quiet period instead of adding to the replay time.
type rawFetcher struct {
	r      *Replayer
	ctx    context.Context
	client *http.Client // the replayer's, or the evidence recorder's
	sem    chan struct{}
	mu     sync.Mutex
	m      map[string]*rawEntry
}

type rawEntry struct {
	done chan struct{}
	resp *Response
}

func newRawFetcher(ctx context.Context, r *Replayer, ev *evidenceSet) *rawFetcher {
	f := &rawFetcher{r: r, ctx: ctx, client: r.client, sem: make(chan struct{}, 4), m: map[string]*rawEntry{}}
	if ev != nil {
		f.client = ev.client
	}
	return f
}

// wait returns once every fetch started has ended (nil f: at once).
func (f *rawFetcher) wait() {
	if f == nil {
		return
	}
	f.mu.Lock()
	es := make([]*rawEntry, 0, len(f.m))
	for _, e := range f.m {
		es = append(es, e)
	}
	f.mu.Unlock()
	for _, e := range es {
		<-e.done
	}
}

// start begins fetching the raw counterpart of the memento URL u.
func (f *rawFetcher) start(u string) *rawEntry {
	pm, ok := ParseURIM(u)
	if !ok {
		return nil
	}
	raw := pm.WithModifier("id_").String()
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[raw]; ok {
		return e
	}
	e := &rawEntry{done: make(chan struct{})}
	f.m[raw] = e
	go func() {
		defer close(e.done)
		select {
		case f.sem <- struct{}{}:
		case <-f.ctx.Done():
			e.resp = &Response{FinalURL: raw, Outcome: OutcomeFailed, Error: f.ctx.Err().Error(), Body: BodyNone}
			return
		}
		defer func() { <-f.sem }()
		e.resp = f.r.rawFetch(f.ctx, f.client, raw)
	}()
	return e
}

// get returns the raw response for u, fetching it if not started yet.
func (f *rawFetcher) get(u string) *Response {
	e := f.start(u)
	if e == nil {
		return nil
	}
	<-e.done
	c := *e.resp
	c.Redirects = append([]Hop(nil), e.resp.Redirects...)
	c.Headers = append([]Header(nil), e.resp.Headers...)
	return &c
}

// fetchRaws attaches the raw counterpart of every included memento resource.
func (r *Replayer) fetchRaws(f *rawFetcher, m *Manifest) {
	var wg sync.WaitGroup
	for i := range m.Resources {
		res := &m.Resources[i]
		if !res.Included() || res.URIM == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.Raw = f.get(res.URL)
		}()
	}
	wg.Wait()
}

// rawFetch GETs u, following redirects that stay on configured archive
// hosts, and hashes the whole body as served. It asks caches along the way
// not to answer (guideline 6) and sends no Accept-Encoding.
func (r *Replayer) rawFetch(ctx context.Context, client *http.Client, u string) *Response {
	p := &Response{}
	ctx, cancel := context.WithTimeout(ctx, r.opts.RawTimeout)
	defer cancel()
	for hop := 0; ; hop++ {
		p.FinalURL = u
		p.FinalURIM, _ = r.cfg.Canonical(u)
		if !r.allowed(u) {
			p.Outcome, p.Error, p.Body = OutcomeBlocked, "raw fetch outside the archive list: "+u, BodyNone
			return p
		}
		var res crawl.Result
		req, err := http.NewRequestWithContext(crawl.WithResult(ctx, &res), http.MethodGet, u, nil)
		if err != nil {
			p.Outcome, p.Error, p.Body = OutcomeFailed, err.Error(), BodyNone
			return p
		}
		req.Header.Set("Cache-Control", "no-cache")
		req.Header.Set("Pragma", "no-cache")
		resp, err := client.Do(req)
		if err != nil {
			p.Outcome, p.Error, p.Body = OutcomeFailed, err.Error(), BodyNone
			if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
				p.Outcome = OutcomeTimeout
			}
			return p
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" && hop < maxRawHops {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			next, err := resp.Request.URL.Parse(loc)
			if err != nil {
				p.Outcome, p.Error, p.Body = OutcomeFailed, fmt.Sprintf("bad Location %q: %v", loc, err), BodyNone
				return p
			}
			p.Redirects = append(p.Redirects, Hop{Status: resp.StatusCode, URIM: p.FinalURIM, URL: u,
				Headers: r.cfg.selectHeaders(u, goHeaders(resp.Header))})
			u = next.String()
			continue
		}
		p.Outcome, p.Status = OutcomeOK, resp.StatusCode
		p.MIME = resp.Header.Get("Content-Type")
		p.Headers = r.cfg.selectHeaders(u, goHeaders(resp.Header))
		p.Cache = cacheSignalsHTTP(resp.Header)
		if len(res.Captures) > 0 {
			p.Evidence = &RecordRef{Offset: res.Captures[0].Offset, Length: res.Captures[0].Length}
		}
		h := sha256.New()
		var w io.Writer = h
		var peek *limitBuffer
		if isText(p.MIME) {
			peek = &limitBuffer{max: 4 << 20}
			w = io.MultiWriter(h, peek)
		}
		n, err := io.Copy(w, resp.Body)
		resp.Body.Close()
		if peek != nil && rewrittenRef().Match(peek.b) {
			p.Suspect = "the raw body holds rewritten URI-Ms (/<14-digit timestamp>/http...): the archive may not serve raw bytes for id_"
		}
		switch {
		case err != nil:
			p.Outcome, p.Error, p.Body = OutcomeFailed, "reading body: "+err.Error(), BodyNone
			if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
				p.Outcome = OutcomeTimeout
			}
		case hasEntity(p.Status):
			p.Body, p.BodyLength = BodyHashed, n
			var sum merkle.Hash
			h.Sum(sum[:0])
			p.BodyHash = sum
		default:
			p.Body = BodyNone
		}
		return p
	}
}

// goHeaders iterates over a Go header map, one call per value.
func goHeaders(h http.Header) func(func(name, value string)) {
	return func(f func(string, string)) {
		for k, vs := range h {
			for _, v := range vs {
				f(k, v)
			}
		}
	}
}

func isTimeout(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Timeout()
	}
	return false
}

// rewrittenRef matches a URI-M path inside a body: the mark of a rewritten,
// not raw, memento.
var rewrittenRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/[0-9]{14}([a-z]{2}_)?/https?:/`) })

// limitBuffer keeps the first max bytes written to it.
type limitBuffer struct {
	b   []byte
	max int
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
