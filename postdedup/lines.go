package postdedup

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside"
)

// Manifest and plan lines are tab-separated fields (format 2; format 1
// carried a JSON object, which cost more to parse than the rest of the
// pipeline's bookkeeping together). Text fields are escaped (backslash,
// tab, newline and carriage return as \\, \t, \n, \r), so a line never
// holds a raw tab or newline inside a field and byte order of whole lines
// is the order of their leading fields. Numbers are decimal, offsets
// zero-padded to 15 digits where lines sort by them, dates in the sort
// form YYYYMMDDhhmmss.nnnnnnnnn (UTC), flags "1" or empty. A list is its
// length followed by its items. The field order is the order of the
// append calls in Entry.appendLine and Copy.appendLine, documented in
// doc.go; a reader takes the fields in the same order and refuses a line
// with fewer or more.

// lineFormat is the format number of manifests and plans written now.
const lineFormat = 2

// errOldFormat explains a manifest or plan of format 1.
func errOldFormat(what string, format int) error {
	if format == 1 {
		return fmt.Errorf("%s format 1 (JSON lines, written by an earlier wayside): write it again with this version", what)
	}
	return fmt.Errorf("unsupported %s format %d (this version reads format %d)", what, format, lineFormat)
}

// appendEscaped appends s with backslash, tab, newline and carriage return
// escaped, copying the stretches between them whole.
func appendEscaped[S string | []byte](b []byte, s S) []byte {
	for len(s) > 0 {
		i := 0
		for i < len(s) && !escaped[s[i]] {
			i++
		}
		b = append(b, s[:i]...)
		if i == len(s) {
			break
		}
		switch s[i] {
		case '\\':
			b = append(b, '\\', '\\')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		}
		s = s[i+1:]
	}
	return b
}

// escaped tells the bytes appendEscaped escapes.
var escaped = [256]bool{'\\': true, '\t': true, '\n': true, '\r': true}

func escapeField(s string) string {
	if !strings.ContainsAny(s, "\\\t\n\r") {
		return s
	}
	return string(appendEscaped([]byte(nil), s))
}

func unescapeField(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return string(appendUnescaped(make([]byte, 0, len(s)), s))
}

// appendUnescaped appends s with the escapes appendEscaped writes undone
// (a backslash before any other byte stands for that byte; a backslash
// at the end for itself), copying the stretches between backslashes
// whole.
func appendUnescaped(b []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 || i+1 == len(s) {
			return append(b, s...)
		}
		b = append(b, s[:i]...)
		switch c := s[i+1]; c {
		case 't':
			b = append(b, '\t')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		default:
			b = append(b, c)
		}
		s = s[i+2:]
	}
}

// fieldCodec writes the fields of a line (lineWriter) or reads them
// (lineReader): each line type lists its fields once, in one method taking
// a fieldCodec, so writing and reading cannot disagree on their order.
// Every method takes a pointer to the value: written from, or read into.
type fieldCodec interface {
	reading() bool
	str(p *string)
	bytes(p *[]byte)
	int(p *int64, what string)
	offset(p *int64, what string) // zero-padded, for fields lines sort by
	flag(p *bool, what string)
	date(p *time.Time, what string)
	headers(p *[][2]string)
}

// lineWriter appends the fields of one line.
type lineWriter struct{ b []byte }

func (w *lineWriter) sep() {
	if len(w.b) > 0 {
		w.b = append(w.b, '\t')
	}
}

func (w *lineWriter) reading() bool               { return false }
func (w *lineWriter) str(p *string)               { w.sep(); w.b = appendEscaped(w.b, *p) }
func (w *lineWriter) bytes(p *[]byte)             { w.sep(); w.b = appendEscaped(w.b, *p) }
func (w *lineWriter) int(p *int64, _ string)      { w.sep(); w.b = strconv.AppendInt(w.b, *p, 10) }
func (w *lineWriter) offset(p *int64, _ string)   { w.sep(); w.b = appendOffset(w.b, *p) }
func (w *lineWriter) date(p *time.Time, _ string) { w.sep(); w.b = append(w.b, sortDate(*p)...) }

