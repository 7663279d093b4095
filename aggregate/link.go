package aggregate

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Link is one entry of an RFC 8288 link list: a Link header value or an
// application/link-format body (RFC 6690) such as a Memento TimeMap.
type Link struct {
	Target string
	// Params holds the target attributes, names lower-cased, values
	// unquoted. A repeated attribute keeps its first value.
	Params map[string]string
}

// HasRel reports whether the link's rel holds the relation type r (rel
// is a space-separated list; compared case-insensitively).
func (l Link) HasRel(r string) bool {
	for _, f := range strings.Fields(l.Params["rel"]) {
		if strings.EqualFold(f, r) {
			return true
		}
	}
	return false
}

// ParseLinks reads a link list leniently: entries that do not parse are
// skipped (up to the next ",<"), and the first problem is returned with
// the links that did parse, so a caller can tell a TimeMap with one bad
// entry from one that is not a link list at all.
func ParseLinks(s string) ([]Link, error) {
	p := linkParser{s: s}
	var out []Link
	var first error
	for {
		p.skip(" \t\r\n,")
		if p.i >= len(p.s) {
			return out, first
		}
		l, err := p.link()
		if err != nil {
			if first == nil {
				first = err
			}
			p.resync()
			continue
		}
		out = append(out, l)
	}
}

type linkParser struct {
	s string
	i int
}

func (p *linkParser) skip(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *linkParser) errorf(format string, a ...any) error {
	return fmt.Errorf("link list at byte %d: %s", p.i, fmt.Sprintf(format, a...))
}

// resync moves past the next comma that is followed by '<' (outside
// quotes), or to the end.
func (p *linkParser) resync() {
	quoted := false
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			j := p.i + 1
			for j < len(p.s) && strings.IndexByte(" \t\r\n", p.s[j]) >= 0 {
				j++
			}
			if j < len(p.s) && p.s[j] == '<' {
				p.i = j
				return
			}
		}
	}
}

func (p *linkParser) link() (Link, error) {
	if p.s[p.i] != '<' {
		return Link{}, p.errorf("want '<', found %q", p.s[p.i])
	}
	end := strings.IndexByte(p.s[p.i:], '>')
	if end < 0 {
		return Link{}, p.errorf("unterminated <target>")
	}
	l := Link{Target: strings.TrimSpace(p.s[p.i+1 : p.i+end]), Params: map[string]string{}}
	if strings.ContainsAny(l.Target, "<\r\n") {
		return Link{}, p.errorf("bad target %q", l.Target)
	}
	p.i += end + 1
	for {
		p.skip(" \t\r\n")
		if p.i >= len(p.s) || p.s[p.i] == ',' {
			return l, nil
		}
		if p.s[p.i] != ';' {
			return Link{}, p.errorf("want ';' or ',' after a link, found %q", p.s[p.i])
		}
		p.i++
		p.skip(" \t\r\n")
		start := p.i
		for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
			p.i++
		}
		name := strings.ToLower(p.s[start:p.i])
		if name == "" {
			return Link{}, p.errorf("empty parameter name")
		}
		p.skip(" \t")
		val := ""
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			p.skip(" \t")
			var err error
			if val, err = p.value(); err != nil {
				return Link{}, err
			}
		}
		if _, ok := l.Params[name]; !ok {
			l.Params[name] = val
		}
	}
}

func (p *linkParser) value() (string, error) {
	if p.i < len(p.s) && p.s[p.i] == '"' {
		p.i++
		var b strings.Builder
		for p.i < len(p.s) {
			c := p.s[p.i]
			switch {
			case c == '\\' && p.i+1 < len(p.s):
				b.WriteByte(p.s[p.i+1])
				p.i += 2
			case c == '"':
				p.i++
				return b.String(), nil
			default:
				b.WriteByte(c)
				p.i++
			}
		}
		return "", p.errorf("unterminated quoted value")
	}
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != ';' && p.s[p.i] != ',' {
		p.i++
	}
	return strings.TrimSpace(p.s[start:p.i]), nil
}

func isTokenChar(c byte) bool {
	return c > ' ' && c < 0x7f && !strings.ContainsRune(`()<>@,;:\"/[]?={}`, rune(c))
}

// Memento is one memento of an aggregated TimeMap.
type Memento struct {
	URI      string    `json:"uri"`
	Datetime time.Time `json:"datetime"`
	// Archive is the name of the archive that listed it.
	Archive string `json:"archive"`
}

// mementos returns the links with a "memento" relation and a datetime,
// their targets resolved against base; bad counts the memento links whose
// datetime or target could not be read.
func mementos(links []Link, base *url.URL, archive string) (out []Memento, bad int) {
	for _, l := range links {
		if !l.HasRel("memento") {
			continue
		}
		if m, ok := memento(l.Target, l.Params["datetime"], base, archive); ok {
			out = append(out, m)
		} else {
			bad++
		}
	}
	return out, bad
}

