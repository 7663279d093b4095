package replay

import (
	"bufio"
	"net/http"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/captureindex"
)

// uriM is the URI-M of a capture of uriR at ts in a collection.
func (p *path) uriM(ts, mod, uriR string) string { return p.mementoURL + ts + mod + "/" + uriR }

func (p *path) timegateURL(uriR string) string { return p.collURL + uriR }

func (p *path) timemapURL(format, uriR string) string {
	return p.collURL + "timemap/" + format + "/" + uriR
}

// serveTimeMap answers /<coll>/timemap/<link|json|cdxj>/[<from>/]<URI-R>
// with the mementos of the URI-R, oldest first: in link format as pywb
// writes it (self with from and until, timegate, original, then one
// rel="memento" entry per capture), or as pywb's JSON lines or CDXJ. A
// TimeMap longer than the page size is paged: the next page is linked with
// rel="timemap" (in link format) and in a Link header with rel="next".
func (h *Handler) serveTimeMap(w http.ResponseWriter, r *http.Request, p *path) error {
	key := captureindex.URLKey(p.uriR)
	q := captureindex.Query{Scope: p.coll, Key: key}
	if p.ts != "" {
		from, err := ParseTimestamp(p.ts, false)
		if err != nil {
			return badRequest("timemap page: %v", err)
		}
		q.From = from
	}
	// One page, ending where the second changes so that a page never
	// splits the captures of one second. A first pass finds its bounds
	// (for from, until and the next page), the second streams it: memory
	// does not grow with the page.
	var first, last, next time.Time
	n := 0
	err := h.idx.Times(r.Context(), p.coll, key, q.From, time.Time{}, func(t time.Time) error {
		if !p.chk.Decide(key, t).Visible() {
			return nil
		}
		if n >= h.opts.PageSize && !t.Equal(last) {
			next = t
			return captureindex.ErrStop
		}
		if n == 0 {
			first = t
		}
		last = t
		n++
		return nil
	})
	if err != nil {
		return h.indexError(err)
	}
	if n == 0 {
		hdr := http.Header{}
		hdr.Set("Link", link(p.uriR, "original")+", "+link(p.timegateURL(p.uriR), "timegate"))
		return notFound(hdr, "no mementos of %s in collection %s", p.uriR, p.coll)
	}
	q.To = last
	nextURL := ""
	if !next.IsZero() {
		nextURL = p.collURL + "timemap/" + p.format + "/" + Timestamp(next) + "/" + p.uriR
		w.Header().Set("Link", link(nextURL, "next"))
	}
	w.Header().Set("Content-Type", map[string]string{"link": "application/link-format", "json": "text/x-ndjson", "cdxj": "text/x-cdxj"}[p.format])
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	cw := &cdxWriter{bw: bw, q: &cdxQuery{output: p.format}}
	if p.format == "link" {
		self := p.timemapURL("link", p.uriR)
		if p.ts != "" {
			self = p.collURL + "timemap/link/" + p.ts + "/" + p.uriR
		}
		bw.WriteString(link(self, "self", "type", "application/link-format",
			"from", HTTPDate(first), "until", HTTPDate(last)) + ",\n")
		bw.WriteString(link(p.timegateURL(p.uriR), "timegate") + ",\n")
		bw.WriteString(link(p.uriR, "original") + ",\n")
		if !next.IsZero() {
			bw.WriteString(link(nextURL, "timemap", "type", "application/link-format", "from", HTTPDate(next)) + ",\n")
		}
		cw.prefix = p.mementoURL
	}
	err = h.idx.Scan(r.Context(), q, func(e *captureindex.Entry) error {
		if !p.chk.Entry(e).Visible() {
			return nil
		}
		return cw.write(newRow(e))
	})
	if err != nil {
		abort(h, "timemap", err)
	}
	if p.format == "link" {
		bw.WriteString("\n")
	}
	if err := bw.Flush(); err != nil {
		abort(h, "timemap", err)
	}
	return nil
}

