package crawl

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"io"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// linkAttrs lists the attributes that carry URLs a crawler follows.
var linkAttrs = map[string]bool{"href": true, "src": true, "poster": true, "data": true, "background": true}

var cssURL = regexp.MustCompile(`(?i)url\(\s*['"]?([^'")\s]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]`)

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

// extractLinks returns the absolute URLs referenced by an HTML or CSS body.
func extractLinks(base *url.URL, mime string, body []byte) []*url.URL {
	var raw []string
	switch {
	case strings.Contains(mime, "html"):
		raw = htmlLinks(body, &base)
	case strings.Contains(mime, "css"):
		raw = cssLinks(string(body))
	default:
		return nil
	}
	var out []*url.URL
	for _, s := range raw {
		s = strings.TrimSpace(s)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		u, err := base.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		out = append(out, u)
	}
	return out
}

func cssLinks(s string) []string {
	var out []string
	for _, m := range cssURL.FindAllStringSubmatch(s, -1) {
		if m[1] != "" {
			out = append(out, m[1])
		} else if m[2] != "" {
			out = append(out, m[2])
		}
	}
	return out
}

func htmlLinks(body []byte, base **url.URL) []string {
	z := html.NewTokenizer(bytes.NewReader(body))
	var out []string
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
							out = append(out, f[0])
						}
					}
				case key == "style":
					out = append(out, cssLinks(string(v))...)
				case linkAttrs[key]:
					if tag == "a" || tag == "link" || tag == "area" || key != "href" {
						out = append(out, string(v))
					}
				}
			}
		}
	}
}
