package sidecar

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
)

// The CDX endpoint answers the queries of Heritrix's WbmPersistLoadProcessor,
// Zeno/IA gowarc and warcprox's --cdxserver-dedup from the index of original
// captures (Index.ByURL): never a revisit. Default lines are the IA 7-field
// form "urlkey timestamp original mimetype statuscode digest length" with the
// digest as upper-case Base32 without a label; the /hex/ path prefix answers
// lower-case hex digests (warcprox without --base32).

func (s *Server) addCDXRoutes() {
	for _, p := range []string{api.PathCDX, api.PathTimemapCDX} {
		s.add(&route{name: "cdx", method: "GET", path: p, cdx: true, h: s.handleCDXQuery})
		s.add(&route{name: "cdx_add", method: "POST", path: p, maxBody: s.cfg.Limits.MaxCDXPostBytes, h: s.handleCDXAdd})
	}
}

// cdxDefaultPageSize is the rows of a page when a query gives page but
// not pageSize.
const cdxDefaultPageSize = 1000

var cdxDefaultFields = []string{"urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"}

var cdxFieldNames = map[string]bool{
	"urlkey": true, "timestamp": true, "original": true, "mimetype": true, "statuscode": true,
	"digest": true, "length": true, "offset": true, "filename": true, "redirect": true, "robotflags": true,
}

// cdxFieldAlias maps short and OutbackCDX names to IA names.
var cdxFieldAlias = map[string]string{
	"mime": "mimetype", "status": "statuscode", "url": "original", "key": "urlkey", "file": "filename",
	"datetime": "timestamp",
}

type cdxFilter struct {
	field    string
	negate   bool
	contains string
	re       *regexp.Regexp
}

func (f cdxFilter) match(v string) bool {
	var m bool
	if f.re != nil {
		m = f.re.MatchString(v)
	} else {
		m = strings.Contains(v, f.contains)
	}
	return m != f.negate
}

func parseCDXFilter(spec string) (cdxFilter, error) {
	var f cdxFilter
	s := spec
	if strings.HasPrefix(s, "!") {
		f.negate = true
		s = s[1:]
	}
	contains := false
	if strings.HasPrefix(s, "~") {
		contains = true
		s = s[1:]
	}
	field, pat, ok := strings.Cut(s, ":")
	if !ok || field == "" {
		return f, errorf(http.StatusBadRequest, "filter %q: want [!][~]field:regex", spec)
	}
	if a, ok := cdxFieldAlias[field]; ok {
		field = a
	}
	if !cdxFieldNames[field] {
		return f, errorf(http.StatusBadRequest, "filter %q: unknown field %q", spec, field)
	}
	f.field = field
	if contains {
		f.contains = pat
		return f, nil
	}
	re, err := regexp.Compile("^(?:" + pat + ")$")
	if err != nil {
		return f, errorf(http.StatusBadRequest, "filter %q: %v", spec, err)
	}
	f.re = re
	return f, nil
}

type cdxQuery struct {
	url      string
	scope    string
	fields   []string
	filters  []cdxFilter
	limit    int
	hasLimit bool
	// page (0-based) of pageSize rows, when paged: a page past the last
	// is an empty answer, never the first page again.
	page, pageSize int
	paged          bool
	reverse        bool
	from, to       string
	json           bool
	gzip           bool
	hex            bool
}

func (s *Server) parseCDXQuery(r *http.Request, ri *reqInfo) (cdxQuery, error) {
	q := r.URL.Query()
	cq := cdxQuery{url: q.Get("url"), scope: q.Get("scope"), fields: cdxDefaultFields, hex: ri.hexDigest, gzip: true}
	if cq.url == "" {
		return cq, errorf(http.StatusBadRequest, "url: missing (GET %s?url=<uri>&limit=-1)", r.URL.Path)
	}
	if cq.scope == "" {
		cq.scope = s.cfg.CDX.Scope
	}
	switch mt := q.Get("matchType"); mt {
	case "", "exact":
	default:
		return cq, errorf(http.StatusBadRequest, "matchType %q: only exact is supported", mt)
	}
	if strings.HasSuffix(cq.url, "*") {
		return cq, errorf(http.StatusBadRequest, "url %q: wildcard queries are not supported (matchType=exact only)", cq.url)
	}
	if fl := q.Get("fl"); fl != "" {
		cq.fields = nil
		for _, f := range strings.Split(fl, ",") {
			f = strings.TrimSpace(f)
			if a, ok := cdxFieldAlias[f]; ok {
				f = a
			}
			if !cdxFieldNames[f] {
				return cq, errorf(http.StatusBadRequest, "fl: unknown field %q", f)
			}
			cq.fields = append(cq.fields, f)
		}
	}
	for _, spec := range q["filter"] {
		f, err := parseCDXFilter(spec)
		if err != nil {
			return cq, err
		}
		cq.filters = append(cq.filters, f)
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return cq, errorf(http.StatusBadRequest, "limit %q: not an integer", l)
		}
		cq.limit, cq.hasLimit = n, n != 0
	}
	if p, ps := q.Get("page"), q.Get("pageSize"); p != "" || ps != "" {
		cq.paged, cq.pageSize = true, cdxDefaultPageSize
		if p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 {
				return cq, errorf(http.StatusBadRequest, "page %q: want 0 or more", p)
			}
			cq.page = n
		}
		if ps != "" {
			n, err := strconv.Atoi(ps)
			if err != nil || n < 1 {
				return cq, errorf(http.StatusBadRequest, "pageSize %q: want a positive integer", ps)
			}
			cq.pageSize = n
		}
	}
	switch so := q.Get("sort"); so {
	case "", "regular", "asc":
	case "reverse", "desc":
		cq.reverse = true
	default:
		return cq, errorf(http.StatusBadRequest, "sort %q: use reverse or leave it out", so)
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"from", &cq.from}, {"to", &cq.to}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		if len(v) > 14 || strings.Trim(v, "0123456789") != "" {
			return cq, errorf(http.StatusBadRequest, "%s %q: want 1 to 14 digits (yyyyMMddhhmmss prefix)", p.name, v)
		}
		*p.dst = v
	}
	switch o := q.Get("output"); o {
	case "", "cdx", "text":
	case "json":
		cq.json = true
	default:
		return cq, errorf(http.StatusBadRequest, "output %q: use json or leave it out", o)
	}
	if q.Get("gzip") == "false" {
		cq.gzip = false
	}
	return cq, nil
}

