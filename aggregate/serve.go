package aggregate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/replay"
)

// Headers of aggregated answers.
const (
	// HeaderPartial is set on an answer some asked archive did not
	// contribute to: "name (reason), ...". The JSON TimeMap says the same
	// in "partial" and "archives".
	HeaderPartial = "X-Aggregate-Partial"
	// HeaderAsked and HeaderAvoided list the archives asked and those
	// whose MementoMap spared the request.
	HeaderAsked   = "X-Aggregate-Asked"
	HeaderAvoided = "X-Aggregate-Avoided"
)

// Serve answers one aggregate route: rest is the escaped request path
// after the routes' root ("timemap/link/<URI-R>", "timemap/json/<URI-R>"
// or "<URI-R>" for the TimeGate), base the absolute URL of that root
// without a trailing slash (for self, timemap and timegate links).
// Errors are *replay.Error (status, message naming the input, headers),
// returned before anything is written.
func (a *Aggregator) Serve(w http.ResponseWriter, r *http.Request, rest, base string) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return &replay.Error{Code: http.StatusMethodNotAllowed, Msg: fmt.Sprintf("method %s: the aggregate routes are read-only (GET, HEAD)", r.Method)}
	}
	format := ""
	var at time.Time // a datetime in the route: /memento/<14 digits>/<URI-R>
	if tm, ok := strings.CutPrefix(rest, "timemap/"); ok {
		f, after, _ := strings.Cut(tm, "/")
		if f != "link" && f != "json" && f != "cdxj" {
			return &replay.Error{Code: http.StatusBadRequest, Msg: fmt.Sprintf("timemap format %q: want link, json or cdxj (…/aggregate/timemap/link/<URI-R>)", f)}
		}
		format, rest = f, after
	} else if m, ok := strings.CutPrefix(rest, "memento/"); ok {
		ts, after, _ := strings.Cut(m, "/")
		if len(ts) != 14 || strings.Trim(ts, "0123456789") != "" {
			return &replay.Error{Code: http.StatusBadRequest, Msg: fmt.Sprintf("memento datetime %q: want 14 digits (…/aggregate/memento/YYYYMMDDhhmmss/<URI-R>)", ts)}
		}
		t, err := replay.ParseTimestamp(ts, false)
		if err != nil {
			return &replay.Error{Code: http.StatusBadRequest, Msg: fmt.Sprintf("memento datetime: %v", err)}
		}
		at, rest = t, after
	}
	if strings.Contains(strings.ToLower(r.Header.Get("Cache-Control")), "no-cache") {
		r = r.WithContext(WithoutCache(r.Context()))
	}
	raw, err := replay.RouteURIR(rest, r.URL.RawQuery)
	if err == nil {
		raw, err = ParseURIR(raw)
	}
	if err != nil {
		return &replay.Error{Code: http.StatusBadRequest, Msg: err.Error()}
	}
	if format != "" {
		res, err := a.TimeMap(r.Context(), raw)
		if err != nil {
			return err
		}
		return a.writeTimeMap(w, r, res, format, base)
	}
	if !at.IsZero() {
		res, err := a.TimeGate(r.Context(), raw, at)
		if err != nil {
			return err
		}
		return a.writeTimeGate(w, r, res, at, base)
	}
	at = time.Now().UTC()
	if v := r.Header.Get("Accept-Datetime"); v != "" {
		if at, err = replay.ParseAcceptDatetime(v); err != nil {
			hdr := http.Header{}
			hdr.Set("Vary", "accept-datetime")
			return &replay.Error{Code: http.StatusBadRequest, Msg: err.Error(), Header: hdr}
		}
	}
	res, err := a.TimeGate(r.Context(), raw, at)
	if err != nil {
		return err
	}
	return a.writeTimeGate(w, r, res, at, base)
}

// markers sets the asked/avoided/partial headers.
func markers(h http.Header, res *Result) {
	// Any page may read the aggregated TimeMaps (no credentials involved).
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "Link, Location, Memento-Datetime, Vary, X-Memento-Count, X-Aggregate-Partial")
	var asked, avoided []string
	for _, o := range res.Archives {
		if o.Asked {
			asked = append(asked, o.Archive)
		} else {
			avoided = append(avoided, o.Archive)
		}
	}
	h.Set(HeaderAsked, strings.Join(asked, ", "))
	h.Set(HeaderAvoided, strings.Join(avoided, ", "))
	if f := res.failures(); len(f) > 0 {
		h.Set(HeaderPartial, strings.Join(f, ", "))
	}
}

