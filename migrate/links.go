package migrate

import (
	"bytes"
	"html"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"

	xhtml "golang.org/x/net/html"
)

// Renames maps the URI of each object the replace workflow migrated (its
// record's WARC-Target-URI, normalised by NormURI) to the URI the
// migrated object gets: the same URI with the target format's extension.
type Renames map[string]string

// NormURI is the form Renames keys take: the URI parsed and printed again,
// host in lower case, without the scheme's default port or a fragment (so
// that "http://H:80/a b.bmp" and "http://h/a%20b.bmp" are one key). A URI
// that does not parse is kept.
func NormURI(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return s
	}
	u.Fragment, u.RawFragment = "", ""
	u.Host = strings.ToLower(u.Host)
	if p := u.Port(); (p == "80" && u.Scheme == "http") || (p == "443" && u.Scheme == "https") {
		u.Host = strings.TrimSuffix(u.Host, ":"+p)
	}
	return u.String()
}

// Add records that old becomes new.
func (r Renames) Add(old, new string) { r[NormURI(old)] = new }

// Lookup returns the new URI of old.
func (r Renames) Lookup(old string) (string, bool) {
	n, ok := r[NormURI(old)]
	return n, ok
}

// splitURI cuts s into the part up to its last path segment, that segment,
// and the rest (query and fragment).
func splitURI(s string) (dir, seg, rest string) {
	end := len(s)
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		end = i
	}
	start := 0
	if i := strings.Index(s[:end], "://"); i >= 0 {
		start = i + 3
		// The authority is not a segment.
		if j := strings.IndexByte(s[start:end], '/'); j >= 0 {
			start += j
		} else {
			return s[:end] + "/", "", s[end:]
		}
	}
	slash := strings.LastIndexByte(s[start:end], '/')
	return s[:start+slash+1], s[start+slash+1 : end], s[end:]
}

// NewURI returns the URI the replace workflow gives an object at uri
// migrated to a format of extension ext: the last path segment's
// extension replaced (/img/a.bmp → /img/a.png; a segment without one gets
// it added, an empty one is "index"), query kept. A URI whose segment
// has the extension already (PDF to PDF/A; a BMP served as x.png) stays
// as it is. When the new URI is taken (it names another capture),
// ".EXT" is added to the whole segment (a.bmp.png), then "-2", "-3", ...
// before the extension.
func NewURI(uri, ext string, taken func(string) bool) string {
	dir, seg, rest := splitURI(uri)
	stem := seg
	if i := strings.LastIndexByte(seg, '.'); i > 0 {
		stem = seg[:i]
		if strings.EqualFold(seg[i+1:], ext) {
			return uri
		}
	}
	if stem == "" {
		stem = "index"
	}
	free := func(s string) bool { return NormURI(s) != NormURI(uri) && !taken(s) }
	cand := dir + stem + "." + ext + rest
	if free(cand) {
		return cand
	}
	if seg != "" {
		if cand = dir + seg + "." + ext + rest; free(cand) {
			return cand
		}
	}
	for n := 2; ; n++ {
		if cand = dir + stem + "-" + strconv.Itoa(n) + "." + ext + rest; free(cand) {
			return cand
		}
	}
}

// linkRewriter rewrites references in one record's HTML or CSS.
type linkRewriter struct {
	renames Renames
	base    *url.URL
	// Changed lists "old → new" for every reference rewritten.
	Changed []string
}

// ref returns the replacement of the reference raw (as written in the
// document; unescape turns it into the URL it stands for, escape a URL
// into text for the same place), and whether it names a migrated object.
// The replacement keeps the reference's form — relative, root-relative or
// absolute, query and fragment — changing only its last path segment,
// when that resolves to the new URI; otherwise it is the new URI,
// absolute.
func (lr *linkRewriter) ref(raw string, unescape, escape func(string) string) (string, bool) {
	ref := strings.TrimSpace(unescape(raw))
	if ref == "" || strings.HasPrefix(ref, "#") || strings.HasPrefix(strings.ToLower(ref), "data:") {
		return "", false
	}
	u, err := lr.base.Parse(ref)
	if err != nil {
		return "", false
	}
	frag := ""
	if u.Fragment != "" {
		frag = "#" + u.EscapedFragment()
	}
	newURI, ok := lr.renames.Lookup(u.String())
	if !ok {
		return "", false
	}
	_, newSeg, _ := splitURI(newURI)
	// The raw reference with its last segment replaced (leading and
	// trailing spaces kept as written).
	lead := len(raw) - len(strings.TrimLeft(raw, " \t\r\n\f"))
	body := strings.TrimRight(raw[lead:], " \t\r\n\f")
	trail := raw[lead+len(body):]
	if !strings.Contains(body, "://") && !strings.HasPrefix(body, "//") && !strings.HasPrefix(body, "/") {
		body = "./" + body // splitURI needs a slash before the first segment
		d, _, r := splitURI(body)
		cand := strings.TrimPrefix(d, "./") + newSeg + r
		if v, err := lr.base.Parse(strings.TrimSpace(unescape(cand))); err == nil && NormURI(v.String()) == NormURI(newURI) {
			lr.Changed = append(lr.Changed, u.String()+" → "+newURI)
			return raw[:lead] + cand + trail, true
		}
	} else {
		d, _, r := splitURI(body)
		cand := d + newSeg + r
		if v, err := lr.base.Parse(strings.TrimSpace(unescape(cand))); err == nil && NormURI(v.String()) == NormURI(newURI) {
			lr.Changed = append(lr.Changed, u.String()+" → "+newURI)
			return raw[:lead] + cand + trail, true
		}
	}
	lr.Changed = append(lr.Changed, u.String()+" → "+newURI)
	return raw[:lead] + escape(newURI+frag) + trail, true
}

