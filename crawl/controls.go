package crawl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Filter narrows a crawl's scope by URL: a URL is fetched when it matches
// an Include pattern (any URL when there is none), matches no Exclude
// pattern and is on no excluded host. robots.txt and sitemap files are
// fetched regardless (they are prerequisites, not content); seeds and the
// URLs sitemaps list are filtered like links.
type Filter struct {
	// Include and Exclude are regular expressions matched against the
	// whole URL as it would be fetched (u.String()); unanchored.
	Include, Exclude []*regexp.Regexp
	// ExcludeHosts are host names (a port, if given, must match too);
	// each also excludes its subdomains.
	ExcludeHosts []string
}

// Check returns "" when u may be fetched, else why not.
func (f *Filter) Check(u *url.URL) string {
	if f == nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	hostPort := strings.ToLower(u.Host)
	for _, h := range f.ExcludeHosts {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if _, _, err := net.SplitHostPort(h); err == nil {
			if hostPort == h {
				return "host " + h + " is excluded (--exclude-host)"
			}
			continue
		}
		if host == h || strings.HasSuffix(host, "."+h) {
			return "host " + h + " is excluded (--exclude-host)"
		}
	}
	s := u.String()
	for _, re := range f.Exclude {
		if re.MatchString(s) {
			return "matches --exclude " + re.String()
		}
	}
	if len(f.Include) == 0 {
		return ""
	}
	for _, re := range f.Include {
		if re.MatchString(s) {
			return ""
		}
	}
	return "matches no --include pattern"
}

// CompilePatterns compiles regular expressions given as flag values; the
// error names the flag and the pattern.
func CompilePatterns(flag string, pats []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range pats {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("crawl: %s %q: %w", flag, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// ReadSeeds reads seed URLs one a line from r (named name in errors):
// blank lines and lines starting with '#' are skipped; a bad URL is an
// error naming its line.
func ReadSeeds(r io.Reader, name string) ([]*url.URL, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []*url.URL
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, err := ParseSeed(line)
		if err != nil {
			return nil, fmt.Errorf("crawl: seeds %s line %d: %w", name, n, err)
		}
		out = append(out, u)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("crawl: seeds %s: %w", name, err)
	}
	return out, nil
}

// SitemapLimits bound what sitemaps may cost a crawl. The defaults are the
// sitemaps.org protocol's own limits per file, and 100 files.
type SitemapLimits struct {
	MaxFiles int   // sitemap files fetched per crawl (default 100)
	MaxBytes int64 // bytes of one sitemap after gunzip (default 50 MiB)
	MaxURLs  int   // <loc> entries taken from one sitemap (default 50,000)
}

func (l *SitemapLimits) defaults() {
	if l.MaxFiles <= 0 {
		l.MaxFiles = 100
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 50 << 20
	}
	if l.MaxURLs <= 0 {
		l.MaxURLs = 50000
	}
}

// errSitemapTooBig reports a sitemap over SitemapLimits.MaxBytes.
var errSitemapTooBig = errors.New("sitemap larger than the limit")

// parseSitemap reads a sitemap (urlset) or sitemap index (sitemapindex),
// gzip-compressed or not, and returns its <loc> URLs resolved against
// base. index tells which kind it was. At most lim.MaxURLs are returned
// (truncated reports that more were listed).
func parseSitemap(base *url.URL, body []byte, lim SitemapLimits) (locs []*url.URL, index, truncated bool, err error) {
	var r io.Reader = bytes.NewReader(body)
	if len(body) >= 2 && body[0] == 0x1f && body[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, false, false, fmt.Errorf("crawl: sitemap %s: %w", base, err)
		}
		r = zr
	}
	lr := &io.LimitedReader{R: r, N: lim.MaxBytes + 1}
	d := xml.NewDecoder(lr)
	d.Strict = false
	var root string
	inLoc := false
	var loc strings.Builder
	for {
		tok, terr := d.Token()
		if terr == io.EOF {
			break
		}
		if terr != nil {
			if lr.N <= 0 {
				return locs, index, true, fmt.Errorf("crawl: sitemap %s: %w (%d bytes)", base, errSitemapTooBig, lim.MaxBytes)
			}
			if len(locs) > 0 {
				return locs, index, false, fmt.Errorf("crawl: sitemap %s: %w", base, terr)
			}
			return nil, false, false, fmt.Errorf("crawl: sitemap %s: not a sitemap: %w", base, terr)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = t.Name.Local
				switch root {
				case "sitemapindex":
					index = true
				case "urlset":
				default:
					return nil, false, false, fmt.Errorf("crawl: sitemap %s: root element <%s> is neither <urlset> nor <sitemapindex>", base, root)
				}
			}
			if t.Name.Local == "loc" {
				inLoc = true
				loc.Reset()
			}
		case xml.CharData:
			if inLoc && loc.Len() < 8<<10 {
				loc.Write(t)
			}
		case xml.EndElement:
			if t.Name.Local == "loc" && inLoc {
				inLoc = false
				if len(locs) >= lim.MaxURLs {
					return locs, index, true, nil
				}
				if u, perr := base.Parse(strings.TrimSpace(loc.String())); perr == nil && (u.Scheme == "http" || u.Scheme == "https") {
					u.Fragment, u.RawFragment = "", ""
					locs = append(locs, u)
				}
			}
		}
	}
	if root == "" {
		return nil, false, false, fmt.Errorf("crawl: sitemap %s: empty", base)
	}
	return locs, index, false, nil
}
