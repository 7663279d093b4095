package sitetest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// RequestLog lists the requests a server answered, as "HOST PATH" lines
// (HOST as the client sent it).
type RequestLog struct {
	mu   sync.Mutex
	reqs []string
}

// Requests returns the requests answered so far, sorted.
func (l *RequestLog) Requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.reqs...)
	sort.Strings(out)
	return out
}

// StartWith listens on 127.0.0.1 first and then builds the site with
// build(base), base being "http://127.0.0.1:PORT", so resources can hold
// absolute URLs of the site (robots.txt Sitemap: lines, sitemaps). Every
// request is logged (when it arrives, before a Hold may keep its answer).
func StartWith(build func(base string) *Site) (*Server, *RequestLog, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("sitetest: listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	site := build(base)
	log := &RequestLog{}
	s := &Server{Site: site, URL: base, ln: ln}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.mu.Lock()
		log.reqs = append(log.reqs, r.Host+" "+r.URL.RequestURI())
		log.mu.Unlock()
		if s.holds.wait(w, r) {
			site.ServeHTTP(w, r)
		}
	})}
	go s.srv.Serve(ln)
	return s, log, nil
}

// NewControls returns the example site (New) extended for crawl controls,
// served at base:
//   - robots.txt disallows /private/ and names the sitemap index
//     base/sitemap-index.xml (and a sitemap on another port, out of scope);
//   - the index names /sitemaps/pages.xml.gz (gzip-compressed) and
//     /sitemaps/more.xml;
//   - the sitemaps list pages no page links to: /orphan/a.html (linking
//     /orphan/c.html), /orphan/b.html, /archive/2019/old.html,
//     /private/hidden.html (disallowed by robots.txt), and the same path on
//     "localhost" (another host name of the same server).
func NewControls(base string) *Site {
	s := New()
	localhost := strings.Replace(base, "127.0.0.1", "localhost", 1)
	html := func(title string, links ...string) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>%s</title></head><body><h1>%s</h1>\n", title, title)
		for _, l := range links {
			fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n", l, l)
		}
		b.WriteString("</body></html>\n")
		return []byte(b.String())
	}
	urlset := func(urls ...string) []byte {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
		for _, u := range urls {
			fmt.Fprintf(&b, "  <url><loc>%s</loc><lastmod>2024-05-01</lastmod></url>\n", u)
		}
		b.WriteString("</urlset>\n")
		return []byte(b.String())
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(urlset(base+"/orphan/a.html", base+"/archive/2019/old.html", base+"/private/hidden.html"))
	zw.Close()
	index := `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>` + base + `/sitemaps/pages.xml.gz</loc></sitemap>
  <sitemap><loc>` + base + `/sitemaps/more.xml</loc></sitemap>
</sitemapindex>
`
	for _, r := range []*Resource{
		{Path: "/robots.txt", ContentType: "text/plain", Body: []byte("User-agent: *\nDisallow: /private/\n\nSitemap: " + base + "/sitemap-index.xml\nSitemap: http://127.0.0.1:1/elsewhere.xml\n")},
		{Path: "/sitemap-index.xml", ContentType: "application/xml", Body: []byte(index)},
		{Path: "/sitemaps/pages.xml.gz", ContentType: "application/x-gzip", Body: gz.Bytes()},
		{Path: "/sitemaps/more.xml", ContentType: "application/xml", Body: urlset(base+"/orphan/b.html", base+"/blog/", localhost+"/orphan/b.html")},
		{Path: "/orphan/a.html", ContentType: "text/html", Body: html("A", "/orphan/c.html", "/archive/2020/older.html"), Links: []string{"/orphan/c.html", "/archive/2020/older.html"}},
		{Path: "/orphan/b.html", ContentType: "text/html", Body: html("B")},
		{Path: "/orphan/c.html", ContentType: "text/html", Body: html("C")},
		{Path: "/archive/2019/old.html", ContentType: "text/html", Body: html("Old")},
		{Path: "/archive/2020/older.html", ContentType: "text/html", Body: html("Older")},
		{Path: "/private/hidden.html", ContentType: "text/html", Body: html("Hidden"), Disallowed: true},
	} {
		s.Add(r)
	}
	return s
}