func identity(s string) string { return s }

var (
	cssURL = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)`)
	})
	cssImport = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)@import\s+(?:"([^"]*)"|'([^']*)')`) })
)

// css rewrites url() and @import references in CSS text.
func (lr *linkRewriter) css(b []byte, unescape, escape func(string) string) []byte {
	type edit struct {
		start, end int
		with       string
	}
	var edits []edit
	for _, re := range []*regexp.Regexp{cssURL(), cssImport()} {
		for _, m := range re.FindAllSubmatchIndex(b, -1) {
			for g := 1; 2*g+1 < len(m); g++ {
				s, e := m[2*g], m[2*g+1]
				if s < 0 {
					continue
				}
				raw := string(b[s:e])
				// In a style attribute the quotes may be escaped.
				for _, q := range []string{"&quot;", "&#34;", "&apos;", "&#39;"} {
					if len(raw) >= 2*len(q) && strings.HasPrefix(raw, q) && strings.HasSuffix(raw, q) {
						s, e, raw = s+len(q), e-len(q), raw[len(q):len(raw)-len(q)]
						break
					}
				}
				if with, ok := lr.ref(raw, unescape, escape); ok {
					edits = append(edits, edit{s, e, with})
				}
			}
		}
	}
	if len(edits) == 0 {
		return b
	}
	// url() inside @import url(...) matches once (the import pattern wants
	// quotes), so edits do not overlap; apply them in order.
	sortEdits := func() {
		for i := 1; i < len(edits); i++ {
			for j := i; j > 0 && edits[j].start < edits[j-1].start; j-- {
				edits[j], edits[j-1] = edits[j-1], edits[j]
			}
		}
	}
	sortEdits()
	var out bytes.Buffer
	at := 0
	for _, ed := range edits {
		if ed.start < at {
			continue
		}
		out.Write(b[at:ed.start])
		out.WriteString(ed.with)
		at = ed.end
	}
	out.Write(b[at:])
	return out.Bytes()
}

// urlAttrs are the attributes holding one URL.
var urlAttrs = map[string]bool{"src": true, "href": true, "poster": true, "data": true, "background": true}

// htmlDoc rewrites the references of an HTML document: src, href, poster,
// data and background attributes, srcset and imagesrcset candidates,
// url() in style attributes and <style> elements. A <base href> changes
// the base references resolve against. Every other byte is kept: the
// document is cut into tokens whose raw bytes are copied, and only the
// values of rewritten attributes change.
func (lr *linkRewriter) htmlDoc(b []byte) []byte {
	z := xhtml.NewTokenizer(bytes.NewReader(b))
	var out bytes.Buffer
	out.Grow(len(b))
	inStyle := false
	sawBase := false
	read := 0
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			if z.Err() != io.EOF || read != len(b) {
				lr.Changed = nil // not cut exactly into tokens: left alone
				return b
			}
			break
		}
		// A copy: TagName lower-cases the tokenizer's buffer in place.
		raw := append([]byte(nil), z.Raw()...)
		read += len(raw)
		switch tt {
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := strings.ToLower(string(name))
			inStyle = tag == "style" && tt == xhtml.StartTagToken
			out.Write(lr.tag(raw, tag, &sawBase))
		case xhtml.TextToken:
			if inStyle {
				out.Write(lr.css(raw, identity, identity))
			} else {
				out.Write(raw)
			}
		case xhtml.EndTagToken:
			inStyle = false
			out.Write(raw)
		default:
			out.Write(raw)
		}
	}
	return out.Bytes()
}

