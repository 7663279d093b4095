package aggregate

import (
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
		t, err := http.ParseTime(strings.TrimSpace(l.Params["datetime"]))
		if err != nil {
			bad++
			continue
		}
		u, err := url.Parse(l.Target)
		if err != nil {
			bad++
			continue
		}
		if base != nil {
			u = base.ResolveReference(u)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			bad++
			continue
		}
		out = append(out, Memento{URI: u.String(), Datetime: t.UTC(), Archive: archive})
	}
	return out, bad
}
