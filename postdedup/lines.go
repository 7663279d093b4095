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
// escaped.
func appendEscaped[S string | []byte](b []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, c)
		}
	}
	return b
}

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
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// lineWriter appends the fields of one line.
type lineWriter struct{ b []byte }

func (w *lineWriter) sep() {
	if len(w.b) > 0 {
		w.b = append(w.b, '\t')
	}
}

func (w *lineWriter) str(s string)   { w.sep(); w.b = appendEscaped(w.b, s) }
func (w *lineWriter) bytes(p []byte) { w.sep(); w.b = appendEscaped(w.b, p) }
func (w *lineWriter) int(n int64)    { w.sep(); w.b = strconv.AppendInt(w.b, n, 10) }
func (w *lineWriter) offset(n int64) { w.sep(); w.b = appendOffset(w.b, n) }
func (w *lineWriter) date(t time.Time) {
	w.sep()
	w.b = append(w.b, sortDate(t)...)
}

func (w *lineWriter) flag(v bool) {
	w.sep()
	if v {
		w.b = append(w.b, '1')
	}
}

func (w *lineWriter) headers(hs [][2]string) {
	w.int(int64(len(hs)))
	for _, h := range hs {
		w.str(h[0])
		w.str(h[1])
	}
}

// lineReader takes the fields of one line in order; the first problem is
// kept in err and later calls return zero values.
type lineReader struct {
	s   string
	n   int // fields taken
	err error
}

func newLineReader(line []byte) *lineReader { return &lineReader{s: string(line)} }

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

func (r *lineReader) str() string { return unescapeField(r.raw()) }

func (r *lineReader) bytes() []byte { return []byte(r.str()) }

func (r *lineReader) int(what string) int64 {
	f := r.raw()
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		r.fail(what, f)
	}
	return n
}

func (r *lineReader) flag(what string) bool {
	switch f := r.raw(); f {
	case "":
		return false
	case "1":
		return true
	default:
		r.fail(what, f)
		return false
	}
}

func (r *lineReader) date(what string) time.Time {
	f := r.raw()
	if f == zeroSortDate {
		return time.Time{}
	}
	t, err := time.Parse(dateSortLayout, f)
	if err != nil {
		r.fail(what, f)
	}
	return t
}

func (r *lineReader) headers() [][2]string {
	n := r.int("header count")
	if n < 0 || n > int64(len(r.s)) {
		r.fail("header count", strconv.FormatInt(n, 10))
		return nil
	}
	var hs [][2]string
	if n > 0 {
		hs = make([][2]string, n)
	}
	for i := range hs {
		hs[i] = [2]string{r.str(), r.str()}
	}
	return hs
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
	w := lineWriter{b: b[:0]}
	c := &e.Capture
	w.str(e.Key)
	w.date(c.Date)
	w.str(e.Path)
	w.offset(c.Offset)
	if e.CanBeOriginal() {
		w.str("o")
	} else {
		w.str("-")
	}
	w.str(c.RecordID)
	digest := canonical(c.Digest)
	w.str(digest)
	w.str(e.Version)
	w.str(c.Type)
	w.str(c.URI)
	w.str(e.DateText)
	w.str(c.File)
	w.int(c.Length)
	w.int(c.PayloadLength)
	w.int(int64(c.Status))
	w.flag(c.DigestMismatch)
	if c.Digest != digest {
		w.str(c.Digest) // as written, when it is not canonical
	} else {
		w.str("")
	}
	w.str(c.MIME)
	w.str(c.MIMEDetected)
	w.str(c.Metadata)
	w.str(c.Truncated)
	w.str(c.Scope)
	w.str(c.Profile)
	w.str(c.ETag)
	w.str(c.LastModified)
	w.flag(c.RevisitOf != nil)
	var ref wayside.Ref
	if c.RevisitOf != nil {
		ref = *c.RevisitOf
	}
	w.str(ref.RecordID)
	w.str(ref.TargetURI)
	w.date(ref.Date)
	w.int(e.HeadLength)
	w.str(e.NotOriginal)
	w.str(e.NotDuplicate)
	w.str(e.SameAs)
	w.bytes(e.Head)
	w.headers(e.Headers)
	return w.b
}