// notFound is the answer for a URI-R no archive answered mementos for:
// 404 when every asked archive answered, 502 (504 when all failures were
// timeouts) when one did not, since its holdings are unknown.
func notFound(res *Result, hdr http.Header) error {
	markers(hdr, res)
	var asked, avoided []string
	timeouts, failed := 0, 0
	for _, o := range res.Archives {
		switch {
		case o.Dormant:
			// What a dormant archive holds is unknown: as a failure.
			failed++
		case !o.Asked:
			avoided = append(avoided, o.Archive)
		default:
			asked = append(asked, o.Archive)
			if o.Error != "" {
				failed++
			}
			if o.Timeout {
				timeouts++
			}
		}
	}
	if failed > 0 {
		code := http.StatusBadGateway
		if timeouts == failed {
			code = http.StatusGatewayTimeout
		}
		return &replay.Error{Code: code, Header: hdr, Msg: fmt.Sprintf("no mementos of %s found, but %d of the archives did not answer: %s",
			res.URIR, failed, strings.Join(res.failures(), ", "))}
	}
	msg := fmt.Sprintf("no mementos of %s in any archive (asked: %s", res.URIR, orNone(asked))
	if len(avoided) > 0 {
		msg += "; not asked, their MementoMaps hold nothing of it: " + strings.Join(avoided, ", ")
	}
	return &replay.Error{Code: http.StatusNotFound, Header: hdr, Msg: msg + ")"}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// timeMapLinks are the URLs an answer links to.
type timeMapLinks struct{ self, link, json, cdxj, gate string }

func linksFor(base, format, uriR string) timeMapLinks {
	l := timeMapLinks{link: base + "/timemap/link/" + uriR, json: base + "/timemap/json/" + uriR,
		cdxj: base + "/timemap/cdxj/" + uriR, gate: base + "/" + uriR}
	switch format {
	case "json":
		l.self = l.json
	case "cdxj":
		l.self = l.cdxj
	default:
		l.self = l.link
	}
	return l
}

// writeTimeMap writes the merged TimeMap as MemGator does: link format
// (original, self, the mementos with first/last relations, timemap and
// timegate links) or its JSON (original_uri, self, mementos.list with
// first and last, timemap_uri, timegate_uri), plus Wayside's partial and
// archives fields.
func (a *Aggregator) writeTimeMap(w http.ResponseWriter, r *http.Request, res *Result, format, base string) error {
	h := w.Header()
	if len(res.Mementos) == 0 {
		return notFound(res, http.Header{})
	}
	markers(h, res)
	h.Set("X-Memento-Count", strconv.Itoa(len(res.Mementos)))
	lk := linksFor(base, format, res.URIR)
	var buf bytes.Buffer
	first, last := res.Mementos[0], res.Mementos[len(res.Mementos)-1]
	if format == "cdxj" {
		// MemGator's CDXJ TimeMap: headers, then a line per memento keyed
		// by its 14-digit datetime.
		h.Set("Content-Type", "application/cdxj+ors")
		meta := func(v any) string { b, _ := json.Marshal(v); return string(b) }
		fmt.Fprintf(&buf, "!context [\"http://tools.ietf.org/html/rfc7089\"]\n")
		fmt.Fprintf(&buf, "!id %s\n", meta(map[string]string{"uri": lk.self}))
		fmt.Fprintf(&buf, "!keys [\"memento_datetime_YYYYMMDDhhmmss\"]\n")
		fmt.Fprintf(&buf, "!meta %s\n", meta(map[string]string{"original_uri": res.URIR}))
		fmt.Fprintf(&buf, "!meta %s\n", meta(map[string]string{"timegate_uri": lk.gate}))
		fmt.Fprintf(&buf, "!meta %s\n", meta(map[string]map[string]string{"timemap_uri": {"link_format": lk.link, "json_format": lk.json, "cdxj_format": lk.cdxj}}))
		for i, m := range res.Mementos {
			fmt.Fprintf(&buf, "%s %s\n", replay.Timestamp(m.Datetime), meta(map[string]string{"uri": m.URI,
				"rel": navRel(i, len(res.Mementos), -1), "datetime": replay.HTTPDate(m.Datetime)}))
		}
	} else if format == "link" {
		h.Set("Content-Type", "application/link-format")
		fmt.Fprintf(&buf, "<%s>; rel=\"original\",\n", res.URIR)
		fmt.Fprintf(&buf, "<%s>; rel=\"self\"; type=\"application/link-format\"; from=\"%s\"; until=\"%s\",\n",
			lk.self, replay.HTTPDate(first.Datetime), replay.HTTPDate(last.Datetime))
		for i, m := range res.Mementos {
			fmt.Fprintf(&buf, "<%s>; rel=\"%s\"; datetime=\"%s\",\n", m.URI, navRel(i, len(res.Mementos), -1), replay.HTTPDate(m.Datetime))
		}
		fmt.Fprintf(&buf, "<%s>; rel=\"timemap\"; type=\"application/link-format\",\n", lk.link)
		fmt.Fprintf(&buf, "<%s>; rel=\"timemap\"; type=\"application/json\",\n", lk.json)
		fmt.Fprintf(&buf, "<%s>; rel=\"timegate\"\n", lk.gate)
	} else {
		h.Set("Content-Type", "application/json")
		type jm struct {
			Datetime string `json:"datetime"`
			URI      string `json:"uri"`
			Archive  string `json:"archive,omitempty"`
		}
		conv := func(m Memento, withArchive bool) jm {
			j := jm{Datetime: m.Datetime.UTC().Format(time.RFC3339), URI: m.URI}
			if withArchive {
				j.Archive = m.Archive
			}
			return j
		}
		list := make([]jm, len(res.Mementos))
		for i, m := range res.Mementos {
			list[i] = conv(m, true)
		}
		out := struct {
			Original string `json:"original_uri"`
			Self     string `json:"self"`
			Mementos struct {
				List  []jm `json:"list"`
				First jm   `json:"first"`
				Last  jm   `json:"last"`
			} `json:"mementos"`
			TimeMapURI struct {
				Link string `json:"link_format"`
				JSON string `json:"json_format"`
			} `json:"timemap_uri"`
			TimeGateURI string    `json:"timegate_uri"`
			Partial     bool      `json:"partial"`
			Archives    []Outcome `json:"archives"`
		}{Original: res.URIR, Self: lk.self, TimeGateURI: lk.gate, Partial: res.Partial(), Archives: res.Archives}
		out.Mementos.List, out.Mementos.First, out.Mementos.Last = list, conv(first, false), conv(last, false)
		out.TimeMapURI.Link, out.TimeMapURI.JSON = lk.link, lk.json
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
	return nil
}

// navRel is the rel of the i-th of n mementos in a TimeMap (chosen = -1)
// or a TimeGate's Link header: "first", "last", "prev", "next" as they
// apply, then "memento".
func navRel(i, n, chosen int) string {
	var rels []string
	if i == 0 {
		rels = append(rels, "first")
	}
	if i == n-1 {
		rels = append(rels, "last")
	}
	if chosen >= 0 && i == chosen-1 {
		rels = append(rels, "prev")
	}
	if chosen >= 0 && i == chosen+1 {
		rels = append(rels, "next")
	}
	return strings.Join(append(rels, "memento"), " ")
}

// writeTimeGate redirects to the memento closest to at across archives,
// with Vary: accept-datetime and a Link header listing the original, the
// TimeMaps, and the first, previous, chosen, next and last mementos.
func (a *Aggregator) writeTimeGate(w http.ResponseWriter, r *http.Request, res *Result, at time.Time, base string) error {
	hdr := http.Header{}
	hdr.Set("Vary", "accept-datetime")
	lk := linksFor(base, "link", res.URIR)
	links := []string{
		fmt.Sprintf("<%s>; rel=\"original\"", res.URIR),
		fmt.Sprintf("<%s>; rel=\"timemap\"; type=\"application/link-format\"", lk.link),
		fmt.Sprintf("<%s>; rel=\"timemap\"; type=\"application/json\"", lk.json),
	}
	c := Closest(res.Mementos, at)
	if c < 0 {
		hdr.Set("Link", strings.Join(links, ", "))
		return notFound(res, hdr)
	}
	n := len(res.Mementos)
	seen := map[int]bool{}
	for _, i := range []int{0, c - 1, c, c + 1, n - 1} {
		if i < 0 || i >= n || seen[i] {
			continue
		}
		seen[i] = true
		links = append(links, fmt.Sprintf("<%s>; rel=\"%s\"; datetime=\"%s\"", res.Mementos[i].URI, navRel(i, n, c), replay.HTTPDate(res.Mementos[i].Datetime)))
	}
	h := w.Header()
	for k, v := range hdr {
		h[k] = v
	}
	markers(h, res)
	h.Set("Link", strings.Join(links, ", "))
	loc := res.Mementos[c].URI
	h.Set("Location", loc)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, "Found: %s\n", loc)
	}
	return nil
}
