package crawl

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nlnwa/gowarc"

	"github.com/wayside-archive/wayside/digest"
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
	Type     string
	ID       string // "<urn:uuid:...>"
	Date     time.Time
	Fields   []Field
	Block    []byte
	isInfo   bool
	dateText string
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
func NewRecordID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on supported platforms (Go ≥ 1.24 panics
		// instead); keep a deterministic fallback for completeness.
		copy(b[:], strconv.FormatInt(time.Now().UnixNano(), 16))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return "<urn:uuid:" + string(s[:]) + ">"
}

// FormatDate formats a WARC-Date. WARC 1.0 allows whole seconds only; for
// 1.1 the time is kept to the microsecond and written with trailing zeros
// trimmed (RFC 3339), so formatting the same time.Time again — as
// WARC-Refers-To-Date of a revisit does — reproduces the original's text
// exactly, at the same precision.
func FormatDate(t time.Time, version string) string {
	t = t.UTC()
	if version == Version10 {
		return t.Truncate(time.Second).Format("2006-01-02T15:04:05Z")
	}
	return t.Truncate(time.Microsecond).Format(time.RFC3339Nano)
}

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

// marshal writes the uncompressed record to buf. warcinfoID may be empty.
func (r *Record) marshal(buf *bytes.Buffer, version, warcinfoID string) {
	buf.WriteString("WARC/")
	buf.WriteString(version)
	buf.WriteString("\r\n")
	writeField(buf, "WARC-Type", r.Type)
	writeField(buf, "WARC-Record-ID", r.ID)
	if r.dateText != "" {
		writeField(buf, "WARC-Date", r.dateText)
	} else {
		writeField(buf, "WARC-Date", FormatDate(r.Date, version))
	}
	for _, f := range r.Fields {
		writeField(buf, f.Name, f.Value)
	}
	if warcinfoID != "" && !r.isInfo {
		writeField(buf, "WARC-Warcinfo-ID", warcinfoID)
	}
	writeField(buf, "WARC-Block-Digest", digest.Of(digest.SHA1, r.Block).String())
	writeField(buf, "Content-Length", strconv.Itoa(len(r.Block)))
	buf.WriteString("\r\n")
	buf.Write(r.Block)
	buf.WriteString("\r\n\r\n")
}

func writeField(buf *bytes.Buffer, name, value string) {
	buf.WriteString(name)
	buf.WriteString(": ")
	// Header values never carry line breaks: a URL or validator taken from
	// the network is written on one line (WARC forbids folding we do not do).
	if strings.ContainsAny(value, "\r\n") {
		value = strings.NewReplacer("\r", "%0D", "\n", "%0A").Replace(value)
	}
	buf.WriteString(value)
	buf.WriteString("\r\n")
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