// serveTimeGate answers /<coll>/<URI-R>: a 302 to the memento closest to
// Accept-Datetime (the most recent without it), with Vary:
// accept-datetime and Link entries for the original, the TimeMap and the
// first, previous, chosen, next and last mementos (RFC 7089 §4.1.1).
func (h *Handler) serveTimeGate(w http.ResponseWriter, r *http.Request, p *path) error {
	want := time.Now().UTC()
	if ad := r.Header.Get("Accept-Datetime"); ad != "" {
		t, err := ParseAcceptDatetime(ad)
		if err != nil {
			hdr := http.Header{}
			hdr.Set("Vary", "accept-datetime")
			return &Error{Code: http.StatusBadRequest, Msg: err.Error(), Header: hdr}
		}
		want = t
	}
	ctx := r.Context()
	key := captureindex.URLKey(p.uriR)
	first := func(q captureindex.Query) (*captureindex.Entry, error) {
		var got *captureindex.Entry
		err := h.idx.Scan(ctx, q, func(e *captureindex.Entry) error {
			if !p.chk.Entry(e).Visible() {
				return nil
			}
			got = e
			return captureindex.ErrStop
		})
		return got, h.indexError(err)
	}
	chosen, err := h.closest(ctx, p, want)
	if err != nil {
		return err
	}
	base := []string{link(p.uriR, "original"), link(p.timemapURL("link", p.uriR), "timemap", "type", "application/link-format")}
	if chosen == nil {
		fb, how, err := h.fallback(ctx, p, want)
		if err != nil {
			return err
		}
		if fb != nil {
			w.Header().Set("Vary", "accept-datetime")
			return fellBack(w, r, p, fb, how, p.uriM(fb.Timestamp(), "", fb.URI), base)
		}
		hdr := http.Header{}
		hdr.Set("Vary", "accept-datetime")
		hdr.Set("Link", strings.Join(base, ", "))
		return notFound(hdr, "no mementos of %s in collection %s", p.uriR, p.coll)
	}
	q := captureindex.Query{Scope: p.coll, Key: key}
	firstE, err := first(q)
	if err != nil {
		return err
	}
	q.Reverse = true
	lastE, err := first(q)
	if err != nil {
		return err
	}
	prevQ := captureindex.Query{Scope: p.coll, Key: key, To: chosen.Date.Add(-time.Second), Reverse: true}
	prevE, err := first(prevQ)
	if err != nil {
		return err
	}
	nextQ := captureindex.Query{Scope: p.coll, Key: key, From: chosen.Date.Add(time.Second)}
	nextE, err := first(nextQ)
	if err != nil {
		return err
	}
	w.Header().Set("Link", strings.Join(append(base, navLinks(p, firstE, prevE, chosen, nextE, lastE)...), ", "))
	w.Header().Set("Vary", "accept-datetime")
	loc := p.uriM(chosen.Timestamp(), "", chosen.URI)
	w.Header().Set("Location", loc)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	if r.Method != http.MethodHead {
		w.Write([]byte("Found: " + loc + "\n"))
	}
	return nil
}

// navLinks are the memento entries of a Link header, one per memento with
// the relations it has ("first memento", "prev memento", "memento", ...).
func navLinks(p *path, first, prev, chosen, next, last *captureindex.Entry) []string {
	type nav struct {
		e   *captureindex.Entry
		rel string
	}
	var order []string
	rels := map[string][]string{}
	dates := map[string]time.Time{}
	for _, n := range []nav{{first, "first"}, {prev, "prev"}, {chosen, ""}, {next, "next"}, {last, "last"}} {
		if n.e == nil {
			continue
		}
		u := p.uriM(n.e.Timestamp(), "", n.e.URI)
		if _, ok := rels[u]; !ok {
			order = append(order, u)
			dates[u] = n.e.Date
			rels[u] = nil
		}
		if n.rel != "" {
			rels[u] = append(rels[u], n.rel)
		}
	}
	out := make([]string, 0, len(order))
	for _, u := range order {
		out = append(out, mementoLink(u, strings.Join(append(rels[u], "memento"), " "), dates[u]))
	}
	return out
}
