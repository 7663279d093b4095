package replay

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Rewriter rewrites the links of one archived resource so that they point
// back into the archive: each becomes a URI-M, Prefix + timestamp +
// modifier + "/" + the absolute URL, which the archive answers with the
// capture closest in time.
type Rewriter struct {
	// Prefix starts every URI-M: the collection's path with a trailing
	// slash ("/web/"), optionally after a scheme and host
	// ("http://localhost:8080/web/").
	Prefix string
	// Timestamp is the 14-digit timestamp of the resource being replayed.
	Timestamp string
	// Base is the URI-R of the resource, against which relative links are
	// resolved (a <base href> in HTML replaces it).
	Base *url.URL
}

// NewRewriter returns a Rewriter for the resource uriR captured at ts, or
// an error when uriR does not parse.
func NewRewriter(prefix, ts, uriR string) (*Rewriter, error) {
	u, err := url.Parse(uriR)
	if err != nil {
		return nil, err
	}
	return &Rewriter{Prefix: prefix, Timestamp: ts, Base: u}, nil
}

// Replay modifiers, as pywb and Wayback write them after the timestamp of
// an embedded resource's URI-M. Wayside's replay treats them all alike
// except id_ (raw): they only tell a reader what kind of link it was.
const (
	ModImage  = "im_"
	ModScript = "js_"
	ModCSS    = "cs_"
	ModFrame  = "if_"
	ModObject = "oe_"
	ModRaw    = "id_"
)

// URL returns the URI-M of ref (a link found in the resource) with
// modifier mod. Fragment-only links, empty links, links that are already
// URI-Ms of this archive and non-web schemes (javascript:, data:, mailto:,
// blob:, about:, tel:) are returned unchanged; a fragment is kept after the
// URI-M.
func (rw *Rewriter) URL(ref, mod string) string {
	t := strings.TrimSpace(ref)
	if t == "" || t[0] == '#' || strings.HasPrefix(t, rw.Prefix) || rw.isLocal(t) {
		return ref
	}
	if i := strings.IndexByte(t, ':'); i > 0 && !strings.ContainsAny(t[:i], "/?#") {
		switch strings.ToLower(t[:i]) {
		case "http", "https":
		default:
			return ref // javascript:, data:, mailto:, blob:, about:, tel:, ...
		}
		return rw.Prefix + rw.Timestamp + mod + "/" + t
	}
	abs, err := rw.Base.Parse(t)
	if err != nil || (abs.Scheme != "http" && abs.Scheme != "https") {
		return ref
	}
	return rw.Prefix + rw.Timestamp + mod + "/" + abs.String()
}

// isLocal reports whether a host-relative link already points into the
// archive (the Prefix's path when the Prefix carries a host).
func (rw *Rewriter) isLocal(t string) bool {
	if !strings.Contains(rw.Prefix, "://") || !strings.HasPrefix(t, "/") || strings.HasPrefix(t, "//") {
		return false
	}
	_, p, _ := strings.Cut(rw.Prefix[strings.Index(rw.Prefix, "://")+3:], "/")
	return strings.HasPrefix(t, "/"+p)
}

// Location rewrites a redirect target (Location, Content-Location): the
// URI-M of the resolved target, with no modifier (a redirect is followed
// as a top-level navigation or with the request's own modifier by the
// archive).
func (rw *Rewriter) Location(loc, mod string) string { return rw.URL(loc, mod) }

var (
	cssURL    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)url\(\s*(['"]?)([^'")]*)(['"]?)\s*\)`) })
	cssImport = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)@import\s+(['"])([^'"]*)(['"])`) })
)

// CSS rewrites url(...) references and @import strings of a stylesheet.
func (rw *Rewriter) CSS(css []byte) []byte {
	out := cssURL().ReplaceAllFunc(css, func(m []byte) []byte {
		sub := cssURL().FindSubmatch(m)
		if len(bytes.TrimSpace(sub[2])) == 0 {
			return m
		}
		return []byte("url(" + string(sub[1]) + rw.URL(string(sub[2]), ModImage) + string(sub[3]) + ")")
	})
	return cssImport().ReplaceAllFunc(out, func(m []byte) []byte {
		sub := cssImport().FindSubmatch(m)
		return []byte("@import " + string(sub[1]) + rw.URL(string(sub[2]), ModCSS) + string(sub[3]))
	})
}