// parseEntry parses a manifest line (not a "#" header line).
func parseEntry(line []byte) (*Entry, error) {
	r := newLineReader(line)
	e := &Entry{}
	c := &e.Capture
	e.Key = r.str()
	c.Date = r.date("date")
	e.Path = r.str()
	c.Offset = r.int("offset")
	role := r.raw()
	c.RecordID = r.str()
	c.Digest = r.str()
	e.Version = r.str()
	c.Type = r.str()
	c.URI = r.str()
	e.DateText = r.str()
	c.File = r.str()
	c.Length = r.int("length")
	c.PayloadLength = r.int("payload length")
	c.Status = int(r.int("status"))
	c.DigestMismatch = r.flag("digest mismatch")
	if d := r.str(); d != "" {
		c.Digest = d
	}
	c.MIME = r.str()
	c.MIMEDetected = r.str()
	c.Metadata = r.str()
	c.Truncated = r.str()
	c.Scope = r.str()
	c.Profile = r.str()
	c.ETag = r.str()
	c.LastModified = r.str()
	if r.flag("revisit of") {
		c.RevisitOf = &wayside.Ref{}
	}
	ref := wayside.Ref{RecordID: r.str(), TargetURI: r.str(), Date: r.date("refers-to date")}
	if c.RevisitOf != nil {
		*c.RevisitOf = ref
	}
	e.HeadLength = r.int("head length")
	e.NotOriginal = r.str()
	e.NotDuplicate = r.str()
	e.SameAs = r.str()
	if h := r.bytes(); len(h) > 0 {
		e.Head = h
	}
	e.Headers = r.headers()
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("not a manifest line of format %d: %v", lineFormat, err)
	}
	if (role == "o") != e.CanBeOriginal() || role != "o" && role != "-" {
		return nil, errors.New("manifest line role does not match its reasons")
	}
	c.Dir = filepath.Dir(e.Path)
	return e, nil
}

// Plan lines: PATH OFFSET first (the plan sorts by file and offset), then
// the copy and its original (see doc.go).

func (c *Copy) appendLine(b []byte) []byte {
	w := lineWriter{b: b[:0]}
	w.str(c.Path)
	w.offset(c.Offset)
	w.int(c.Length)
	w.str(c.RecordID)
	w.str(c.URI)
	w.str(c.Version)
	w.int(c.PayloadLength)
	w.str(c.Key)
	o := &c.Original
	w.str(o.RecordID)
	w.str(o.URI)
	w.str(o.DateText)
	w.str(o.Digest)
	w.int(o.PayloadLength)
	w.str(o.Path)
	w.str(o.File)
	w.int(o.Offset)
	w.int(o.Length)
	w.flag(o.External)
	w.bytes(c.Head)
	w.headers(c.Headers)
	return w.b
}

func parseCopy(line []byte) (*Copy, error) {
	r := newLineReader(line)
	c := &Copy{}
	c.Path = r.str()
	c.Offset = r.int("offset")
	c.Length = r.int("length")
	c.RecordID = r.str()
	c.URI = r.str()
	c.Version = r.str()
	c.PayloadLength = r.int("payload length")
	c.Key = r.str()
	o := &c.Original
	o.RecordID = r.str()
	o.URI = r.str()
	o.DateText = r.str()
	o.Digest = r.str()
	o.PayloadLength = r.int("original payload length")
	o.Path = r.str()
	o.File = r.str()
	o.Offset = r.int("original offset")
	o.Length = r.int("original length")
	o.External = r.flag("external")
	c.Head = r.bytes()
	c.Headers = r.headers()
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("not a plan line of format %d: %v", lineFormat, err)
	}
	if c.Length <= 0 || c.RecordID == "" || c.Original.RecordID == "" || len(c.Head) == 0 {
		return nil, errors.New("plan line lacks the copy's length, record ID, head or original")
	}
	return c, nil
}
