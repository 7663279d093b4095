package cdxj

import (
	"fmt"
	"time"

	"github.com/wayside-archive/wayside"
)

// Capture returns what an index line says about its record, the inverse of
// FromCapture as far as a line carries it: URI, date (second precision),
// MIME, status, digest (canonical when it parses), file, offset and length.
// A "warc/revisit" line becomes a revisit without a known original
// (RevisitOf carries nothing, MIME is ""); any other line a response, or a
// resource when it has no status. A line without a URL, or with a
// timestamp that is not a date, is an error.
func (l *Line) Capture() (wayside.Capture, error) {
	if l.URL == "" {
		return wayside.Capture{}, fmt.Errorf("%w: line for key %q has no url", ErrSyntax, l.Key)
	}
	ts := l.Timestamp
	if len(ts) > 14 {
		ts = ts[:14]
	}
	for len(ts) < 14 {
		ts += "0"
	}
	date, err := time.Parse("20060102150405", ts)
	if err != nil {
		return wayside.Capture{}, fmt.Errorf("%w: timestamp %q is not a date", ErrSyntax, l.Timestamp)
	}
	c := wayside.Capture{URI: l.URL, Date: date, MIME: l.MIME, MIMEDetected: l.MIMEDetected, Status: l.Status,
		Digest: canonicalOr(l.Digest), File: l.Filename, Offset: l.Offset, Length: l.Length, Metadata: l.Metadata}
	switch {
	case l.IsRevisit():
		c.Type, c.MIME, c.RevisitOf = "revisit", "", &wayside.Ref{}
	case l.Status == 0:
		c.Type = "resource"
	default:
		c.Type = "response"
	}
	return c, nil
}

// AppendJSONString appends s as a JSON string the way CDXJ lines (and
// pywb's JSON outputs, Python's json.dumps) write it: non-ASCII as \u escapes.
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }
