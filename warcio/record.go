package warcio

import (
	"fmt"
	"time"
)

// Record is one WARC or ARC record, fully read: Next returns it after its
// block has been consumed, so every field, lengths and digests included, is
// final.
//
// An ARC record is presented the way a conversion to WARC would give it, so
// that every consumer reads both formats alike (as warcio for Python and
// jwarc present them): the filedesc record that opens an ARC file is a
// "warcinfo" record (no TargetURI; WARC-Filename = the ARC's name), every
// other record a "response" record whose TargetURI is the ARC URL (control
// characters percent-encoded as pywb does) and whose Date is the
// Archive-date. Its block is the bytes after the header line; an HTTP
// message is parsed (and its payload digested) under http(s) URLs only, so
// dns: and other records are payload as a whole. ContentType is the ARC
// Content-type field and Headers holds the header line's fields under their
// WARC names (WARC-Target-URI, WARC-IP-Address, WARC-Date, Content-Type,
// Content-Length). ARC is set; RecordID and Version are empty.
type Record struct {
	// Offset is where the record starts in the stored file: the start of
	// its gzip member for compressed files. Length is the stored size: the
	// gzip member's compressed length, or for uncompressed WARC files the
	// bytes up to the next record (trailing CRLFs included); for
	// uncompressed ARC files the header line and block without the line
	// feed that separates records, as pywb counts it. These are the CDX
	// offset and length. Length is 0 for a record sharing a gzip member
	// with another record (see Anomalies).
	Offset int64
	Length int64
	// DataOffset and DataLength locate the record in the uncompressed
	// data (the same as Offset and Length in an uncompressed file): they
	// tell apart the records of a gzip member that holds several, or of
	// a file that is one gzip stream. See Span.
	DataOffset int64
	DataLength int64
	// Truncated is "length" when the record's block is shorter than its
	// declared length (the next record's header, or the end of the file,
	// came first) and the reader kept what there is, as a WARC writer
	// marks it with WARC-Truncated; "" otherwise.
	Truncated string
	// indexLength, when set (uncompressed WARC files), is the length index
	// lines give the record: up to the end of its block, without the blank
	// lines that close it, as pywb and warcio write it. See IndexLength.
	indexLength int64

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
	// ARC is the header line of a record read from an ARC file; nil for
	// WARC records.
	ARC *ARCHeader
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

// IndexLength is the record's length as CDX/CDXJ indexes give it: the gzip
// member's length for compressed files (= Length); for uncompressed WARC
// files the bytes up to the end of the block, without the CRLF pair (or
// other blank lines) that close the record, as pywb's and warcio's indexers
// count it. Length stays the stored size (what a copy of the record takes).
func (r *Record) IndexLength() int64 {
	if r.indexLength > 0 && r.Length > 0 {
		return r.indexLength
	}
	return r.Length
}

// Relocate records where a record read from its encoded bytes is stored:
// at offset, taking length bytes, in a compressed file (one gzip member per
// record: the index length is the stored length) or an uncompressed one (the
// blank lines closing the record are not part of the index length).
func (r *Record) Relocate(offset, length int64, compressed bool) {
	trail := int64(0)
	if !compressed && r.indexLength > 0 {
		trail = r.Length - r.indexLength
	}
	r.Offset, r.Length, r.indexLength = offset, length, 0
	if trail > 0 && trail < length {
		r.indexLength = length - trail
	}
}

// End is Offset + Length.
func (r *Record) End() int64 { return r.Offset + r.Length }

func (r *Record) anomaly(format string, a ...any) {
	r.Anomalies = append(r.Anomalies, fmt.Sprintf(format, a...))
}
