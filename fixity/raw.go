package fixity

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/wayside-archive/wayside/fixity/merkle"
)

// maxRawHops bounds the redirects a raw fetch follows.
const maxRawHops = 10

// fetchRaws fetches the raw (id_) counterpart of every included memento
// resource, four at a time.
func (r *Replayer) fetchRaws(ctx context.Context, m *Manifest) {
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range m.Resources {
		res := &m.Resources[i]
		if !res.Included() || res.URIM == "" {
			continue
		}
		pm, ok := ParseURIM(res.URL)
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res.Raw = r.rawFetch(ctx, pm.WithModifier("id_").String())
		}()
	}
	wg.Wait()
}

// rawFetch GETs u, following redirects that stay on configured archive
// hosts, and hashes the whole body.
func (r *Replayer) rawFetch(ctx context.Context, u string) *Response {
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
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			p.Outcome, p.Error, p.Body = OutcomeFailed, err.Error(), BodyNone
			return p
		}
		resp, err := r.client.Do(req)
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
			p.Redirects = append(p.Redirects, Hop{Status: resp.StatusCode, URIM: p.FinalURIM})
			u = next.String()
			continue
		}
		p.Outcome, p.Status = OutcomeOK, resp.StatusCode
		p.MIME = resp.Header.Get("Content-Type")
		p.Headers = r.cfg.selectHeaders(u, func(f func(string, string)) {
			for k, vs := range resp.Header {
				for _, v := range vs {
					f(k, v)
				}
			}
		})
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		resp.Body.Close()
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

func isTimeout(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Timeout()
	}
	return false
}
