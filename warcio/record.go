package warcio

import (
	"fmt"
	"time"
)

// Record is one WARC record, fully read: Next returns it after its block has
// been consumed, so every field, lengths and digests included, is final.
type Record struct {
	// Offset is where the record starts in the stored file: the start of
	// its gzip member for compressed files. Length is the stored size: the
	// gzip member's compressed length, or for uncompressed files the bytes
	// up to the next record (trailing CRLFs included). These are the CDX
	// offset and length. Length is 0 for a record sharing a gzip member
	// with another record (see Anomalies).
	Offset int64
	Length int64

	Version       string // "1.0", "1.1", "0.18", ...
	Type          string // WARC-Type as written (lower-cased)
	TargetURI     string // WARC-Target-URI without angle brackets
	Date          time.Time
	RecordID      string // WARC-Record-ID, angle brackets kept
	ContentType   string // WARC Content-Type
	ContentLength int64  // declared Content-Length of the block
	// Headers holds every WARC header as found.
	Headers Header

	// HTTP is the parsed HTTP message of response, revisit and request
	// records whose block holds one; nil otherwise.
	HTTP *HTTPInfo
	// MIME is the payload's media type without parameters: the HTTP
	// Content-Type for HTTP records, else the WARC Content-Type.
	MIME string
	// PayloadDigest is the canonical SHA-1 ("sha1:BASE32") computed over
	// the payload bytes present in this record: the de-chunked HTTP entity
	// for HTTP records, the whole block otherwise. For a revisit it is the
	// digest of whatever body the revisit holds (normally empty): the
	// original's digest is DeclaredPayloadDigest.
	PayloadDigest string
	// ChunkedPayloadDigest is, for an HTTP body with chunked transfer
	// coding, the canonical SHA-1 of the body bytes as stored, chunk framing
	// included: what some writers wrongly declared as WARC-Payload-Digest.
	ChunkedPayloadDigest string
	// PayloadLength is the length of those payload bytes.
	PayloadLength int64
	// DeclaredPayloadDigest is the WARC-Payload-Digest header in canonical
	// form ("" when absent or unparsable).
	DeclaredPayloadDigest string
	// BlockDigest is the canonical digest of the block as read (only with
	// Options.BlockDigest); DeclaredBlockDigest the WARC-Block-Digest header
	// in canonical form. They differ for a damaged record.
	BlockDigest         string
	DeclaredBlockDigest string
	// Payload holds the first Options.KeepPayload payload bytes.
	Payload []byte
	// Anomalies lists what the lenient reader forgave in this record.
	Anomalies []string
}

// Header returns the first WARC header with the given name
// (case-insensitive), or "".
func (r *Record) Header(name string) string { return r.Headers.Get(name) }

// Status returns the HTTP status code, 0 when the record holds no HTTP
// response.
func (r *Record) Status() int {
	if r.HTTP == nil {
		return 0
	}
	return r.HTTP.Status
}

// End is Offset + Length.
func (r *Record) End() int64 { return r.Offset + r.Length }

func (r *Record) anomaly(format string, a ...any) {
	r.Anomalies = append(r.Anomalies, fmt.Sprintf(format, a...))
}
