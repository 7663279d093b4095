package warcio

import (
	"strings"

	"github.com/wayside-archive/wayside"
)

// Capture returns the wayside.Capture event describing rec in the WARC file
// named file (pass the name the file has once closed, without ".open").
//
// Digest is the canonical payload digest: for a revisit the original's
// (WARC-Payload-Digest); for other records the digest computed here over
// the de-chunked payload, falling back to the header when digests were
// skipped or the record is WARC-Truncated (its bytes are not the whole
// payload). RevisitOf is filled from the WARC-Refers-To* headers.
func (r *Record) Capture(file string) wayside.Capture {
	c := wayside.Capture{
		URI:           r.TargetURI,
		Date:          r.Date,
		RecordID:      r.RecordID,
		Type:          r.Type,
		Status:        r.Status(),
		MIME:          r.MIME,
		File:          file,
		Offset:        r.Offset,
		Length:        r.Length,
		PayloadLength: r.PayloadLength,
		Profile:       r.Header("WARC-Profile"),
	}
	switch {
	case r.Type == "revisit":
		c.Digest = r.DeclaredPayloadDigest
		c.PayloadLength = 0
		ref := &wayside.Ref{
			RecordID:  r.Header("WARC-Refers-To"),
			TargetURI: strings.Trim(r.Header("WARC-Refers-To-Target-URI"), "<>"),
		}
		if d, ok := ParseDate(r.Header("WARC-Refers-To-Date")); ok {
			ref.Date = d
		}
		c.RevisitOf = ref
	case r.PayloadDigest == "" || r.Header("WARC-Truncated") != "":
		c.Digest = r.DeclaredPayloadDigest
	default:
		c.Digest = r.PayloadDigest
	}
	if r.HTTP != nil {
		c.ETag = r.HTTP.Header.Get("ETag")
		c.LastModified = r.HTTP.Header.Get("Last-Modified")
	}
	return c
}