// tag rewrites the attributes of one start tag (raw bytes).
func (lr *linkRewriter) tag(raw []byte, tag string, sawBase *bool) []byte {
	var out []byte
	at := 0
	for _, a := range scanAttrs(raw) {
		name := strings.ToLower(string(raw[a.nameStart:a.nameEnd]))
		val := string(raw[a.valStart:a.valEnd])
		if tag == "base" && name == "href" && !*sawBase {
			*sawBase = true
			if u, err := lr.base.Parse(strings.TrimSpace(html.UnescapeString(val))); err == nil {
				lr.base = u
			}
			continue
		}
		var with string
		changed := false
		switch {
		case urlAttrs[name]:
			with, changed = lr.ref(val, html.UnescapeString, html.EscapeString)
		case name == "srcset" || name == "imagesrcset":
			with, changed = lr.srcset(val)
		case name == "style":
			if nb := lr.css([]byte(val), html.UnescapeString, html.EscapeString); string(nb) != val {
				with, changed = string(nb), true
			}
		}
		if !changed {
			continue
		}
		if a.quote == 0 && strings.ContainsAny(with, " \t\n\f\r\"'=<>`") {
			with = `"` + strings.ReplaceAll(with, `"`, "&quot;") + `"`
		}
		out = append(out, raw[at:a.valStart]...)
		out = append(out, with...)
		at = a.valEnd
	}
	if out == nil {
		return raw
	}
	return append(out, raw[at:]...)
}

// srcset rewrites the URLs of a srcset value ("a.bmp 1x, b.bmp 2x").
func (lr *linkRewriter) srcset(v string) (string, bool) {
	var out strings.Builder
	changed := false
	i := 0
	for i < len(v) {
		j := i
		for j < len(v) && (isSpace(v[j]) || v[j] == ',') {
			j++
		}
		out.WriteString(v[i:j])
		k := j
		for k < len(v) && !isSpace(v[k]) {
			k++
		}
		u := v[j:k]
		tail := ""
		for strings.HasSuffix(u, ",") {
			u, tail = u[:len(u)-1], ","+tail
		}
		if with, ok := lr.ref(u, html.UnescapeString, html.EscapeString); ok {
			out.WriteString(with)
			changed = true
		} else {
			out.WriteString(u)
		}
		out.WriteString(tail)
		// The descriptors, up to the next comma.
		d := k
		if tail == "" {
			for d < len(v) && v[d] != ',' {
				d++
			}
		}
		out.WriteString(v[k:d])
		i = d
	}
	return out.String(), changed
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

type attrSpan struct {
	nameStart, nameEnd, valStart, valEnd int
	quote                                byte
}

// scanAttrs finds the attributes of a raw start tag, as the HTML
// tokenizer reads them: names, and for those with a value where the value
// (inside its quotes) starts and ends.
func scanAttrs(raw []byte) []attrSpan {
	var out []attrSpan
	i := 1 // past '<'
	for i < len(raw) && !isSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' {
		i++
	}
	for i < len(raw) {
		for i < len(raw) && (isSpace(raw[i]) || raw[i] == '/') {
			i++
		}
		if i >= len(raw) || raw[i] == '>' {
			break
		}
		ns := i
		i++ // a name may start with '='
		for i < len(raw) && !isSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' && raw[i] != '=' {
			i++
		}
		ne := i
		for i < len(raw) && isSpace(raw[i]) {
			i++
		}
		if i >= len(raw) || raw[i] != '=' {
			continue
		}
		i++
		for i < len(raw) && isSpace(raw[i]) {
			i++
		}
		if i >= len(raw) {
			break
		}
		a := attrSpan{nameStart: ns, nameEnd: ne}
		if q := raw[i]; q == '"' || q == '\'' {
			a.quote = q
			a.valStart = i + 1
			e := bytes.IndexByte(raw[i+1:], q)
			if e < 0 {
				break // unterminated: leave the rest alone
			}
			a.valEnd = i + 1 + e
			i = a.valEnd + 1
		} else {
			a.valStart = i
			for i < len(raw) && !isSpace(raw[i]) && raw[i] != '>' {
				i++
			}
			a.valEnd = i
		}
		out = append(out, a)
	}
	return out
}

// RewriteLinks rewrites the references to renamed objects in an HTML or
// CSS document at uri (kind "html" or "css"), returning the new bytes and
// the references changed ("old → new"), or b itself and none. An HTML
// document whose tokens do not add up to its bytes is left alone.
func RewriteLinks(b []byte, kind, uri string, renames Renames) ([]byte, []string) {
	if len(renames) == 0 {
		return b, nil
	}
	base, err := url.Parse(uri)
	if err != nil {
		return b, nil
	}
	lr := &linkRewriter{renames: renames, base: base}
	var out []byte
	switch kind {
	case "html":
		out = lr.htmlDoc(b)
	case "css":
		out = lr.css(b, identity, identity)
	default:
		return b, nil
	}
	if len(lr.Changed) == 0 {
		return b, nil
	}
	return out, lr.Changed
}

// LinkKind tells whether a payload of media type mime holds links the
// replace workflow rewrites: "html", "css" or "".
func LinkKind(mime string) string {
	switch strings.ToLower(mime) {
	case "text/html", "application/xhtml+xml":
		return "html"
	case "text/css":
		return "css"
	}
	return ""
}
