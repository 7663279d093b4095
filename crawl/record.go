package crawl

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/nlnwa/gowarc"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

// WARC versions the writer produces.
const (
	Version10 = "1.0"
	Version11 = "1.1"
)

// Revisit profile URIs, one per WARC version (WARC 1.1 §6.7).
const (
	ProfileIdenticalPayloadDigest10 = gowarc.ProfileIdenticalPayloadDigestV1_0
	ProfileIdenticalPayloadDigest11 = gowarc.ProfileIdenticalPayloadDigestV1_1
	ProfileServerNotModified10      = gowarc.ProfileServerNotModifiedV1_0
	ProfileServerNotModified11      = gowarc.ProfileServerNotModifiedV1_1
)

// IdenticalPayloadProfile returns the identical-payload-digest profile URI
// for a WARC version.
func IdenticalPayloadProfile(version string) string {
	if version == Version10 {
		return ProfileIdenticalPayloadDigest10
	}
	return ProfileIdenticalPayloadDigest11
}

// NotModifiedProfile returns the server-not-modified profile URI for a WARC
// version.
func NotModifiedProfile(version string) string {
	if version == Version10 {
		return ProfileServerNotModified10
	}
	return ProfileServerNotModified11
}

// Field is one WARC header field.
type Field struct {
	Name, Value string
}

// Record is a WARC record before serialisation. The writer adds
// Content-Length, WARC-Block-Digest and WARC-Warcinfo-ID; everything else is
// in Fields, in order.
type Record struct {
	Type   string
	ID     string // "<urn:uuid:...>"
	Date   time.Time
	Fields []Field
	Block  []byte
	// DateText, when set, is written as the WARC-Date verbatim instead of
	// Date formatted for the version (a rewritten record keeps the exact
	// text, and so the precision, of the record it replaces).
	DateText string
	isInfo   bool
}

// Get returns the first value of the named field ("" when absent).
func (r *Record) Get(name string) string {
	for _, f := range r.Fields {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// NewRecordID returns a fresh "<urn:uuid:...>" record ID (random UUID v4).
func NewRecordID() string { return warcio.NewRecordID() }

// FormatDate formats a WARC-Date (see warcio.FormatDate).
func FormatDate(t time.Time, version string) string { return warcio.FormatDate(t, version) }

// recordDate returns the time a record is stamped with for a version
// (truncated to what its text can carry), so the Capture carries exactly the
// date that is in the file.
func recordDate(t time.Time, version string) time.Time {
	t = t.UTC()
	if version == Version10 {
		return t.Truncate(time.Second)
	}
	return t.Truncate(time.Microsecond)
}

// Marshal appends the uncompressed record, as the Writer serialises it, to
// buf: "WARC/"+version, WARC-Type, WARC-Record-ID, WARC-Date, Fields in
// order, then WARC-Block-Digest (SHA-1 of Block) and Content-Length, the
// block and the closing CRLF pair. It is the one WARC record encoder; tools
// that write records outside a Writer (post-crawl deduplication) use it.
func (r *Record) Marshal(buf *bytes.Buffer, version string) { r.marshal(buf, version, "") }

// marshal writes the uncompressed record to buf. warcinfoID may be empty.
func (r *Record) marshal(buf *bytes.Buffer, version, warcinfoID string) {
	h := warcio.RecordHead{
		Version:       version,
		Type:          r.Type,
		ID:            r.ID,
		Date:          r.DateText,
		Fields:        make([]warcio.Field, len(r.Fields)),
		BlockDigest:   digest.Of(digest.SHA1, r.Block).String(),
		ContentLength: int64(len(r.Block)),
	}
	for i, f := range r.Fields {
		h.Fields[i] = warcio.Field(f)
	}
	if h.Date == "" {
		h.Date = FormatDate(r.Date, version)
	}
	if !r.isInfo {
		h.WarcinfoID = warcinfoID
	}
	h.Write(buf)
	buf.Write(r.Block)
	buf.WriteString(warcio.RecordEnd)
}

// mimeOf returns the media type of a Content-Type value without parameters,
// lower case.
func mimeOf(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

func warcinfoBlock(fields []Field) []byte {
	var b bytes.Buffer
	for _, f := range fields {
		fmt.Fprintf(&b, "%s: %s\r\n", f.Name, f.Value)
	}
	return b.Bytes()
}
