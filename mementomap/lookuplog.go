package mementomap

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// LogStats counts what ReadLookupLog made of a log.
type LogStats struct {
	Lines      int64 // non-blank lines read
	Requests   int64 // lines in access-log format
	Targets    int64 // lookup targets found (requests of Memento resources and bare URIs)
	Duplicates int64 // targets seen before (dropped unless KeepDuplicates)
	Skipped    int64 // lines with no lookup target (reported to OnBad)
}

// LogOptions tune ReadLookupLog.
type LogOptions struct {
	// KeepDuplicates keeps every request; by default each distinct target
	// is kept once (the paper evaluated unique lookup URIs).
	KeepDuplicates bool
	// OnBad sees each line that holds no lookup target.
	OnBad func(error)
}

// combinedLog matches the Common and Combined Log Formats:
// host ident user [time] "request" status size ["referer" "agent"].
var combinedLog = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\S+ \S+ \S+ \[[^\]]*\] "((?:[^"\\]|\\.)*)" (?:\d{3}|-) \S+`)
})

// mementoPath finds the URI-R in the path of a Memento request without
// a scheme in its URI-R: /timemap/link/URI, /timegate/URI, or a URI-M
// /PREFIX/DATETIME[mod_]/URI (DATETIME: 1 to 14 digits or "*").
var (
	timePath = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:/[^/]+)*?/(?:timegate|timemap(?:/[a-z]+)?)/(.+)$`)
	})
	mementoPath = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:/[^/0-9*][^/]*)*?/(?:\d{1,14}|\*)(?:[a-z]{2}_)?/(.+)$`)
	})
)

// ReadLookupLog reads lookup targets from a log: each line is either a web
// server access log line (Common or Combined Log Format) of a Memento
// request — a URI-M "GET /web/20190101000000/http://example.com/ HTTP/1.1",
// a TimeGate "/timegate/URI" or a TimeMap "/timemap/link/URI", absolute or
// origin form — whose URI-R is the target, or a bare URI or SURT key, one
// per line. Requests that are not of a Memento resource (no URI-R in the
// path) are skipped and counted. Blank lines and lines starting with '#'
// are ignored.
func ReadLookupLog(r io.Reader, name string, opts LogOptions) ([]string, LogStats, error) {
	var st LogStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	seen := map[string]bool{}
	var out []string
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		st.Lines++
		target, err := logTarget(line)
		if err == nil && target == "" {
			err = fmt.Errorf("no lookup target")
		}
		if err != nil {
			st.Skipped++
			if opts.OnBad != nil {
				opts.OnBad(fmt.Errorf("mementomap: %s:%d: %w", name, n, err))
			}
			continue
		}
		if combinedLog().MatchString(line) {
			st.Requests++
		}
		st.Targets++
		if !opts.KeepDuplicates {
			if seen[target] {
				st.Duplicates++
				continue
			}
			seen[target] = true
		}
		out = append(out, target)
	}
	if err := sc.Err(); err != nil {
		return nil, st, fmt.Errorf("mementomap: %s: %w", name, err)
	}
	return out, st, nil
}

// logTarget returns the lookup target of one log line.
func logTarget(line string) (string, error) {
	m := combinedLog().FindStringSubmatch(line)
	if m == nil {
		if strings.ContainsAny(line, " \t") {
			return "", fmt.Errorf("neither an access log line nor a URI: %.80q", line)
		}
		return line, nil
	}
	f := strings.Fields(m[1])
	if len(f) < 2 {
		return "", fmt.Errorf("request %q has no target", m[1])
	}
	return uriRFromPath(f[1])
}

// uriRFromPath extracts the URI-R from the request target of a Memento
// request.
func uriRFromPath(p string) (string, error) {
	// Absolute form ("GET http://archive.example/web/…"): drop the origin.
	if i := strings.Index(p, "://"); i > 0 && !strings.ContainsAny(p[:i], "/?") {
		rest := p[i+3:]
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			return "", fmt.Errorf("request %q has no path", p)
		}
		p = rest[j:]
	}
	lower := strings.ToLower(p)
	// A URI-R with a scheme, possibly escaped ("http%3A%2F%2F…") or with
	// its "//" collapsed to "/" by a proxy.
	first, esc := -1, false
	for _, s := range []string{"http:/", "https:/", "http%3a", "https%3a"} {
		for off := 0; ; {
			i := strings.Index(lower[off:], s)
			if i < 0 {
				break
			}
			i += off
			if i > 0 && p[i-1] == '/' {
				if first < 0 || i < first {
					first, esc = i, strings.Contains(s, "%")
				}
				break
			}
			off = i + 1
		}
	}
	if first > 0 {
		u := p[first:]
		if esc {
			d, err := url.PathUnescape(u)
			if err != nil {
				return "", fmt.Errorf("request %q: %w", p, err)
			}
			u = d
		}
		if k := strings.Index(u, ":/"); k > 0 && !strings.HasPrefix(u[k:], "://") {
			u = u[:k] + "://" + u[k+2:]
		}
		return u, nil
	}
	if m := timePath().FindStringSubmatch(p); m != nil {
		return m[1], nil
	}
	if m := mementoPath().FindStringSubmatch(p); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("request %q is not of a Memento resource (no URI-R in the path)", p)
}

// LabelAgainst labels lookup targets (URIs or keys) against the full key
// list: present when the full map answers the target's key present. A
// target without a key (not an http(s) URI) is passed to onBad and left
// out, or is an error when onBad is nil.
func LabelAgainst(full *Map, targets []string, onBad func(error)) ([]Labelled, error) {
	var s Scratch
	out := make([]Labelled, 0, len(targets))
	for _, t := range targets {
		k, err := parseTarget(t)
		var got Match
		if err == nil {
			got, err = full.Lookup(k, &s)
		}
		if err != nil {
			err = fmt.Errorf("mementomap: label %q: %w", t, err)
			if onBad == nil {
				return nil, err
			}
			onBad(err)
			continue
		}
		out = append(out, Labelled{Key: k, Present: got.Present})
	}
	return out, nil
}