// rawTextTags hold text the HTML scanner must not look into for tags.
var rawTextTags = map[string]bool{"script": true, "style": true, "textarea": true, "title": true, "xmp": true, "noembed": true, "noframes": true}

// HTML rewrites the links of an HTML document: URL attributes (href, src,
// srcset, poster, action, data, background, cite, formaction, longdesc)
// with a modifier by element (im_ images and media, js_ scripts, cs_
// stylesheets, if_ frames, oe_ objects and embeds, none for anchors and
// forms), inline style attributes and <style> elements as CSS, and the URL
// of <meta http-equiv="refresh">. A <base href> is rewritten and then used
// to resolve the links after it. Everything else — text, comments,
// scripts, attribute quoting and order — is kept byte for byte.
func (rw *Rewriter) HTML(src []byte) []byte {
	base := *rw
	r := &base
	out := make([]byte, 0, len(src)+len(src)/4)
	i := 0
	for i < len(src) {
		j := bytes.IndexByte(src[i:], '<')
		if j < 0 {
			out = append(out, src[i:]...)
			break
		}
		out = append(out, src[i:i+j]...)
		i += j
		rest := src[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			end := bytes.Index(rest[4:], []byte("-->"))
			if end < 0 {
				return append(out, rest...)
			}
			out = append(out, rest[:4+end+3]...)
			i += 4 + end + 3
		case len(rest) > 1 && (rest[1] == '!' || rest[1] == '?' || rest[1] == '/'):
			end := bytes.IndexByte(rest, '>')
			if end < 0 {
				return append(out, rest...)
			}
			out = append(out, rest[:end+1]...)
			i += end + 1
		case len(rest) > 1 && isLetter(rest[1]):
			t, n := parseTag(rest)
			if n == 0 {
				return append(out, rest...)
			}
			out = r.rewriteTag(out, rest[:n], t)
			i += n
			if rawTextTags[t.name] && !t.selfClosing {
				end := indexFold(src[i:], "</"+t.name)
				if end < 0 {
					end = len(src) - i
				}
				text := src[i : i+end]
				if t.name == "style" {
					text = r.CSS(text)
				}
				out = append(out, text...)
				i += end
			}
		default:
			out = append(out, '<')
			i++
		}
	}
	return out
}

// attr is one attribute of a start tag: name lower-cased, value as written
// (between vs and ve in the tag's bytes; vs < 0 when it has no value).
type attr struct {
	name   string
	vs, ve int
}

type tag struct {
	name        string
	attrs       []attr
	selfClosing bool
}

