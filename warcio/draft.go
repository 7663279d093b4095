package warcio

import (
	"bytes"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/digest"
)

// WARC versions Wayside writes.
const (
	Version10 = "1.0"
	Version11 = "1.1"
)

// Revisit profile URIs, one per WARC version (WARC 1.1 §6.7). The values
// are the specification's; warcio's tests check them against gowarc's.
const (
	ProfileIdenticalPayloadDigest10 = "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
	ProfileIdenticalPayloadDigest11 = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	ProfileServerNotModified10      = "http://netpreserve.org/warc/1.0/revisit/server-not-modified"
	ProfileServerNotModified11      = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
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

// ConformsTo returns the specification URI a warcinfo record names for a
// WARC version.
func ConformsTo(version string) string {
	if version == Version10 {
		return "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf"
	}
	return "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
}

// Draft is a WARC record before serialisation: what every Wayside writer
// (the crawler, post-crawl deduplication, fixity evidence, characterization
// metadata) builds and package warcfile writes. Marshal adds
// Content-Length, WARC-Block-Digest and WARC-Warcinfo-ID; everything else
// is in Fields, in order.
type Draft struct {
	Type   string
	ID     string // "<urn:uuid:...>"
	Date   time.Time
	Fields []Field
	Block  []byte
	// DateText, when set, is written as the WARC-Date verbatim instead of
	// Date formatted for the version (a rewritten record keeps the exact
	// text, and so the precision, of the record it replaces).
	DateText string
	// IncompressibleFrom, when positive, says Block[IncompressibleFrom:]
	// is already compressed (a JPEG, a gzip-encoded HTTP body): a writer
	// may store those bytes in the record's gzip member as they are
	// (MemberWriter.WriteMemberStoring) instead of deflating them again.
	// It changes how the record is compressed, never its bytes.
	IncompressibleFrom int
	isInfo             bool
}

// Get returns the first value of the named field ("" when absent).
func (r *Draft) Get(name string) string {
	for _, f := range r.Fields {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// IsWarcinfo reports whether r is the warcinfo record a file starts with
// (made by NewWarcinfo): it carries no WARC-Warcinfo-ID and no capture.
func (r *Draft) IsWarcinfo() bool { return r.isInfo }

// NewWarcinfo returns the warcinfo record that starts the WARC file
// filename, dated now: software, format, conformsTo and hostname, then
// extra (operator, description, isPartOf, robots, ...).
func NewWarcinfo(filename, version, hostname string, now time.Time, extra []Field) *Draft {
	info := &Draft{Type: "warcinfo", ID: NewRecordID(), Date: RecordDate(now, version), isInfo: true}
	info.Fields = []Field{{"WARC-Filename", filename}, {"Content-Type", "application/warc-fields"}}
	fields := append([]Field{
		{"software", "Wayside (github.com/wayside-archive/wayside)"},
		{"format", "WARC File Format " + version},
		{"conformsTo", ConformsTo(version)},
		{"hostname", hostname},
	}, extra...)
	info.Block = FieldsBlock(fields)
	return info
}

// FieldsBlock is the application/warc-fields block of fields ("Name:
// Value" lines, CRLF-terminated), as warcinfo and metadata records carry;
// line breaks in a value are percent-encoded, as in a header.
func FieldsBlock(fields []Field) []byte {
	var b bytes.Buffer
	for _, f := range fields {
		writeField(&b, f.Name, f.Value)
	}
	return b.Bytes()
}

// RecordDate returns the time a record is stamped with for a version
// (truncated to what its text can carry), so a Capture carries exactly the
// date that is in the file.
func RecordDate(t time.Time, version string) time.Time {
	t = t.UTC()
	if version == Version10 {
		return t.Truncate(time.Second)
	}
	return t.Truncate(time.Microsecond)
}

// Marshal appends the uncompressed record to buf: "WARC/"+version,
// WARC-Type, WARC-Record-ID, WARC-Date, Fields in order, then
// WARC-Block-Digest (SHA-1 of Block) and Content-Length, the block and
// the closing CRLF pair. With RecordHead it is the one WARC record encoder
// of Wayside; tools that write records outside a warcfile.Writer
// (post-crawl deduplication) use it.
func (r *Draft) Marshal(buf *bytes.Buffer, version string) { r.MarshalInFile(buf, version, "") }

// MarshalInFile is Marshal for a record of the file that warcinfoID
// starts: WARC-Warcinfo-ID (when set, and r is not itself the warcinfo
// record) comes after Fields.
func (r *Draft) MarshalInFile(buf *bytes.Buffer, version, warcinfoID string) {
	h := RecordHead{
		Version:       version,
		Type:          r.Type,
		ID:            r.ID,
		Date:          r.DateText,
		Fields:        r.Fields,
		BlockDigest:   digest.Of(digest.SHA1, r.Block).String(),
		ContentLength: int64(len(r.Block)),
	}
	if h.Date == "" {
		h.Date = FormatDate(r.Date, version)
	}
	if !r.isInfo {
		h.WarcinfoID = warcinfoID
	}
	h.Write(buf)
	buf.Write(r.Block)
	buf.WriteString(RecordEnd)
}
