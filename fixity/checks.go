package fixity

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Guideline checks (the study's guidelines 5-7), recorded in
// Manifest.Checks.
const (
	// CheckRawNotRaw (guideline 5: verify that raw really is raw): a raw
	// (id_) answer holds rewritten URI-Ms, so the archive served rewritten
	// content for id_. Flagged; the resource stays in the roots.
	CheckRawNotRaw = "raw-not-raw"
	// CheckArchiveCache (guideline 6: avoid cached copies): an answer came
	// from a cache (Age > 0, an X-Cache/CF-Cache-Status HIT, the browser's
	// disk cache or a service worker) although every request asked for a
	// fresh one (fresh profile, cache disabled, Cache-Control: no-cache).
	// Flagged; the resource stays in the roots.
	CheckArchiveCache = "archive-cache"
	// CheckSoft404 (guideline 7: drop resources whose status is wrong): a
	// 2xx answer whose media type cannot be what the page asked for (an
	// HTML or plain-text page for an image, stylesheet, script, font or
	// media request): a soft 404. The resource is excluded from the roots
	// (Excluded = "wrong-status").
	CheckSoft404 = "soft-404"
	// CheckStatusMismatch (guideline 7): the rewritten and the raw answer
	// of a resource have different statuses. Flagged.
	CheckStatusMismatch = "status-mismatch"
)

// ExcludedWrongStatus is the Excluded reason of a resource dropped by
// guideline 7.
const ExcludedWrongStatus = "wrong-status"

// Check is one finding of a guideline check.
type Check struct {
	Guideline int    `json:"guideline"` // 5, 6 or 7
	Name      string `json:"name"`      // CheckRawNotRaw, ...
	Key       string `json:"key"`
	URL       string `json:"url"`
	Side      string `json:"side,omitempty"`   // "rewritten" or "raw"
	Action    string `json:"action"`           // "flagged" or "excluded"
	Detail    string `json:"detail,omitempty"` // what was seen
}

// String formats c on one line.
func (c Check) String() string {
	s := fmt.Sprintf("guideline %d %s (%s) %s", c.Guideline, c.Name, c.Action, c.Key)
	if c.Side != "" {
		s += " [" + c.Side + "]"
	}
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// runChecks applies guidelines 5-7 to the resources of m: it records a
// Check for every finding and excludes soft 404s. It runs before Seal.
func runChecks(m *Manifest) {
	for i := range m.Resources {
		res := &m.Resources[i]
		if !res.Included() {
			continue
		}
		add := func(g int, name, side, action, detail string) {
			m.Checks = append(m.Checks, Check{Guideline: g, Name: name, Key: res.Key, URL: res.URL, Side: side, Action: action, Detail: detail})
		}
		if res.Raw != nil && res.Raw.Suspect != "" {
			add(5, CheckRawNotRaw, CaptureRaw, "flagged", res.Raw.Suspect)
		}
		for _, side := range []struct {
			name string
			p    *Response
		}{{CaptureRewritten, res.Rewritten}, {CaptureRaw, res.Raw}} {
			if side.p != nil && side.p.Cache != "" {
				add(6, CheckArchiveCache, side.name, "flagged", side.p.Cache)
			}
		}
		if why := soft404(res); why != "" {
			res.Excluded = ExcludedWrongStatus
			add(7, CheckSoft404, "", "excluded", why)
			continue
		}
		if rw, raw := res.Rewritten, res.Raw; rw.hasResponse() && raw.hasResponse() && rw.Status != raw.Status {
			add(7, CheckStatusMismatch, "", "flagged", fmt.Sprintf("rewritten status %d, raw status %d", rw.Status, raw.Status))
		}
	}
}

// errorPageTypes are the media types of error pages that can never be an
// answer to a request of the given browser type.
var errorPageTypes = map[string][]string{
	"Image":      {"text/html", "application/xhtml+xml", "text/plain"},
	"Media":      {"text/html", "application/xhtml+xml", "text/plain"},
	"Font":       {"text/html", "application/xhtml+xml", "text/plain"},
	"Stylesheet": {"text/html", "application/xhtml+xml"},
	"Script":     {"text/html", "application/xhtml+xml"},
}

// soft404 says why a 2xx answer of res is a soft 404, or "".
func soft404(res *Resource) string {
	bad := errorPageTypes[res.Type]
	if bad == nil {
		return ""
	}
	for _, side := range []struct {
		name string
		p    *Response
	}{{CaptureRewritten, res.Rewritten}, {CaptureRaw, res.Raw}} {
		p := side.p
		if !p.hasResponse() || p.Status < 200 || p.Status > 299 || p.MIME == "" {
			continue
		}
		mt, _, err := mime.ParseMediaType(p.MIME)
		if err != nil {
			mt = strings.ToLower(strings.TrimSpace(strings.Split(p.MIME, ";")[0]))
		}
		if slices.Contains(bad, mt) {
			return fmt.Sprintf("%s request answered %d with %s (%s)", strings.ToLower(res.Type), p.Status, mt, side.name)
		}
	}
	return ""
}

// cacheSignals describes the signs in h that a cache answered, or "".
func cacheSignals(get func(func(name, value string))) string {
	var out []string
	get(func(name, value string) {
		n := strings.ToLower(strings.TrimSpace(name))
		v := strings.TrimSpace(value)
		switch {
		case n == "age":
			if a, err := strconv.Atoi(v); err == nil && a > 0 {
				out = append(out, "age: "+v)
			}
		case n == "x-cache", n == "x-cache-status", n == "cf-cache-status", n == "x-proxy-cache", n == "cdn-cache-status":
			if strings.Contains(strings.ToUpper(v), "HIT") {
				out = append(out, n+": "+v)
			}
		}
	})
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// cacheSignalsHTTP is cacheSignals over a Go header map.
func cacheSignalsHTTP(h http.Header) string { return cacheSignals(goHeaders(h)) }
