package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/cdxj"
)

// cdxQuery is a parsed CDX API query.
type cdxQuery struct {
	url      string
	match    string
	q        captureindex.Query
	limit    int // > 0: at most; < 0: the last -limit
	closest  time.Time
	filters  []Filter
	fields   []string // nil: the output's default
	output   string
	page     int
	pageSize int
	numPages bool
}

// defaultTextFields are the fields of output=text without fl: the 11-field
// CDX layout of Wayback, pywb and OutbackCDX.
var defaultTextFields = []string{"urlkey", "timestamp", "url", "mime", "status", "digest", "redirect", "robotflags", "length", "offset", "filename"}

// defaultJSONFields are the fields of output=json without fl, as pywb's
// JSON lines list them.
var defaultJSONFields = []string{"urlkey", "timestamp", "url", "mime", "status", "digest", "length", "offset", "filename"}

// parseCDXQuery reads the CDX API parameters (pywb's, with OutbackCDX's
// aliases): url, matchType (exact, prefix, host, domain; or a wildcard in
// url), from, to, limit, sort (reverse, closest) with closest, filter, fl
// (or fields), output (cdxj, json, text, link), page, pageSize,
// showNumPages.
func (h *Handler) parseCDXQuery(coll string, v url.Values) (*cdxQuery, error) {
	q := &cdxQuery{output: "cdxj", limit: h.opts.MaxResults}
	q.q.Scope = coll
	q.url = v.Get("url")
	if q.url == "" {
		return nil, badRequest("url: missing (GET .../cdx?url=<URI>)")
	}
	q.match = v.Get("matchType")
	if q.match == "" {
		switch {
		case strings.HasPrefix(q.url, "*."):
			q.url, q.match = q.url[2:], "domain"
		case strings.HasSuffix(q.url, "*"):
			q.url, q.match = strings.TrimSuffix(q.url, "*"), "prefix"
		default:
			q.match = "exact"
		}
	}
	if _, err := ParseURIR(q.url); err != nil {
		return nil, badRequest("url: %v", err)
	}
	key := captureindex.URLKey(q.url)
	q.q.Key = key
	switch q.match {
	case "exact":
	case "prefix":
		if strings.HasSuffix(q.url, "/") && !strings.HasSuffix(key, "/") {
			key += "/"
		}
		if strings.HasSuffix(q.url, "?") && !strings.HasSuffix(key, "?") {
			key += "?"
		}
		q.q.Key, q.q.End = key, incLast(key)
	case "host":
		host, _, _ := strings.Cut(key, ")/")
		q.q.Key, q.q.End = host+")/", host+"*"
	case "domain":
		host, _, _ := strings.Cut(key, ")/")
		q.q.Key, q.q.End = host+")/", host+"-"
		if !strings.Contains(host, ",") {
			q.q.Key = host + ","
		}
	default:
		return nil, badRequest("matchType %q: want exact, prefix, host or domain", q.match)
	}
	var err error
	if s := v.Get("from"); s != "" {
		if q.q.From, err = ParseTimestamp(s, false); err != nil {
			return nil, badRequest("from: %v", err)
		}
	}
	if s := v.Get("to"); s != "" {
		if q.q.To, err = ParseTimestamp(s, true); err != nil {
			return nil, badRequest("to: %v", err)
		}
	}
	if !q.q.From.IsZero() && !q.q.To.IsZero() && q.q.To.Before(q.q.From) {
		return nil, badRequest("from %s is after to %s", v.Get("from"), v.Get("to"))
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, badRequest("limit %q: not an integer", s)
		}
		switch {
		case n == 0:
		case n > h.opts.MaxResults:
			q.limit = h.opts.MaxResults
		case n < -maxLastN:
			// The last N are held in memory until the scan ends.
			return nil, badRequest("limit %d: a negative limit (the last N captures) is at most -%d", n, maxLastN)
		case n < -h.opts.MaxResults:
			q.limit = -h.opts.MaxResults
		default:
			q.limit = n
		}
	}
	switch s := v.Get("sort"); s {
	case "", "regular", "asc", "default":
	case "reverse", "desc":
		q.q.Reverse = true
	case "closest":
		// Without closest= it is the default order: pywb's remote index
		// source sends "closest=&sort=closest" for some queries (OutbackCDX
		// answers them the same way).
	default:
		return nil, badRequest("sort %q: want reverse or closest", s)
	}
	if s := v.Get("closest"); s != "" {
		if s == "now" { // pywb's latest replay
			q.closest = time.Now().UTC()
		} else if q.closest, err = ParseTimestamp(s, false); err != nil {
			return nil, badRequest("closest: %v", err)
		}
		if q.match != "exact" {
			return nil, badRequest("closest: only for matchType=exact")
		}
		q.q.Reverse = false
	}
	for _, spec := range v["filter"] {
		f, err := ParseFilter(spec)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		q.filters = append(q.filters, f)
	}
	fl := v.Get("fl")
	if fl == "" {
		fl = v.Get("fields")
	}
	if fl != "" {
		for _, f := range strings.Split(fl, ",") {
			name := FieldName(f)
			if name == "" {
				return nil, badRequest("fl: unknown field %q", strings.TrimSpace(f))
			}
			q.fields = append(q.fields, name)
		}
	}
	switch o := v.Get("output"); o {
	case "", "cdxj":
	case "json", "text", "link":
		q.output = o
	case "cdx":
		q.output = "text"
	default:
		return nil, badRequest("output %q: want cdxj, json, text or link", o)
	}
	q.numPages = v.Get("showNumPages") == "true"
	if s := v.Get("page"); s != "" || q.numPages {
		q.pageSize = h.opts.PageSize
		if ps := v.Get("pageSize"); ps != "" {
			n, err := strconv.Atoi(ps)
			if err != nil || n < 1 {
				return nil, badRequest("pageSize %q: want a positive integer", ps)
			}
			q.pageSize = min(n, h.opts.MaxResults)
		}
		if s != "" {
			if q.page, err = strconv.Atoi(s); err != nil || q.page < 0 {
				return nil, badRequest("page %q: want 0 or more", s)
			}
		}
	}
	return q, nil
}

