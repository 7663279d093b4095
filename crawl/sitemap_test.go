package crawl

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
)

func TestParseSitemap(t *testing.T) {
	base, _ := url.Parse("http://example.org/sitemap.xml")
	index := `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://example.org/a.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>
  <sitemap><loc> /b.xml </loc></sitemap>
</sitemapindex>`
	locs, isIndex, trunc, err := parseSitemap(base, []byte(index), SitemapLimits{MaxFiles: 1, MaxBytes: 1 << 20, MaxURLs: 10})
	if err != nil || !isIndex || trunc || len(locs) != 2 || locs[0].String() != "http://example.org/a.xml.gz" || locs[1].String() != "http://example.org/b.xml" {
		t.Fatalf("index: %v %v %v %v", locs, isIndex, trunc, err)
	}
	var set strings.Builder
	set.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for i := range 20 {
		fmt.Fprintf(&set, "<url><loc>http://example.org/p%d?a=1&amp;b=2</loc></url>", i)
	}
	set.WriteString("<url><loc>ftp://example.org/x</loc></url></urlset>")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(set.String()))
	zw.Close()
	locs, isIndex, trunc, err = parseSitemap(base, gz.Bytes(), SitemapLimits{MaxBytes: 1 << 20, MaxURLs: 5})
	if err != nil || isIndex || !trunc || len(locs) != 5 || locs[0].String() != "http://example.org/p0?a=1&b=2" {
		t.Fatalf("urlset (gzip, 5 of 20): %v %v %v %v", locs, isIndex, trunc, err)
	}
	locs, _, trunc, err = parseSitemap(base, []byte(set.String()), SitemapLimits{MaxBytes: 400, MaxURLs: 50})
	if err == nil || !trunc || len(locs) == 0 || len(locs) >= 20 {
		t.Fatalf("urlset over 400 bytes: %d locs, truncated %v, err %v; want the first URLs and an error", len(locs), trunc, err)
	}
	if _, _, _, err := parseSitemap(base, []byte("<html><body>no</body></html>"), SitemapLimits{MaxBytes: 1 << 20, MaxURLs: 5}); err == nil || !strings.Contains(err.Error(), "<html>") {
		t.Fatalf("HTML page as sitemap: %v", err)
	}
}

// TestCrawlerSitemapLimits: a sitemap index naming six sitemaps (one a
// sitemap index again, one listing more URLs than allowed) is read within
// SitemapLimits: at most MaxFiles sitemap files are fetched, at most
// MaxURLs URLs taken from each, and the crawl goes on.
func TestCrawlerSitemapLimits(t *testing.T) {
	srv, _, err := sitetest.StartWith(func(base string) *sitetest.Site {
		s := sitetest.New()
		var idx strings.Builder
		idx.WriteString(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for i := range 6 {
			fmt.Fprintf(&idx, "<sitemap><loc>%s/sm/%d.xml</loc></sitemap>", base, i)
			var set strings.Builder
			set.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for j := range 4 {
				fmt.Fprintf(&set, "<url><loc>%s/p/%d-%d.html</loc></url>", base, i, j)
				s.Add(&sitetest.Resource{Path: fmt.Sprintf("/p/%d-%d.html", i, j), ContentType: "text/html", Body: []byte("<p>page</p>")})
			}
			set.WriteString("</urlset>")
			s.Add(&sitetest.Resource{Path: fmt.Sprintf("/sm/%d.xml", i), ContentType: "application/xml", Body: []byte(set.String())})
		}
		idx.WriteString("</sitemapindex>")
		s.Add(&sitetest.Resource{Path: "/sitemap.xml", ContentType: "application/xml", Body: []byte(idx.String())})
		s.Add(&sitetest.Resource{Path: "/robots.txt", ContentType: "text/plain", Body: []byte("User-agent: *\nDisallow: /private/\nSitemap: " + base + "/sitemap.xml\n")})
		return s
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	got, st := fetchedPaths(t, srv, CrawlConfig{MaxDepth: 0, Sitemaps: true,
		SitemapLimits: SitemapLimits{MaxFiles: 3, MaxURLs: 2}}, nil)
	// Depth 0: the seed, robots.txt, 3 sitemap files (the index and the
	// first two sitemaps it names) and 2 URLs from each of those two.
	want := []string{"/", "/p/0-0.html", "/p/0-1.html", "/p/1-0.html", "/p/1-1.html", "/robots.txt", "/sitemap.xml", "/sm/0.xml", "/sm/1.xml"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fetched %v\nwant    %v", got, want)
	}
	if st.Sitemaps != 3 || st.Errors != 0 {
		t.Errorf("stats %+v, want 3 sitemaps read and no error", st)
	}
}
