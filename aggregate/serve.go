package aggregate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
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
		res, err := a.aggregate(r.Context(), raw, nil)
		if err != nil {
			return err
		}
		defer res.close()
		return a.writeTimeMap(w, r, res, format, base)
	}
	if !at.IsZero() {
		res, err := a.aggregate(r.Context(), raw, &at)
		if err != nil {
			return err
		}
		defer res.close()
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
	res, err := a.aggregate(r.Context(), raw, &at)
	if err != nil {
		return err
	}
	defer res.close()
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
// archives fields; or MemGator's CDXJ TimeMap. The mementos are streamed
// from the merged run as they are read (chunked: no Content-Length).
func (a *Aggregator) writeTimeMap(w http.ResponseWriter, r *http.Request, res *Result, format, base string) error {
	h := w.Header()
	if res.Count == 0 {
		return notFound(res, http.Header{})
	}
	markers(h, res)
	n := res.Count
	h.Set("X-Memento-Count", strconv.Itoa(n))
	lk := linksFor(base, format, res.URIR)
	first, last := res.first, res.last
	var head, tail bytes.Buffer
	var line func(bw *bufio.Writer, i int, m Memento)
	switch format {
	case "cdxj":
		// MemGator's CDXJ TimeMap: headers, then a line per memento keyed
		// by its 14-digit datetime.
		h.Set("Content-Type", "application/cdxj+ors")
		meta := func(v any) string { b, _ := json.Marshal(v); return string(b) }
		fmt.Fprintf(&head, "!context [\"http://tools.ietf.org/html/rfc7089\"]\n")
		fmt.Fprintf(&head, "!id %s\n", meta(map[string]string{"uri": lk.self}))
		fmt.Fprintf(&head, "!keys [\"memento_datetime_YYYYMMDDhhmmss\"]\n")
		fmt.Fprintf(&head, "!meta %s\n", meta(map[string]string{"original_uri": res.URIR}))
		fmt.Fprintf(&head, "!meta %s\n", meta(map[string]string{"timegate_uri": lk.gate}))
		fmt.Fprintf(&head, "!meta %s\n", meta(map[string]map[string]string{"timemap_uri": {"link_format": lk.link, "json_format": lk.json, "cdxj_format": lk.cdxj}}))
		line = func(bw *bufio.Writer, i int, m Memento) {
			fmt.Fprintf(bw, "%s %s\n", replay.Timestamp(m.Datetime), meta(map[string]string{"uri": m.URI,
				"rel": navRel(i, n, -1), "datetime": replay.HTTPDate(m.Datetime)}))
		}
	case "link":
		h.Set("Content-Type", "application/link-format")
		fmt.Fprintf(&head, "<%s>; rel=\"original\",\n", res.URIR)
		fmt.Fprintf(&head, "<%s>; rel=\"self\"; type=\"application/link-format\"; from=\"%s\"; until=\"%s\",\n",
			lk.self, replay.HTTPDate(first.Datetime), replay.HTTPDate(last.Datetime))
		line = func(bw *bufio.Writer, i int, m Memento) {
			fmt.Fprintf(bw, "<%s>; rel=\"%s\"; datetime=\"%s\",\n", m.URI, navRel(i, n, -1), replay.HTTPDate(m.Datetime))
		}
		fmt.Fprintf(&tail, "<%s>; rel=\"timemap\"; type=\"application/link-format\",\n", lk.link)
		fmt.Fprintf(&tail, "<%s>; rel=\"timemap\"; type=\"application/json\",\n", lk.json)
		fmt.Fprintf(&tail, "<%s>; rel=\"timegate\"\n", lk.gate)
	default:
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
		out := struct {
			Original string `json:"original_uri"`
			Self     string `json:"self"`
			Mementos struct {
				List  *[]jm `json:"list"`
				First jm    `json:"first"`
				Last  jm    `json:"last"`
			} `json:"mementos"`
			TimeMapURI struct {
				Link string `json:"link_format"`
				JSON string `json:"json_format"`
			} `json:"timemap_uri"`
			TimeGateURI string    `json:"timegate_uri"`
			Partial     bool      `json:"partial"`
			Archives    []Outcome `json:"archives"`
		}{Original: res.URIR, Self: lk.self, TimeGateURI: lk.gate, Partial: res.Partial(), Archives: res.Archives}
		out.Mementos.First, out.Mementos.Last = conv(first, false), conv(last, false)
		out.TimeMapURI.Link, out.TimeMapURI.JSON = lk.link, lk.json
		var whole bytes.Buffer
		enc := json.NewEncoder(&whole)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
		// The list is streamed where the encoder put null, each entry
		// indented as the encoder would have.
		const hole = `"list": null`
		before, after, ok := bytes.Cut(whole.Bytes(), []byte(hole))
		if !ok {
			return fmt.Errorf("aggregate: JSON TimeMap template without its list")
		}
		head.Write(before)
		head.WriteString(`"list": [`)
		tail.WriteString("\n    ]")
		tail.Write(after)
		var item bytes.Buffer
		ienc := json.NewEncoder(&item)
		ienc.SetEscapeHTML(false)
		ienc.SetIndent("      ", "  ")
		line = func(bw *bufio.Writer, i int, m Memento) {
			item.Reset()
			ienc.Encode(conv(m, true))
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString("\n      ")
			bw.Write(bytes.TrimRight(item.Bytes(), "\n"))
		}
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head.Bytes())
	i := 0
	err := res.each(func(m Memento) error {
		line(bw, i, m)
		i++
		return nil
	})
	if err != nil {
		// The status is sent: the answer is cut short (no closing
		// links), which a client sees as a truncated body.
		a.log.Warn("aggregate: TimeMap cut short", "uri_r", res.URIR, "err", err)
		bw.Flush()
		return nil
	}
	bw.Write(tail.Bytes())
	bw.Flush()
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
	near, err := closestIn(res, at)
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	if near.c < 0 {
		hdr.Set("Link", strings.Join(links, ", "))
		return notFound(res, hdr)
	}
	n, c := res.Count, near.c
	seen := map[int]bool{}
	for _, i := range []int{0, c - 1, c, c + 1, n - 1} {
		if i < 0 || i >= n || seen[i] {
			continue
		}
		seen[i] = true
		m := near.at[i]
		links = append(links, fmt.Sprintf("<%s>; rel=\"%s\"; datetime=\"%s\"", m.URI, navRel(i, n, c), replay.HTTPDate(m.Datetime)))
	}
	h := w.Header()
	for k, v := range hdr {
		h[k] = v
	}
	markers(h, res)
	h.Set("Link", strings.Join(links, ", "))
	loc := near.at[c].URI
	h.Set("Location", loc)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, "Found: %s\n", loc)
	}
	return nil
}

// neighbourhood is what a TimeGate answer links: the closest memento's
// index c (-1: none) and the mementos at 0, c-1, c, c+1 and n-1.
type neighbourhood struct {
	c  int
	at map[int]Memento
}

// closestIn finds, in one pass over the merged run, the memento closest
// to at (ties to the earlier, as Closest) and its neighbours.
func closestIn(res *Result, at time.Time) (neighbourhood, error) {
	nb := neighbourhood{c: -1, at: map[int]Memento{}}
	bestD := time.Duration(math.MaxInt64)
	var prev Memento
	i := 0
	err := res.each(func(m Memento) error {
		if i == 0 {
			nb.at[0] = m
		}
		d := m.Datetime.Sub(at)
		if d < 0 {
			d = -d
		}
		if d < bestD {
			bestD = d
			for k := range nb.at {
				if k != 0 {
					delete(nb.at, k)
				}
			}
			nb.c = i
			nb.at[i] = m
			if i > 0 {
				nb.at[i-1] = prev
			}
		} else if nb.c >= 0 && i == nb.c+1 {
			nb.at[i] = m
		}
		prev = m
		i++
		return nil
	})
	if i > 0 {
		nb.at[i-1] = prev
	}
	return nb, err
}
