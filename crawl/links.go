package crawl

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/net/html"
)

// linkAttrs lists the attributes besides href that carry URLs a crawler
// follows: all of them embeds.
var linkAttrs = map[string]bool{"src": true, "poster": true, "data": true, "background": true}

var cssURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)url\(\s*['"]?([^'")\s]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]`)
})

// decodeContent undoes a gzip or deflate Content-Encoding for link
// extraction (the record keeps the encoded bytes). maxOut bounds the output.
func decodeContent(payload []byte, encoding string, maxOut int64) []byte {
	var r io.Reader
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return payload
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return nil
		}
		r = zr
	case "deflate":
		r = flate.NewReader(bytes.NewReader(payload))
	default:
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(r, maxOut))
	return b
}

// linkBearing reports whether extractLinks looks into bodies of this type.
func linkBearing(mime string) bool {
	return strings.Contains(mime, "html") || strings.Contains(mime, "css")
}

// link is a URL found in a page and how: HopLink for navigation (A and
// AREA href, LINK href of other relations), HopEmbed for what renders the
// page (src, srcset, poster, data, background, stylesheets and icons,
// CSS url() and @import), as Heritrix's extractors tell them apart.
type link struct {
	u   *url.URL
	hop byte
}

// extractLinks returns the absolute URLs referenced by an HTML or CSS body.
func extractLinks(base *url.URL, mime string, body []byte) []link {
	var raw []rawLink
	switch {
	case strings.Contains(mime, "html"):
		raw = htmlLinks(body, &base)
	case strings.Contains(mime, "css"):
		raw = cssLinks(string(body))
	default:
		return nil
	}
	var out []link
	for _, r := range raw {
		s := strings.TrimSpace(r.s)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		u, err := base.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		out = append(out, link{u: u, hop: r.hop})
	}
	return out
}

// rawLink is a reference as written in a page.
type rawLink struct {
	s   string
	hop byte
}

// cssLinks returns the url() and @import references of a style sheet:
// embeds of the page that uses it.
func cssLinks(s string) []rawLink {
	var out []rawLink
	for _, m := range cssURL().FindAllStringSubmatch(s, -1) {
		if m[1] != "" {
			out = append(out, rawLink{m[1], HopEmbed})
		} else if m[2] != "" {
			out = append(out, rawLink{m[2], HopEmbed})
		}
	}
	return out
}

// embedRels are the LINK relations whose target renders the page (an
// embed); other relations (alternate, next, canonical...) are links.
var embedRels = map[string]bool{"stylesheet": true, "icon": true, "apple-touch-icon": true, "preload": true,
	"modulepreload": true, "prefetch": true, "manifest": true, "mask-icon": true}

func htmlLinks(body []byte, base **url.URL) []rawLink {
	z := html.NewTokenizer(bytes.NewReader(body))
	var out []rawLink
	inStyle := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.TextToken:
			if inStyle {
				out = append(out, cssLinks(string(z.Text()))...)
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "style" {
				inStyle = false
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			if tag == "style" {
				inStyle = true
			}
			var href string
			hrefHop := byte(HopLink)
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				key := string(k)
				switch {
				case tag == "base" && key == "href":
					if u, err := (*base).Parse(string(v)); err == nil {
						*base = u
					}
				case key == "srcset":
					for _, part := range strings.Split(string(v), ",") {
						if f := strings.Fields(part); len(f) > 0 {
							out = append(out, rawLink{f[0], HopEmbed})
						}
					}
				case key == "style":
					out = append(out, cssLinks(string(v))...)
				case tag == "link" && key == "rel":
					for _, rel := range strings.Fields(strings.ToLower(string(v))) {
						if embedRels[rel] {
							hrefHop = HopEmbed
						}
					}
				case key == "href":
					if tag == "a" || tag == "link" || tag == "area" {
						href = string(v)
					}
				case linkAttrs[key]:
					out = append(out, rawLink{string(v), HopEmbed})
				}
			}
			if href != "" {
				// After every attribute: rel may come after href.
				out = append(out, rawLink{href, hrefHop})
			}
		}
	}
}