func (w *lineWriter) flag(p *bool, _ string) {
	w.sep()
	if *p {
		w.b = append(w.b, '1')
	}
}

func (w *lineWriter) headers(p *[][2]string) {
	n := int64(len(*p))
	w.int(&n, "")
	for i := range *p {
		w.str(&(*p)[i][0])
		w.str(&(*p)[i][1])
	}
}

// lineReader takes the fields of one line in order; the first problem is
// kept in err and later fields read as zero values.
type lineReader struct {
	s   string
	n   int // fields taken
	err error
}

func newLineReader(line []byte) *lineReader { return &lineReader{s: string(line)} }

func (r *lineReader) reading() bool { return true }

// raw returns the next field as written.
func (r *lineReader) raw() string {
	if r.err != nil {
		return ""
	}
	if r.n > 0 {
		if r.s == "" || r.s[0] != '\t' {
			r.err = fmt.Errorf("field %d missing", r.n+1)
			return ""
		}
		r.s = r.s[1:]
	}
	r.n++
	i := strings.IndexByte(r.s, '\t')
	if i < 0 {
		i = len(r.s)
	}
	f := r.s[:i]
	r.s = r.s[i:]
	return f
}

func (r *lineReader) fail(what, f string) {
	if r.err == nil {
		r.err = fmt.Errorf("field %d (%s) is %q", r.n, what, clip(f))
	}
}

func (r *lineReader) str(p *string) { *p = unescapeField(r.raw()) }

func (r *lineReader) bytes(p *[]byte) {
	if f := r.raw(); f != "" {
		*p = appendUnescaped(make([]byte, 0, len(f)), f)
	}
}

func (r *lineReader) int(p *int64, what string) {
	f := r.raw()
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		r.fail(what, f)
	}
	*p = n
}

func (r *lineReader) offset(p *int64, what string) { r.int(p, what) }

func (r *lineReader) flag(p *bool, what string) {
	switch f := r.raw(); f {
	case "":
		*p = false
	case "1":
		*p = true
	default:
		r.fail(what, f)
	}
}

func (r *lineReader) date(p *time.Time, what string) {
	f := r.raw()
	if f == zeroSortDate {
		*p = time.Time{}
		return
	}
	t, err := time.Parse(dateSortLayout, f)
	if err != nil {
		r.fail(what, f)
	}
	*p = t
}

func (r *lineReader) headers(p *[][2]string) {
	var n int64
	r.int(&n, "header count")
	if n < 0 || n > int64(len(r.s)) {
		r.fail("header count", strconv.FormatInt(n, 10))
		return
	}
	*p = nil
	if n > 0 {
		*p = make([][2]string, n)
	}
	for i := range *p {
		r.str(&(*p)[i][0])
		r.str(&(*p)[i][1])
	}
}