// memento reads one memento link's target (resolved against base) and
// datetime.
func memento(target, datetime string, base *url.URL, archive string) (Memento, bool) {
	t, err := http.ParseTime(strings.TrimSpace(datetime))
	if err != nil {
		return Memento{}, false
	}
	if plainAbsolute(target) {
		// What parsing, resolving and printing would give back.
		return Memento{URI: target, Datetime: t.UTC(), Archive: archive}, true
	}
	u, err := url.Parse(target)
	if err != nil {
		return Memento{}, false
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Memento{}, false
	}
	return Memento{URI: u.String(), Datetime: t.UTC(), Archive: archive}, true
}

// plainAbsolute reports whether s is an absolute http(s) URL that
// url.Parse, ResolveReference and String would give back unchanged: a
// lower-case scheme, a host of letters, digits, '.', '-' and an optional
// port, a path and query of unreserved and sub-delimiter characters, no
// percent-escapes, no dot segments, no fragment.
func plainAbsolute(s string) bool {
	var rest string
	switch {
	case strings.HasPrefix(s, "http://"):
		rest = s[7:]
	case strings.HasPrefix(s, "https://"):
		rest = s[8:]
	default:
		return false
	}
	i := 0
	for ; i < len(rest) && rest[i] != '/'; i++ {
		c := rest[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':') {
			return false
		}
	}
	if i == 0 || i == len(rest) {
		return false
	}
	if h, port, ok := strings.Cut(rest[:i], ":"); ok && (h == "" || port == "" || strings.Trim(port, "0123456789") != "") {
		return false
	}
	path := rest[i:]
	if strings.Contains(path, "/.") {
		return false
	}
	q := false
	for j := 0; j < len(path); j++ {
		c := path[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~/:@!$&'()*+,;=", c) >= 0:
		case c == '?' && !q:
			q = true
		default:
			return false
		}
	}
	return true
}

// fastMementos reads a link-format chunk whose every line is one entry
// in the plain form TimeMaps are written in (`<target>; name="value";
// name=value,`, no escapes, one entry a line), without the maps
// of ParseLinks; ok is false when a line is not in that form (the caller
// then parses the chunk with ParseLinks). It returns the mementos, the
// entries read and the memento entries that could not be read, as
// ParseLinks and mementos would.
func fastMementos(chunk []byte, base *url.URL, archive string) (out []Memento, n, bad int, ok bool) {
	for len(chunk) > 0 {
		var line []byte
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			line, chunk = chunk[:i], chunk[i+1:]
		} else {
			line, chunk = chunk, nil
		}
		line = bytes.TrimSpace(line)
		line = bytes.TrimSuffix(line, []byte(","))
		if len(line) == 0 {
			continue
		}
		if line[0] != '<' {
			return nil, 0, 0, false
		}
		end := bytes.IndexByte(line, '>')
		if end < 0 || bytes.IndexByte(line[1:], '<') >= 0 {
			return nil, 0, 0, false
		}
		target := strings.TrimSpace(string(line[1:end]))
		rest := line[end+1:]
		var rel, dt []byte
		haveRel, haveDT := false, false
		for len(bytes.TrimSpace(rest)) > 0 {
			rest = bytes.TrimLeft(rest, " \t")
			if rest[0] != ';' {
				return nil, 0, 0, false
			}
			rest = bytes.TrimLeft(rest[1:], " \t")
			eq := bytes.IndexByte(rest, '=')
			if eq <= 0 {
				return nil, 0, 0, false
			}
			name := bytes.TrimSpace(rest[:eq])
			rest = bytes.TrimLeft(rest[eq+1:], " \t")
			var val []byte
			if len(rest) > 0 && rest[0] == '"' {
				q := bytes.IndexByte(rest[1:], '"')
				if q < 0 || bytes.IndexByte(rest[1:q+1], '\\') >= 0 {
					return nil, 0, 0, false
				}
				val, rest = rest[1:q+1], rest[q+2:]
			} else {
				j := bytes.IndexAny(rest, ";,")
				if j < 0 {
					j = len(rest)
				}
				val, rest = bytes.TrimSpace(rest[:j]), rest[j:]
			}
			if len(rest) > 0 && rest[0] == ',' {
				return nil, 0, 0, false
			}
			switch {
			case bytes.EqualFold(name, []byte("rel")) && !haveRel:
				rel, haveRel = val, true
			case bytes.EqualFold(name, []byte("datetime")) && !haveDT:
				dt, haveDT = val, true
			}
		}
		n++
		if !isMementoRel(rel) {
			continue
		}
		if m, ok := memento(target, string(dt), base, archive); ok {
			out = append(out, m)
		} else {
			bad++
		}
	}
	return out, n, bad, true
}

// isMementoRel reports whether a rel value lists "memento".
func isMementoRel(rel []byte) bool {
	for _, f := range bytes.Fields(rel) {
		if bytes.EqualFold(f, []byte("memento")) {
			return true
		}
	}
	return false
}