func (t *tag) get(raw []byte, name string) (string, bool) {
	for _, a := range t.attrs {
		if a.name == name && a.vs >= 0 {
			return string(raw[a.vs:a.ve]), true
		}
	}
	return "", false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// parseTag parses the start tag at the beginning of b ("<name ...>") and
// returns it with its length in bytes (0 when it is not terminated).
func parseTag(b []byte) (tag, int) {
	var t tag
	i := 1
	for i < len(b) && !isSpace(b[i]) && b[i] != '>' && b[i] != '/' {
		i++
	}
	t.name = strings.ToLower(string(b[1:i]))
	for i < len(b) {
		for i < len(b) && (isSpace(b[i]) || b[i] == '/') {
			if b[i] == '/' && i+1 < len(b) && b[i+1] == '>' {
				t.selfClosing = true
			}
			i++
		}
		if i >= len(b) {
			return t, 0
		}
		if b[i] == '>' {
			return t, i + 1
		}
		ns := i
		for i < len(b) && !isSpace(b[i]) && b[i] != '>' && b[i] != '/' && (b[i] != '=' || i == ns) {
			i++
		}
		a := attr{name: strings.ToLower(string(b[ns:i])), vs: -1}
		k := i
		for k < len(b) && isSpace(b[k]) {
			k++
		}
		if k < len(b) && b[k] == '=' {
			k++
			for k < len(b) && isSpace(b[k]) {
				k++
			}
			if k >= len(b) {
				return t, 0
			}
			if q := b[k]; q == '"' || q == '\'' {
				end := bytes.IndexByte(b[k+1:], q)
				if end < 0 {
					return t, 0
				}
				a.vs, a.ve = k+1, k+1+end
				i = k + 1 + end + 1
			} else {
				e := k
				for e < len(b) && !isSpace(b[e]) && b[e] != '>' {
					e++
				}
				a.vs, a.ve = k, e
				i = e
			}
		}
		t.attrs = append(t.attrs, a)
	}
	return t, 0
}

// urlAttrs maps an attribute to the modifier of the links it holds, by
// element ("*" for any element).
var urlAttrs = map[string]map[string]string{
	"href": {"a": "", "area": "", "base": "", "link": ""},
	"src": {"img": ModImage, "image": ModImage, "input": ModImage, "source": ModImage, "video": ModImage, "audio": ModImage, "track": ModObject,
		"script": ModScript, "iframe": ModFrame, "frame": ModFrame, "embed": ModObject},
	"srcset":     {"img": ModImage, "source": ModImage},
	"poster":     {"video": ModImage},
	"data":       {"object": ModObject},
	"action":     {"form": ""},
	"formaction": {"button": "", "input": ""},
	"background": {"*": ModImage},
	"cite":       {"blockquote": "", "q": "", "del": "", "ins": ""},
	"longdesc":   {"img": "", "frame": "", "iframe": ""},
}

var refreshURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(\s*\d*\s*[;,]?\s*url\s*=\s*['"]?)([^'"]*)(['"]?.*)$`)
})

// rewriteTag appends the tag with its link attributes rewritten.
func (rw *Rewriter) rewriteTag(out, raw []byte, t tag) []byte {
	if t.name == "base" {
		if h, ok := t.get(raw, "href"); ok {
			if u, err := rw.Base.Parse(strings.TrimSpace(h)); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
				defer func() { rw.Base = u }()
			}
		}
	}
	last := 0
	for _, a := range t.attrs {
		if a.vs < 0 {
			continue
		}
		v := string(raw[a.vs:a.ve])
		var nv string
		switch {
		case a.name == "style":
			nv = string(rw.CSS([]byte(v)))
		case a.name == "content" && t.name == "meta":
			if eq, _ := t.get(raw, "http-equiv"); strings.EqualFold(strings.TrimSpace(eq), "refresh") {
				if m := refreshURL().FindStringSubmatch(v); m != nil && strings.TrimSpace(m[2]) != "" {
					nv = m[1] + rw.URL(m[2], "") + m[3]
				}
			}
		default:
			mods, ok := urlAttrs[a.name]
			if !ok {
				continue
			}
			mod, ok := mods[t.name]
			if !ok {
				if mod, ok = mods["*"]; !ok {
					continue
				}
			}
			if t.name == "link" && a.name == "href" {
				mod = linkModifier(raw, t)
			}
			if a.name == "srcset" {
				nv = rw.srcset(v, mod)
			} else {
				nv = rw.URL(v, mod)
			}
		}
		if nv == "" || nv == v {
			continue
		}
		out = append(out, raw[last:a.vs]...)
		out = append(out, nv...)
		last = a.ve
	}
	return append(out, raw[last:]...)
}

// linkModifier is cs_ for stylesheets, im_ for icons, none otherwise.
func linkModifier(raw []byte, t tag) string {
	rel, _ := t.get(raw, "rel")
	rel = strings.ToLower(rel)
	switch {
	case strings.Contains(rel, "stylesheet"):
		return ModCSS
	case strings.Contains(rel, "icon"):
		return ModImage
	case strings.Contains(rel, "preload") || strings.Contains(rel, "prefetch"):
		return ModObject
	}
	return ""
}

// srcset rewrites each URL of a srcset list ("a.png 1x, b.png 2x").
func (rw *Rewriter) srcset(v, mod string) string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		lead := len(p) - len(strings.TrimLeft(p, " \t\n\r\f"))
		fields := strings.Fields(p)
		if len(fields) == 0 {
			continue
		}
		u := fields[0]
		k := strings.Index(p, u)
		parts[i] = p[:max(k, lead)] + rw.URL(u, mod) + p[k+len(u):]
	}
	return strings.Join(parts, ",")
}

// indexFold returns the index of the first case-insensitive occurrence of
// the ASCII string s in b, or -1.
func indexFold(b []byte, s string) int {
	n := len(s)
	for i := 0; i+n <= len(b); i++ {
		if b[i] == '<' && bytes.EqualFold(b[i:i+n], []byte(s)) {
			return i
		}
	}
	return -1
}
