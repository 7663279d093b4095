package crawl

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CrawlLogName is the name of the per-URL log a crawl writes in its WARC
// directory.
const CrawlLogName = "crawl.log"

// Fetch status codes of a crawl.log line that are not HTTP statuses
// (Heritrix's values, so tools reading Heritrix logs count them alike).
const (
	LogDNSFailed     = -1    // DNS lookup failed
	LogConnectFailed = -2    // connection refused or unreachable
	LogConnectBroken = -3    // connection reset or cut mid-fetch
	LogTimeout       = -4    // no answer in time
	LogOtherError    = -5    // any other error (the record could not be stored...)
	LogRobotsFailed  = -61   // robots.txt could not be fetched: the host's URLs are not (RFC 9309: unreachable means disallow)
	LogRobots        = -9998 // robots.txt precluded the fetch
)

// Hop codes of a discovery path: Heritrix's letters (its Hop enum: L
// navlink, P prerequisite, E embed, X speculative, R refer, I inferred, S
// form submit, M manifest). The crawler writes L, E, R, P and M; it
// extracts no URLs from scripts (X), infers none (I) and submits no forms
// (S).
const (
	HopLink     = 'L' // a navigation link: A or AREA href, LINK href of other relations than embedRels
	HopEmbed    = 'E' // an embed: src, srcset, poster, data, background, LINK rel=stylesheet/icon/preload..., CSS url() and @import
	HopRedirect = 'R' // a redirect's Location
	HopPrereq   = 'P' // a prerequisite: robots.txt
	HopManifest = 'M' // a sitemap named in robots.txt or a sitemap index, and the URLs a sitemap lists
)

// maxPathHops bounds the discovery path written, like Heritrix 3.1+ (the
// last 50 hops, the rest counted in front).
const maxPathHops = 50

// LogEntry is one line of crawl.log: one URL the crawler attempted.
type LogEntry struct {
	Status      int           // HTTP status, or a negative Log* code
	Size        int64         // payload (entity) bytes received; -1 when none
	URI         string        // the URL
	Path        string        // discovery path: hop codes from the seed ("" for a seed)
	Via         string        // the URL it was discovered from ("" for a seed)
	MIME        string        // the response's media type
	Worker      int           // the crawler worker that fetched it
	Start       time.Time     // when the fetch began (zero: no fetch)
	Duration    time.Duration // how long it took
	Digest      string        // payload digest, "sha1:BASE32"
	Source      string        // the seed it descends from, when tagged
	Annotations []string      // e.g. "duplicate:digest", "lenTrunc"
}

// CrawlLog writes crawl.log lines in Heritrix 3's field layout:
//
//	timestamp status size URI discovery-path referrer MIME #worker fetch-start+ms digest source annotations
//
// one line per URL the crawler attempted (fetched, failed, or precluded by
// robots.txt), "-" for an empty field. Each line is one append write, so
// the file holds whole lines after a crash, except perhaps the last.
type CrawlLog struct {
	mu  sync.Mutex
	f   *os.File
	err error
	now func() time.Time
}

// OpenCrawlLog opens (appending to) the crawl.log at path.
func OpenCrawlLog(path string) (*CrawlLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("crawl: crawl log: %w", err)
	}
	return &CrawlLog{f: f, now: time.Now}, nil
}

// Write appends one line; the first write error is kept and returned by
// Close (the log is a report: a failed line does not stop the crawl).
func (l *CrawlLog) Write(e LogEntry) {
	if l == nil {
		return
	}
	line := FormatLogLine(l.now(), e)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if _, err := l.f.WriteString(line); err != nil {
		l.err = fmt.Errorf("crawl: crawl log: %w", err)
	}
}

// Close syncs and closes the file; it returns the first error met.
func (l *CrawlLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.err
	if serr := l.f.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("crawl: crawl log: %w", serr)
	}
	if cerr := l.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("crawl: crawl log: %w", cerr)
	}
	return err
}

// FormatLogLine formats e as a crawl.log line logged at now, with its
// newline.
func FormatLogLine(now time.Time, e LogEntry) string {
	var b strings.Builder
	b.WriteString(now.UTC().Format("2006-01-02T15:04:05.000Z"))
	b.WriteByte(' ')
	fmt.Fprintf(&b, "%5d ", e.Status)
	if e.Size < 0 {
		fmt.Fprintf(&b, "%10s ", "-")
	} else {
		fmt.Fprintf(&b, "%10d ", e.Size)
	}
	b.WriteString(field(e.URI))
	b.WriteByte(' ')
	b.WriteString(field(shortPath(e.Path)))
	b.WriteByte(' ')
	b.WriteString(field(e.Via))
	b.WriteByte(' ')
	b.WriteString(field(e.MIME))
	fmt.Fprintf(&b, " #%03d ", e.Worker)
	if e.Start.IsZero() {
		b.WriteByte('-')
	} else {
		b.WriteString(strings.Replace(e.Start.UTC().Format("20060102150405.000"), ".", "", 1)) // 17 digits
		b.WriteByte('+')
		b.WriteString(strconv.FormatInt(e.Duration.Milliseconds(), 10))
	}
	b.WriteByte(' ')
	b.WriteString(field(e.Digest))
	b.WriteByte(' ')
	b.WriteString(field(e.Source))
	b.WriteByte(' ')
	b.WriteString(field(strings.Join(e.Annotations, ",")))
	b.WriteByte('\n')
	return b.String()
}

// field spells an empty field "-" and keeps a field one token: spaces
// (never in a URL the crawler fetches) become %20.
func field(s string) string {
	if s == "" {
		return "-"
	}
	if strings.ContainsAny(s, " \t\r\n") {
		s = strings.NewReplacer(" ", "%20", "\t", "%09", "\r", "%0D", "\n", "%0A").Replace(s)
	}
	return s
}

// shortPath keeps the last maxPathHops hops, prefixed with the number of
// hops left out ("12+LLLL..."), as Heritrix does.
func shortPath(p string) string {
	if len(p) <= maxPathHops {
		return p
	}
	return strconv.Itoa(len(p)-maxPathHops) + "+" + p[len(p)-maxPathHops:]
}
