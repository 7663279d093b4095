package warcio

import (
	"bufio"
	"bytes"
	"math/bits"
	"strings"
	"time"
)

// Field is one header line, as found (name case and order kept; folded
// continuation lines joined with a space).
type Field struct {
	Name  string
	Value string
}

// Header is an ordered list of header fields, WARC or HTTP.
type Header []Field

// Get returns the first value of the named field, compared
// case-insensitively, or "".
func (h Header) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// fieldSet is a list of ASCII field names for getEach (at most 64), with
// the names of each length.
type fieldSet struct {
	names []string
	// byLen[n] has bit i set when names[i] is n bytes long (63 or more:
	// byLen[63]).
	byLen [64]uint64
}

func newFieldSet(names ...string) *fieldSet {
	s := &fieldSet{names: names}
	for i, n := range names {
		s.byLen[min(len(n), 63)] |= 1 << i
	}
	return s
}

// getEach sets vals[i] to h.Get(s.names[i]) for every i, in one pass over
// h: a field is compared only with the names of its length —
// strings.EqualFold can match strings of different lengths only through
// a non-ASCII byte, and a field name holding one is compared with every
// name.
func (h Header) getEach(s *fieldSet, vals []string) {
	var found uint64
	all := uint64(1)<<len(s.names) - 1
	for _, f := range h {
		cand := all
		if isASCII(f.Name) {
			cand = s.byLen[min(len(f.Name), 63)]
		}
		for cand &^= found; cand != 0; cand &= cand - 1 {
			i := bits.TrailingZeros64(cand)
			if strings.EqualFold(f.Name, s.names[i]) {
				vals[i] = f.Value
				found |= 1 << i
			}
		}
		if found == all {
			return
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Has reports whether the named field is present.
func (h Header) Has(name string) bool {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

// Values returns every value of the named field.
func (h Header) Values(name string) []string {
	var out []string
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			out = append(out, f.Value)
		}
	}
	return out
}

// MediaType returns a Content-Type value's media type without parameters,
// lower-cased and trimmed ("text/html; charset=utf-8" → "text/html").
func MediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// parseField splits "Name: value" (lenient: any spacing around the colon).
// Name and value are parts of line: a head read as one string costs one
// allocation, whatever the number of its fields.
func parseField(line string) (Field, bool) {
	i := strings.IndexByte(line, ':')
	if i <= 0 {
		return Field{}, false
	}
	name := strings.TrimSpace(line[:i])
	if len(name) == 0 {
		return Field{}, false
	}
	return Field{Name: name, Value: strings.TrimSpace(line[i+1:])}, true
}

// addLine adds one header line t (its line end removed, not blank) to h:
// a continuation line (starting with a space or tab) is joined to the last
// field with a space. It reports false for a line without a colon.
func (h *Header) addLine(t string) bool {
	if (t[0] == ' ' || t[0] == '\t') && len(*h) > 0 {
		last := &(*h)[len(*h)-1]
		last.Value += " " + strings.TrimSpace(t)
		return true
	}
	f, ok := parseField(t)
	if !ok {
		return false
	}
	if *h == nil {
		*h = make(Header, 0, 16) // one allocation for most heads
	}
	*h = append(*h, f)
	return true
}

// bufferedHead returns the head (start line and header lines) at the start
// of br's buffer, up to and including the blank line that ends it, when
// that blank line lies in the bytes buffered or, reading ahead, in the
// first ahead bytes (at most limit) — the usual case, which then reads the
// head as one string —, or nil (read it line by line). The first line is
// never taken as the blank one. Nothing is consumed.
func bufferedHead(br *bufio.Reader, ahead, limit int) []byte {
	b, _ := br.Peek(br.Buffered())
	if h := headIn(b, limit); h != nil || len(b) >= min(ahead, br.Size()) {
		return h
	}
	b, _ = br.Peek(min(ahead, br.Size())) // a short read is the slow path's to report
	return headIn(b, limit)
}

// headIn returns b up to and including its first blank line after the
// first line, looking at most at limit bytes; nil when there is none.
func headIn(b []byte, limit int) []byte {
	b = b[:min(len(b), limit)]
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return nil
		}
		line := b[i : i+j]
		i += j + 1
		if i > j+1 && len(trimEOL(line)) == 0 {
			return b[:i]
		}
	}
}

// headerFor returns an empty Header with room for the fields of head (a
// start line, header lines and a blank line): one allocation of the size
// needed.
func headerFor(head string) Header {
	return make(Header, 0, max(strings.Count(head, "\n")-2, 1))
}

// nextLine splits the first line (its "\n" included) off s.
func nextLine(s string) (line, rest string) {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i+1], s[i+1:]
	}
	return s, ""
}

// trimEOLString is trimEOL for a string.
func trimEOLString(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// trimEOL removes a trailing "\n" or "\r\n" (and stray "\r"s).
func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04Z",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05",
	"2006-01-02Z",
	"2006-01-02",
	"20060102150405",
	time.RFC1123,
}

// ParseDate parses a WARC-Date leniently: W3C-DTF with any precision
// (WARC 1.1 allows fractions of a second), with or without "Z", a 14-digit
// timestamp or an RFC 1123 date. The result is in UTC.
func ParseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
