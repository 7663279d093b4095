package replay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/captureindex"
)

// DefaultFuzzyParams are the query parameters fuzzy matching ignores, after
// pywb's default rules: cache busters (jQuery's "_", "cb", "nocache", ...)
// and click trackers. Session ids (jsessionid, phpsessid, sid, ...) are
// already dropped from every urlkey by the SURT canonicalisation.
var DefaultFuzzyParams = []string{"_", "__", "cb", "cachebust", "cachebuster", "cache_bust", "cachebreaker",
	"nocache", "no_cache", "uncache", "rand", "random", "rnd", "nc", "timestamp", "utm_source", "utm_medium",
	"utm_campaign", "utm_term", "utm_content", "fbclid", "gclid", "_ga", "_gl", "mc_cid", "mc_eid"}

// fuzzyScanMax bounds the captures a fuzzy lookup reads.
const fuzzyScanMax = 20000

// stripVolatile returns u without the query parameters in ignore (the
// rest in their order); ok is false when u has none of them.
func stripVolatile(u string, ignore map[string]bool) (string, bool) {
	base, q, has := strings.Cut(u, "?")
	if !has {
		return u, false
	}
	var kept []string
	changed := false
	for _, p := range strings.Split(q, "&") {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if ignore[strings.ToLower(name)] {
			changed = true
			continue
		}
		if p != "" {
			kept = append(kept, p)
		}
	}
	if !changed {
		return u, false
	}
	if len(kept) == 0 {
		return base, true
	}
	return base + "?" + strings.Join(kept, "&"), true
}

// fallback finds the capture a request for p.uriR with no capture of its
// own stands for: through an alias (OutbackCDX's @alias), else by fuzzy
// matching (the URI-R and a capture's URI equal once the ignored
// parameters are removed), the closest to t of those visible. how says
// which ("alias" or "fuzzy"); nil when none.
func (h *Handler) fallback(ctx context.Context, p *path, t time.Time) (e *captureindex.Entry, how string, err error) {
	key := captureindex.URLKey(p.uriR)
	if target, ok := h.opts.Aliases[key]; ok {
		var chosen *captureindex.Entry
		err := h.idx.Closest(ctx, p.coll, target, t, func(e *captureindex.Entry) error {
			if p.chk.Entry(e).Visible() {
				chosen = e
				return captureindex.ErrStop
			}
			return nil
		})
		if err != nil || chosen != nil {
			return chosen, "alias", h.indexError(err)
		}
	}
	if len(h.fuzzy) == 0 {
		return nil, "", nil
	}
	want := captureindex.URLKey(p.uriR)
	if s, ok := stripVolatile(p.uriR, h.fuzzy); ok {
		want = captureindex.URLKey(s)
	}
	base, _, _ := strings.Cut(want, "?")
	// The captures of the same path: without a query, then with any.
	var best *captureindex.Entry
	consider := func(e *captureindex.Entry) {
		if !p.chk.Entry(e).Visible() {
			return
		}
		k := e.Key
		if s, ok := stripVolatile(e.URI, h.fuzzy); ok {
			k = captureindex.URLKey(s)
		}
		if k != want {
			return
		}
		if best == nil || absDur(e.Date.Sub(t)) < absDur(best.Date.Sub(t)) {
			best = e
		}
	}
	n := 0
	visit := func(e *captureindex.Entry) error {
		if n++; n > fuzzyScanMax {
			return captureindex.ErrStop
		}
		consider(e)
		return nil
	}
	if base != key {
		if err := h.idx.Scan(ctx, captureindex.Query{Scope: p.coll, Key: base}, visit); err != nil {
			return nil, "", h.indexError(err)
		}
	}
	if err := h.idx.Scan(ctx, captureindex.Query{Scope: p.coll, Key: base + "?", End: base + "@"}, visit); err != nil {
		return nil, "", h.indexError(err)
	}
	if best == nil {
		return nil, "", nil
	}
	return best, "fuzzy", nil
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// ParseAliases reads aliases, one a line: "@alias SOURCE TARGET" (as
// OutbackCDX takes them) or "SOURCE TARGET", URLs or SURTs; # comments
// and blank lines skipped. It returns source urlkey → target urlkey.
func ParseAliases(r io.Reader, name string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "@alias" {
			f = f[1:]
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("replay: %s line %d: want \"@alias SOURCE TARGET\"", name, n)
		}
		key := func(s string) string {
			if strings.Contains(s, "://") {
				return captureindex.URLKey(s)
			}
			return s
		}
		out[key(f[0])] = key(f[1])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("replay: %s: %w", name, err)
	}
	return out, nil
}

// LoadAliases reads an aliases file (ParseAliases).
func LoadAliases(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: aliases: %w", err)
	}
	defer f.Close()
	return ParseAliases(f, path)
}

func fuzzySet(params []string) map[string]bool {
	m := map[string]bool{}
	for _, p := range params {
		m[strings.ToLower(p)] = true
	}
	return m
}
