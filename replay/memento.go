package replay

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const tsLayout = "20060102150405"

// Timestamp returns the 14-digit timestamp of t.
func Timestamp(t time.Time) string { return t.UTC().Format(tsLayout) }

// HTTPDate formats t as Memento-Datetime and Link datetimes are written
// (RFC 1123, GMT).
func HTTPDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// ParseTimestamp parses a timestamp of 1 to 14 digits as pywb and Wayback
// accept them, padding the missing digits downwards (2014 → 20140101000000)
// or, with up, upwards to the end of the period it names (201402 →
// 20140228235959).
func ParseTimestamp(ts string, up bool) (time.Time, error) {
	if len(ts) == 0 || len(ts) > 14 || strings.Trim(ts, "0123456789") != "" {
		return time.Time{}, fmt.Errorf("timestamp %q: want 1 to 14 digits (yyyyMMddhhmmss or a prefix of it)", ts)
	}
	const down, high = "10000101000000", "99991231235959"
	pad := down
	if up {
		pad = high
	}
	full := ts + pad[len(ts):]
	num := func(a, b int) int {
		n := 0
		for _, c := range full[a:b] {
			n = n*10 + int(c-'0')
		}
		return n
	}
	y, mo, d, h, mi, s := num(0, 4), num(4, 6), num(6, 8), num(8, 10), num(10, 12), num(12, 14)
	// Digits given must form a date; padded ones are brought into range
	// (upwards, the end of the month named).
	given := func(end int) bool { return len(ts) >= end }
	if (given(6) && (mo < 1 || mo > 12)) || (given(8) && d < 1) || (given(10) && h > 23) || (given(12) && mi > 59) || (given(14) && s > 59) {
		return time.Time{}, fmt.Errorf("timestamp %q is not a date", ts)
	}
	mo, h, mi, s = min(max(mo, 1), 12), min(h, 23), min(mi, 59), min(s, 59)
	last := time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	if d > last {
		if given(8) {
			return time.Time{}, fmt.Errorf("timestamp %q is not a date", ts)
		}
		d = last
	}
	d = max(d, 1)
	return time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC), nil
}

// ParseAcceptDatetime parses an Accept-Datetime header (RFC 7089 §2.1.1:
// an RFC 1123 date in GMT; the other HTTP date forms are accepted too).
func ParseAcceptDatetime(v string) (time.Time, error) {
	t, err := http.ParseTime(strings.TrimSpace(v))
	if err != nil {
		return time.Time{}, fmt.Errorf("Accept-Datetime %q: want an RFC 1123 date such as %q", v, "Thu, 01 Jan 2015 00:00:00 GMT")
	}
	return t.UTC(), nil
}

// ParseURIR reads the URI-R of a route: http:// is assumed when the scheme
// is missing (pywb and Wayback accept "example.com/"), "http:/x" (a path
// cleaned by a proxy) is repaired, and the result must be an absolute
// http(s) URL with a host.
func ParseURIR(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("no URI-R given")
	}
	for _, sc := range []string{"http:/", "https:/"} {
		if strings.HasPrefix(strings.ToLower(s), sc) && !strings.HasPrefix(s[len(sc):], "/") {
			s = s[:len(sc)] + "/" + s[len(sc):]
		}
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("URI-R %q: %v", s, unwrapURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("URI-R %q: scheme %q (want http or https)", s, u.Scheme)
	}
	if u.Host == "" || strings.ContainsAny(u.Host, " \t\r\n<>\"") {
		return "", fmt.Errorf("URI-R %q: no valid host", s)
	}
	return s, nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// link is one Link header (or link-format) entry.
func link(target, rel string, attrs ...string) string {
	var b strings.Builder
	b.WriteString("<" + target + `>; rel="` + rel + `"`)
	for i := 0; i+1 < len(attrs); i += 2 {
		b.WriteString("; " + attrs[i] + `="` + attrs[i+1] + `"`)
	}
	return b.String()
}

// mementoLink is a memento's entry in a TimeMap or Link header.
func mementoLink(uriM, rel string, t time.Time) string {
	return link(uriM, rel, "datetime", HTTPDate(t))
}