// end checks that the line held no more fields.
func (r *lineReader) end() error {
	if r.err == nil && r.s != "" {
		r.err = fmt.Errorf("more than %d fields", r.n)
	}
	return r.err
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

const (
	dateSortLayout = "20060102150405.000000000"
	zeroSortDate   = "00000000000000.000000000"
)

// sortDate is a date in the form manifest lines sort by.
func sortDate(t time.Time) string {
	if t.IsZero() {
		return zeroSortDate
	}
	return t.UTC().Format(dateSortLayout)
}

func appendOffset(b []byte, off int64) []byte {
	s := strconv.FormatInt(off, 10)
	for i := len(s); i < 15; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// Manifest lines: KEY DATE PATH OFFSET ROLE RECORD-ID DIGEST first, so
// that byte order sorts them by cluster key, then WARC-Date, input path
// and offset: the copy-numbering order. ROLE is "o" when the record may be
// an original, "-" otherwise; DIGEST is its Capture digest in canonical
// form. The rest of the record's description follows (see doc.go).

// manifestPrefixFields is the number of leading fields other stages read
// without parsing the line (sort-joins).
const manifestPrefixFields = 7

func (e *Entry) appendLine(b []byte) []byte {
	w := &lineWriter{b: b[:0]}
	e.fields(w)
	return w.b
}

// parseEntry parses a manifest line (not a "#" header line).
func parseEntry(line []byte) (*Entry, error) {
	r := newLineReader(line)
	e := &Entry{}
	role := e.fields(r)
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("not a manifest line of format %d: %v", lineFormat, err)
	}
	if (role == "o") != e.CanBeOriginal() || role != "o" && role != "-" {
		return nil, errors.New("manifest line role does not match its reasons")
	}
	e.Capture.Dir = filepath.Dir(e.Path)
	return e, nil
}

// fields lists the fields of a manifest line (see doc.go) and returns its
// ROLE field.
func (e *Entry) fields(f fieldCodec) (role string) {
	c := &e.Capture
	// Values some fields are written from (reading overwrites them).
	role = "-"
	if e.CanBeOriginal() {
		role = "o"
	}
	digest, asWritten := canonical(c.Digest), ""
	if c.Digest != digest {
		asWritten = c.Digest
	}
	status := int64(c.Status)
	revisit := c.RevisitOf != nil
	var ref wayside.Ref
	if revisit {
		ref = *c.RevisitOf
	}

	f.str(&e.Key)
	f.date(&c.Date, "date")
	f.str(&e.Path)
	f.offset(&c.Offset, "offset")
	f.str(&role)
	f.str(&c.RecordID)
	f.str(&digest)
	f.str(&e.Version)
	f.str(&c.Type)
	f.str(&c.URI)
	f.str(&e.DateText)
	f.str(&c.File)
	f.int(&c.Length, "length")
	f.int(&c.PayloadLength, "payload length")
	f.int(&status, "status")
	f.flag(&c.DigestMismatch, "digest mismatch")
	f.str(&asWritten)
	f.str(&c.MIME)
	f.str(&c.MIMEDetected)
	f.str(&c.Metadata)
	f.str(&c.Truncated)
	f.str(&c.Scope)
	f.str(&c.Profile)
	f.str(&c.ETag)
	f.str(&c.LastModified)
	f.flag(&revisit, "revisit")
	f.str(&ref.RecordID)
	f.str(&ref.TargetURI)
	f.date(&ref.Date, "refers-to date")
	f.int(&e.HeadLength, "head length")
	f.str(&e.NotOriginal)
	f.str(&e.NotDuplicate)
	f.str(&e.SameAs)
	f.bytes(&e.Head)
	f.headers(&e.Headers)

	if f.reading() {
		c.Digest, c.Status = digest, int(status)
		if asWritten != "" {
			c.Digest = asWritten
		}
		if revisit {
			c.RevisitOf = &ref
		}
	}
	return role
}

// Plan lines: PATH OFFSET first (the plan sorts by file and offset), then
// the copy and its original (see doc.go).

func (c *Copy) appendLine(b []byte) []byte {
	w := &lineWriter{b: b[:0]}
	c.fields(w)
	return w.b
}

func parseCopy(line []byte) (*Copy, error) {
	r := newLineReader(line)
	c := &Copy{}
	c.fields(r)
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("not a plan line of format %d: %v", lineFormat, err)
	}
	if c.Length <= 0 || c.RecordID == "" || c.Original.RecordID == "" || len(c.Head) == 0 {
		return nil, errors.New("plan line lacks the copy's length, record ID, head or original")
	}
	return c, nil
}

// fields lists the fields of a plan line (see doc.go).
func (c *Copy) fields(f fieldCodec) {
	o := &c.Original
	f.str(&c.Path)
	f.offset(&c.Offset, "offset")
	f.int(&c.Length, "length")
	f.str(&c.RecordID)
	f.str(&c.URI)
	f.str(&c.Version)
	f.int(&c.PayloadLength, "payload length")
	f.str(&c.Key)
	f.str(&o.RecordID)
	f.str(&o.URI)
	f.str(&o.DateText)
	f.str(&o.Digest)
	f.int(&o.PayloadLength, "original payload length")
	f.str(&o.Path)
	f.str(&o.File)
	f.int(&o.Offset, "original offset")
	f.int(&o.Length, "original length")
	f.flag(&o.External, "external")
	f.bytes(&c.Head)
	f.headers(&c.Headers)
}
