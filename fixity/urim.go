package fixity

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// tsSeg matches the timestamp path segment of a URI-M: 1 to 14 digits and
// an optional replay modifier (id_, mp_, im_, js_, cs_, if_, fw_, oe_, ...).
var tsSeg = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,14})([a-z]{2}_)?$`) })

// URIM is a parsed memento URL: https://host/<prefix>/<ts><mod>/<URI-R>.
type URIM struct {
	Scheme   string // as given
	Host     string // normalised host as given (not yet aliased)
	Prefix   string // collection path before the timestamp, e.g. "/web"
	Datetime string // the timestamp digits, as given
	Modifier string // replay modifier, e.g. "im_"; "" when absent
	URIR     string // the original resource, as given (query included)
}

// ParseURIM parses a memento URL. It reports false when the path holds no
// timestamp segment followed by an original URL.
func ParseURIM(raw string) (URIM, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return URIM{}, false
	}
	host, err := normHost(u.Host)
	if err != nil {
		return URIM{}, false
	}
	// Work on the raw (escaped) path so the embedded URL keeps its bytes.
	p := u.EscapedPath()
	segs := strings.Split(p, "/")
	for i := 1; i < len(segs)-1; i++ {
		m := tsSeg().FindStringSubmatch(segs[i])
		if m == nil {
			continue
		}
		rest := strings.Join(segs[i+1:], "/")
		if u.RawQuery != "" {
			rest += "?" + u.RawQuery
		}
		if rest == "" {
			return URIM{}, false
		}
		return URIM{
			Scheme: u.Scheme, Host: host, Prefix: strings.Join(segs[:i], "/"),
			Datetime: m[1], Modifier: m[2], URIR: rest,
		}, true
	}
	return URIM{}, false
}

// String returns the URI-M with its modifier.
func (m URIM) String() string {
	return fmt.Sprintf("%s://%s%s/%s%s/%s", m.Scheme, m.Host, m.Prefix, m.Datetime, m.Modifier, m.URIR)
}

// WithModifier returns m with the replay modifier mod (e.g. "id_").
func (m URIM) WithModifier(mod string) URIM { m.Modifier = mod; return m }

// canonURIR canonicalises an original URL: lowercase scheme and host,
// default port and fragment dropped, "http://" added when the scheme is
// missing (some archives drop it), "//" restored after "http:/".
func canonURIR(r string) string {
	if strings.HasPrefix(r, "//") {
		r = "http:" + r
	}
	for _, s := range []string{"http:/", "https:/"} {
		if strings.HasPrefix(r, s) && !strings.HasPrefix(r, s+"/") {
			r = s + "/" + r[len(s):]
		}
	}
	if !strings.Contains(r, "://") {
		r = "http://" + r
	}
	u, err := url.Parse(r)
	if err != nil {
		return r
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if h, err := normHost(u.Host); err == nil {
		u.Host = h
	}
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// Canonical returns the canonical form of a URL seen during replay:
// for a URI-M on a configured archive, "https://<canonical host><prefix>/<ts>/<canonical URI-R>"
// (scheme unified, alias host replaced, replay modifier removed); for any
// other URL, the URL with lowercase scheme and host and no fragment.
// isMemento reports whether raw is a URI-M of a configured archive.
func (c *Config) Canonical(raw string) (canon string, isMemento bool) {
	m, ok := ParseURIM(raw)
	if ok {
		if a := c.ArchiveFor(m.Host); a != nil {
			return fmt.Sprintf("https://%s%s/%s/%s", a.Hosts[0], m.Prefix, m.Datetime, canonURIR(m.URIR)), true
		}
	}
	c2 := canonURIR(raw)
	if u, err := url.Parse(c2); err == nil {
		if a := c.ArchiveFor(u.Host); a != nil {
			u.Scheme, u.Host = "https", a.Hosts[0]
			return u.String(), false
		}
	}
	return c2, false
}

// URIR returns the canonical original URL of a URI-M, or the canonical URL
// itself when raw is not a memento.
func (c *Config) URIR(raw string) string {
	if m, ok := ParseURIM(raw); ok && c.ArchiveFor(m.Host) != nil {
		return canonURIR(m.URIR)
	}
	canon, _ := c.Canonical(raw)
	return canon
}