// incLast returns s with its last byte incremented: the end of the range
// of keys starting with s.
func incLast(s string) string {
	if s == "" {
		return "\xff"
	}
	return s[:len(s)-1] + string(rune(s[len(s)-1]+1))
}

// row gives the CDX fields of one capture.
type row struct {
	e    *captureindex.Entry
	l    cdxj.Line
	done bool
}

func newRow(e *captureindex.Entry) *row { return &row{e: e} }

// line is the capture's CDXJ line, derived once.
func (r *row) line() *cdxj.Line {
	if !r.done {
		r.l, r.done = cdxj.FromCaptureKey(r.e.Capture, r.e.Key), true
	}
	return &r.l
}

func (r *row) field(name string) string {
	l := r.line()
	num := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	switch name {
	case "urlkey":
		return l.Key
	case "timestamp":
		return l.Timestamp
	case "url":
		return l.URL
	case "mime":
		return dash(l.MIME)
	case "status":
		if l.Status > 0 {
			return strconv.Itoa(l.Status)
		}
		return "-"
	case "digest":
		return dash(l.Digest)
	case "length":
		return num(l.Length)
	case "offset":
		return num(l.Offset)
	case "filename":
		return dash(l.Filename)
	case "mime-detected":
		return dash(l.MIMEDetected)
	}
	return "-"
}

// cdxWriter streams the rows of one output format.
type cdxWriter struct {
	bw     *bufio.Writer
	q      *cdxQuery
	h      *Handler
	prefix string // collection URL prefix, for output=link
	buf    []byte
	n      int
}

func (c *cdxWriter) write(r *row) error {
	c.buf = c.buf[:0]
	switch c.q.output {
	case "cdxj":
		if c.q.fields == nil {
			c.buf = r.line().Format(c.buf)
		} else {
			c.buf = append(c.buf, r.line().Key...)
			c.buf = append(c.buf, ' ')
			c.buf = append(c.buf, r.line().Timestamp...)
			c.buf = append(c.buf, ' ')
			c.buf = c.jsonObject(r, c.q.fields, true)
			c.buf = append(c.buf, '\n')
		}
	case "json":
		fields := c.q.fields
		if fields == nil {
			fields = defaultJSONFields
		}
		c.buf = c.jsonObject(r, fields, false)
		c.buf = append(c.buf, '\n')
	case "text":
		fields := c.q.fields
		if fields == nil {
			fields = defaultTextFields
		}
		for i, f := range fields {
			if i > 0 {
				c.buf = append(c.buf, ' ')
			}
			c.buf = append(c.buf, cdxToken(r.field(f))...)
		}
		c.buf = append(c.buf, '\n')
	case "link":
		if c.n > 0 {
			c.buf = append(c.buf, ",\n"...)
		}
		c.buf = append(c.buf, mementoLink(c.prefix+r.e.Timestamp()+"/"+r.e.URI, "memento", r.e.Date)...)
	}
	c.n++
	_, err := c.bw.Write(c.buf)
	return err
}

// jsonObject writes the fields as a JSON object with string values, in
// pywb's form ({"k": "v", ...}); in CDXJ, urlkey and timestamp are left out
// (they lead the line) and so are absent fields.
func (c *cdxWriter) jsonObject(r *row, fields []string, cdxjBlock bool) []byte {
	b := append(c.buf, '{')
	first := true
	for _, f := range fields {
		if cdxjBlock && (f == "urlkey" || f == "timestamp") {
			continue
		}
		v := r.field(f)
		if cdxjBlock && v == "-" {
			continue
		}
		if !first {
			b = append(b, ", "...)
		}
		first = false
		b = cdxj.AppendJSONString(b, f)
		b = append(b, ": "...)
		b = cdxj.AppendJSONString(b, v)
	}
	return append(b, '}')
}