// cdxRow is one original rendered as CDX fields.
type cdxRow map[string]string

func cdxRowOf(o dedupindex.Original, hexDigest bool) cdxRow {
	row := cdxRow{
		"urlkey":     dedupindex.URLKey(o.TargetURI),
		"timestamp":  o.Date.UTC().Format("20060102150405"),
		"original":   cdxSafe(o.TargetURI),
		"mimetype":   dashIfEmpty(cdxSafe(o.MIME)),
		"statuscode": "-",
		"digest":     "-",
		"length":     strconv.FormatInt(o.Length, 10),
		"offset":     strconv.FormatInt(o.Offset, 10),
		"filename":   dashIfEmpty(cdxSafe(o.File)),
		"redirect":   "-",
		"robotflags": "-",
	}
	row["urlkey"] = dashIfEmpty(cdxSafe(row["urlkey"]))
	if o.Status > 0 {
		row["statuscode"] = strconv.Itoa(o.Status)
	}
	if d, err := digest.Parse(o.Digest); err == nil {
		if hexDigest {
			row["digest"] = d.Hex()
		} else {
			row["digest"] = d.Base32()
		}
	}
	return row
}

// cdxSafe keeps a field on one line and one token: CDX clients split on
// spaces and newlines.
func cdxSafe(s string) string {
	if !strings.ContainsAny(s, " \t\r\n") {
		return s
	}
	return strings.NewReplacer(" ", "%20", "\t", "%09", "\r", "%0D", "\n", "%0A").Replace(s)
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s *Server) handleCDXQuery(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	cq, err := s.parseCDXQuery(r, ri)
	if err != nil {
		return err
	}
	origs, err := s.idx.ByURL(r.Context(), cq.scope, dedupindex.URLKey(cq.url))
	if err != nil {
		return err
	}
	s.metrics.CDXQueries.Add(1)
	// ByURL is oldest first; keep it so even if a backend is not.
	sort.SliceStable(origs, func(i, j int) bool { return origs[i].Date.Before(origs[j].Date) })
	rows := make([]cdxRow, 0, len(origs))
	seen := make(map[string]bool, len(origs))
	for _, o := range origs {
		// Ingest files an original under its digest-only and its same-URL
		// key: answer each record once.
		id := o.RecordID
		if id == "" {
			id = fmt.Sprintf("%s %d %s", o.File, o.Offset, o.Date)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		row := cdxRowOf(o, cq.hex)
		ts := row["timestamp"]
		if cq.from != "" && ts[:len(cq.from)] < cq.from {
			continue
		}
		if cq.to != "" && ts[:len(cq.to)] > cq.to {
			continue
		}
		ok := true
		for _, f := range cq.filters {
			if !f.match(row[f.field]) {
				ok = false
				break
			}
		}
		if ok {
			rows = append(rows, row)
		}
	}
	if cq.reverse {
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
	}
	if cq.paged {
		start := min(len(rows), cq.page*cq.pageSize)
		rows = rows[start:min(len(rows), start+cq.pageSize)]
	}
	if cq.hasLimit {
		if cq.limit > 0 && cq.limit < len(rows) {
			rows = rows[:cq.limit]
		} else if cq.limit < 0 && -cq.limit < len(rows) {
			rows = rows[len(rows)+cq.limit:]
		}
	}
	if max := s.cfg.CDX.MaxResults; max > 0 && len(rows) > max {
		rows = rows[:max]
	}
	if len(rows) > 0 {
		s.metrics.CDXHits.Add(1)
	}
	var body bytes.Buffer
	if cq.json {
		out := make([][]string, 0, len(rows)+1)
		if len(rows) > 0 {
			out = append(out, cq.fields)
		}
		for _, row := range rows {
			line := make([]string, len(cq.fields))
			for i, f := range cq.fields {
				line[i] = row[f]
			}
			out = append(out, line)
		}
		json.NewEncoder(&body).Encode(out)
		w.Header().Set("Content-Type", "application/json")
	} else {
		for _, row := range rows {
			for i, f := range cq.fields {
				if i > 0 {
					body.WriteByte(' ')
				}
				body.WriteString(row[f])
			}
			body.WriteByte('\n')
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.Header().Set("Vary", "Accept-Encoding")
	// An empty answer (a miss) is sent uncompressed: Heritrix needs a 200
	// with an empty body, and an empty gzip stream trips some decoders.
	if body.Len() > 0 && cq.gzip && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		var zb bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&zb, gzip.BestSpeed)
		zw.Write(body.Bytes())
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		body = zb
	}
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body.Bytes())
	}
	return nil
}
