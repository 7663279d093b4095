package fixity

import (
	"mime"
	"net/url"
	"strings"
)

// selectHeaders returns the headers fixity hashes: Memento-Datetime,
// Content-Type, Location (canonicalised against base) and every
// X-Archive-Orig-* header, one Header per value.
func (c *Config) selectHeaders(base string, get func(func(name, value string))) []Header {
	var out []Header
	get(func(name, value string) {
		n := strings.ToLower(strings.TrimSpace(name))
		switch {
		case n == "memento-datetime", n == "content-type", n == "location", strings.HasPrefix(n, "x-archive-orig-"):
		default:
			return
		}
		h := Header{Name: n, Value: strings.TrimSpace(value)}
		if n == "location" {
			if canon := c.canonicalRef(base, h.Value); canon != h.Value {
				h.Raw, h.Value = h.Value, canon
			}
		}
		out = append(out, h)
	})
	return out
}

// canonicalRef resolves ref against base and canonicalises the result.
func (c *Config) canonicalRef(base, ref string) string {
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	r, err := b.Parse(ref)
	if err != nil {
		return ref
	}
	canon, _ := c.Canonical(r.String())
	return canon
}

// isText reports whether a media type is text an archive may rewrite: text/*,
// JavaScript, JSON, XML and SVG. Such rewritten bodies are never hashed.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	}
	switch {
	case mt == "":
		return true // unknown: the archive may have rewritten it
	case strings.HasPrefix(mt, "text/"):
		return true
	case strings.HasSuffix(mt, "+xml"), strings.HasSuffix(mt, "+json"):
		return true
	}
	switch mt {
	case "application/javascript", "application/x-javascript", "application/ecmascript",
		"application/json", "application/xml", "application/xhtml+xml", "application/manifest+json":
		return true
	}
	return false
}

// exclusion returns the URL that stands for a request chain (the first
// URI-M in chain, which starts with the requested URL: requests that
// escaped rewriting reach their memento through a redirect) and why the
// resource is not part of the root, or "" when it is.
func (c *Config) exclusion(chain ...string) (eff, why string) {
	first := chain[0]
	eff = first
	for _, u := range chain {
		if m, ok := ParseURIM(u); ok && c.ArchiveFor(m.Host) != nil {
			eff = u
			break
		}
	}
	pu, err := url.Parse(first)
	if err != nil {
		return eff, "unparsable"
	}
	if pu.Scheme != "http" && pu.Scheme != "https" {
		return eff, "not-http"
	}
	a := c.ArchiveFor(pu.Host)
	if a == nil {
		return eff, "live-web"
	}
	if pu.Path == "/favicon.ico" {
		return eff, "browser-favicon"
	}
	for _, r := range a.Exclude {
		if r.re != nil && (r.re.MatchString(first) || r.re.MatchString(eff)) {
			return eff, r.Reason
		}
	}
	if _, ok := ParseURIM(eff); !ok {
		return eff, "replay-infrastructure"
	}
	return eff, ""
}
