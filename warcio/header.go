package warcio

import (
	"bytes"
	"strings"
	"time"
)

// Field is one header line, as found (name case and order kept; folded
// continuation lines joined with a space).
type Field struct {
	Name  string
	Value string
}

// Header is an ordered list of header fields, WARC or HTTP.
type Header []Field

// Get returns the first value of the named field, compared
// case-insensitively, or "".
func (h Header) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Has reports whether the named field is present.
func (h Header) Has(name string) bool {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

// Values returns every value of the named field.
func (h Header) Values(name string) []string {
	var out []string
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			out = append(out, f.Value)
		}
	}
	return out
}

// MediaType returns a Content-Type value's media type without parameters,
// lower-cased and trimmed ("text/html; charset=utf-8" → "text/html").
func MediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// parseField splits "Name: value" (lenient: any spacing around the colon).
func parseField(line []byte) (Field, bool) {
	i := indexByte(line, ':')
	if i <= 0 {
		return Field{}, false
	}
	nb := bytes.TrimSpace(line[:i])
	if len(nb) == 0 {
		return Field{}, false
	}
	name, ok := commonNames[string(nb)] // no allocation for the usual names
	if !ok {
		name = string(nb)
	}
	return Field{Name: name, Value: string(bytes.TrimSpace(line[i+1:]))}, true
}

// commonNames holds the header names most records carry, spelled as
// writers spell them, so that parsing them allocates no string.
var commonNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
		"WARC-IP-Address", "WARC-Block-Digest", "WARC-Payload-Digest",
		"WARC-Warcinfo-ID", "WARC-Concurrent-To", "WARC-Refers-To",
		"WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Profile",
		"WARC-Truncated", "WARC-Filename", "WARC-Identified-Payload-Type",
		"Content-Type", "Content-Length", "Content-Encoding",
		"Transfer-Encoding", "Date", "Server", "Connection", "Cache-Control",
		"Set-Cookie", "Vary", "Strict-Transport-Security", "ETag",
		"Last-Modified", "Expires", "Age", "Accept-Ranges", "Location",
		"X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy",
		"Host", "User-Agent", "Accept", "Accept-Encoding", "Accept-Language",
		"Referer", "Cookie", "Pragma",
		"content-type", "content-length", "content-encoding",
		"transfer-encoding", "date", "server", "connection", "cache-control",
		"set-cookie", "vary", "etag", "last-modified", "expires", "age",
		"location", "host", "user-agent", "accept", "accept-encoding",
	} {
		m[n] = n
	}
	return m
}()

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// trimEOL removes a trailing "\n" or "\r\n" (and stray "\r"s).
func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04Z",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05",
	"2006-01-02Z",
	"2006-01-02",
	"20060102150405",
	time.RFC1123,
}

// ParseDate parses a WARC-Date leniently: W3C-DTF with any precision
// (WARC 1.1 allows fractions of a second), with or without "Z", a 14-digit
// timestamp or an RFC 1123 date. The result is in UTC.
func ParseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
