package crawl

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/url"
	"strings"
	"testing"
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