// cdxToken keeps a text field one token: clients split on spaces.
func cdxToken(s string) string {
	if !strings.ContainsAny(s, " \t\r\n") {
		return s
	}
	return strings.NewReplacer(" ", "%20", "\t", "%09", "\r", "%0D", "\n", "%0A").Replace(s)
}

func (r *row) matches(fs []Filter) bool {
	for _, f := range fs {
		if !f.Match(r.field(f.Field)) {
			return false
		}
	}
	return true
}

var cdxContentTypes = map[string]string{
	"cdxj": "text/x-cdxj",
	"json": "text/x-ndjson",
	"text": "text/plain; charset=utf-8",
	"link": "application/link-format",
}

// maxLastN bounds a negative CDX limit (the last N captures), whose rows
// are held in memory: 10,000 rows are a few MB.
const maxLastN = 10000

// serveCDX answers the CDX API: the captures a query selects, streamed (a
// huge result set costs no memory beyond a negative limit's window), an
// empty 200 answer when nothing matches.
func (h *Handler) serveCDX(w http.ResponseWriter, r *http.Request, p *path) error {
	q, err := h.parseCDXQuery(p.coll, r.URL.Query())
	if err != nil {
		return err
	}
	ctx := r.Context()
	if q.numPages {
		n := 0
		err := h.selectRows(ctx, q, p.chk, func(*row) error { n++; return nil })
		if err != nil {
			return err
		}
		pages := (n + q.pageSize - 1) / q.pageSize
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			json.NewEncoder(w).Encode(map[string]int{"pages": pages, "pageSize": q.pageSize, "blocks": n})
		}
		return nil
	}
	w.Header().Set("Content-Type", cdxContentTypes[q.output])
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	cw := &cdxWriter{bw: bw, q: q, h: h, prefix: p.mementoURL}
	started := false
	err = h.selectRows(ctx, q, p.chk, func(rw *row) error {
		started = true
		return cw.write(rw)
	})
	if err != nil {
		if started {
			abort(h, "cdx", err)
		}
		return err
	}
	if q.output == "link" && cw.n > 0 {
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		abort(h, "cdx", err)
	}
	return nil
}

// selectRows calls fn for each row of the query's answer, in order, after
// filters, sorting, limit and paging.
func (h *Handler) selectRows(ctx context.Context, q *cdxQuery, chk *Checker, fn func(*row) error) error {
	skip, take := 0, q.limit
	if q.pageSize > 0 && !q.numPages {
		skip = q.page * q.pageSize
		if take == 0 || take > q.pageSize {
			take = q.pageSize
		}
	}
	if q.numPages {
		take = 0
	}
	emitted, seen := 0, 0
	each := func(e *captureindex.Entry) (*row, bool) {
		if !chk.Entry(e).Visible() {
			return nil, false
		}
		rw := newRow(e)
		if !rw.matches(q.filters) {
			return nil, false
		}
		return rw, true
	}
	visit := func(e *captureindex.Entry) error {
		rw, ok := each(e)
		if !ok {
			return nil
		}
		if seen++; seen <= skip {
			return nil
		}
		if err := fn(rw); err != nil {
			return err
		}
		if emitted++; take > 0 && emitted >= take {
			return captureindex.ErrStop
		}
		return nil
	}
	if take < 0 {
		// The last -take rows, in order: read them from the other end
		// into a window, then emit it reversed.
		n := -take
		var window []*row
		rq := q.q
		rq.Reverse = !rq.Reverse
		err := h.idx.Scan(ctx, rq, func(e *captureindex.Entry) error {
			if rw, ok := each(e); ok {
				window = append(window, rw)
				if len(window) >= n {
					return captureindex.ErrStop
				}
			}
			return nil
		})
		if err != nil {
			return h.indexError(err)
		}
		for i := len(window) - 1; i >= 0; i-- {
			if err := fn(window[i]); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if !q.closest.IsZero() {
		err = h.idx.Closest(ctx, q.q.Scope, q.q.Key, q.closest, func(e *captureindex.Entry) error {
			s := e.Date.Unix()
			if (!q.q.From.IsZero() && s < q.q.From.Unix()) || (!q.q.To.IsZero() && s > q.q.To.Unix()) {
				return nil
			}
			return visit(e)
		})
	} else {
		err = h.idx.Scan(ctx, q.q, visit)
	}
	if err != nil {
		return h.indexError(err)
	}
	return nil
}

// indexError maps an index error: an unknown collection is a 404.
func (h *Handler) indexError(err error) error {
	if errors.Is(err, captureindex.ErrNoScope) {
		return &Error{Code: http.StatusNotFound, Msg: err.Error()}
	}
	return err
}

// abort ends a response whose body is already partly sent: the client must
// see a cut connection, not a complete-looking answer.
func abort(h *Handler, what string, err error) {
	h.log.Warn("replay: response cut short", "route", what, "err", err)
	panic(http.ErrAbortHandler)
}
