package warcio

import (
	"strings"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/digest"
)

// Capture returns the wayside.Capture describing rec in the WARC file named
// file (pass the name the file has once closed, without ".open"). It is the
// only converter from a record to a Capture: the crawler, the ingester,
// `wayside cdxj`, index import and MementoMap generation all use it, and
// cdxj.FromCapture derives the CDXJ line from its result.
//
// The fields follow pywb's cdxj-indexer where an index shows them:
//   - URI: WARC-Target-URI; a warcinfo record without one is filed under
//     its WARC-Filename.
//   - ARC records (see Record) follow the same rules, except that MIME is
//     the header line's Content-type field, as pywb indexes ARC files.
//   - MIME: for response, request and revisit records with an HTTP message,
//     the HTTP Content-Type cut at the first ";" or space (case kept), "unk"
//     when it has none (nothing for requests); for other records the WARC
//     Content-Type the same way.
//   - Status: the HTTP status of response and revisit records (a revisit's
//     block keeps the status line: the original's, or 304); a response
//     record without an HTTP message gets 200 as pywb gives it (dns:, ftp:);
//     the "204 Error" lines some crawlers write give none.
//   - Digest: see wayside.Capture.Digest for the rule. The declared
//     WARC-Payload-Digest is checked against the digest computed here over
//     the de-chunked payload and, for chunked bodies, over the stored bytes
//     with their framing (the writer bug of Heritrix #769 and others); when
//     it matches neither, DigestMismatch is set. Digests in another
//     algorithm than SHA-1 are not re-computed and so not checked.
func (r *Record) Capture(file string) wayside.Capture {
	var h [len(captureNames)]string
	r.Headers.getEach(captureSet, h[:])
	c := wayside.Capture{
		URI:           r.TargetURI,
		Date:          r.Date,
		RecordID:      r.RecordID,
		Type:          r.Type,
		File:          file,
		Offset:        r.Offset,
		Length:        r.IndexLength(),
		PayloadLength: r.PayloadLength,
		MIMEDetected:  strings.TrimSpace(h[0]),
		Metadata:      h[1],
	}
	if c.URI == "" && r.Type == "warcinfo" {
		c.URI = h[2]
	}
	// The HTTP fields Capture reads, in one pass over the HTTP head.
	var hv [len(captureHTTPNames)]string
	if r.HTTP != nil {
		r.HTTP.Header.getEach(captureHTTPSet, hv[:])
		c.ETag, c.LastModified = hv[1], hv[2]
	}
	c.MIME = r.indexMIME(hv[0])
	c.Status = r.indexStatus()
	declared := r.DeclaredPayloadDigest
	if declared == "" {
		// Present but not parsable: kept as written (without a "sha1:"
		// label, as pywb writes it); digest.Normalize rejects it, so it is
		// never a dedup key.
		declared = strings.TrimPrefix(strings.TrimSpace(h[3]), "sha1:")
	}
	switch {
	case r.Type == "revisit":
		c.Digest = declared
		c.PayloadLength = 0
		c.Profile = strings.TrimSpace(h[4])
		ref := &wayside.Ref{
			RecordID:  strings.TrimSpace(h[5]),
			TargetURI: strings.Trim(strings.TrimSpace(h[6]), "<>"),
		}
		if d, ok := ParseDate(h[7]); ok {
			ref.Date = d
		}
		c.RevisitOf = ref
	case declared != "":
		c.Digest = declared
		c.DigestMismatch = r.digestMismatch()
	default:
		c.Digest = r.PayloadDigest
	}
	if t := strings.TrimSpace(h[8]); t != "" && r.Type != "revisit" {
		c.Truncated = t
	}
	return c
}

// captureHTTPNames are the HTTP fields Capture reads.
var captureHTTPNames = [...]string{"Content-Type", "ETag", "Last-Modified"}

var (
	captureSet     = newFieldSet(captureNames[:]...)
	captureHTTPSet = newFieldSet(captureHTTPNames[:]...)
)

// captureNames are the WARC fields Capture reads (one pass over the
// head), in the order it indexes them.
var captureNames = [...]string{"WARC-Identified-Payload-Type", "WARC-Json-Metadata", "WARC-Filename",
	"WARC-Payload-Digest", "WARC-Profile", "WARC-Refers-To", "WARC-Refers-To-Target-URI",
	"WARC-Refers-To-Date", "WARC-Truncated"}

// digestMismatch reports whether the declared (SHA-1) payload digest matches
// neither the computed payload digest nor the chunk-framed one.
func (r *Record) digestMismatch() bool {
	if r.PayloadDigest == "" || r.DeclaredPayloadDigest == "" {
		return false // not computed, or not parsable: nothing to compare
	}
	if d := r.DeclaredPayloadDigest; !strings.HasPrefix(d, digest.SHA1+":") || !isNormal(d) {
		// Not a canonical SHA-1 (those are told without parsing).
		if p, err := digest.Parse(d); err != nil || p.Alg != digest.SHA1 {
			return false
		}
	}
	return r.DeclaredPayloadDigest != r.PayloadDigest && r.DeclaredPayloadDigest != r.ChunkedPayloadDigest
}

// indexMIME is the media type as pywb's indexer writes it; httpType is
// the HTTP head's Content-Type.
func (r *Record) indexMIME(httpType string) string {
	switch {
	case r.ARC != nil:
		// pywb takes an ARC record's mime from its header line, HTTP or not.
		return cutMIME(r.ARC.ContentType, "unk")
	case r.HTTP != nil && r.Type == "request":
		return cutMIME(httpType, "")
	case r.HTTP != nil:
		return cutMIME(httpType, "unk")
	default:
		return cutMIME(r.ContentType, "unk")
	}
}

// indexStatus is the status as pywb's indexer writes it.
func (r *Record) indexStatus() int {
	switch r.Type {
	case "response":
		switch {
		case r.HTTP == nil:
			return 200
		case r.HTTP.Status == 204 && strings.Contains(r.HTTP.Reason, "Error"):
			return 0
		}
		return r.HTTP.Status
	case "revisit":
		if r.HTTP != nil {
			return r.HTTP.Status
		}
	}
	return 0
}

// cutMIME cuts a Content-Type at the first ";" or space (no case change).
func cutMIME(ct, def string) string {
	ct = strings.TrimSpace(ct)
	if i := strings.IndexAny(ct, "; \t"); i >= 0 {
		ct = ct[:i]
	}
	if ct == "" {
		return def
	}
	return ct
}

// isNormal reports whether d is a digest in canonical form.
func isNormal(d string) bool {
	n, err := digest.Normalize(d)
	return err == nil && n == d
}
