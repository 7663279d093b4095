package cdxj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/excerpt"
	"github.com/wayside-archive/wayside/surt"
)

// ErrSyntax is wrapped by every line parse error.
var ErrSyntax = errors.New("cdxj: syntax error")

// RevisitMIME is the mime pywb writes for revisit records.
const RevisitMIME = "warc/revisit"

// Line is one index line: a CDXJ line, or a classic CDX line read into the
// same shape.
type Line struct {
	Key       string // SURT urlkey, e.g. "com,example)/"
	Timestamp string // 14 digits, UTC
	URL       string // original URL
	MIME      string // payload media type; "warc/revisit" for revisits
	// MIMEDetected is the WARC-Identified-Payload-Type ("mime-detected").
	MIMEDetected string
	Status       int // HTTP status; 0 = none ("-")
	// Digest is the payload digest as indexes write it: Base32 without a
	// label for SHA-1 (pywb, CDX), "alg:value" otherwise. Compare digests
	// only through CanonicalDigest.
	Digest string
	// Length and Offset locate the record in Filename (stored bytes); -1
	// means absent.
	Length   int64
	Offset   int64
	Filename string
	// Redirect and MetaTags are the CDX "r" and "M" fields ("" for "-").
	Redirect string
	MetaTags string
	// Metadata is the WARC-Json-Metadata header ("metadata"), kept as text.
	Metadata string
	// Extra keeps other JSON fields of a CDXJ line, in order.
	Extra []Field
}

// Field is an extra JSON member of a CDXJ line; Value is raw JSON.
type Field struct {
	Key   string
	Value json.RawMessage
}

// IsRevisit reports whether the line indexes a revisit record.
func (l *Line) IsRevisit() bool { return l.MIME == RevisitMIME }

// CanonicalDigest returns the digest in digest.Normalize form.
func (l *Line) CanonicalDigest() (string, error) { return digest.Normalize(l.Digest) }

// IndexDigest converts a canonical digest ("sha1:BASE32") to the form CDX
// and pywb CDXJ write: bare Base32 for SHA-1, unchanged otherwise.
func IndexDigest(canonical string) string {
	if rest, ok := strings.CutPrefix(canonical, digest.SHA1+":"); ok {
		return rest
	}
	return canonical
}

// canonicalOr returns the canonical form of a digest, or d itself when it
// does not parse.
func canonicalOr(d string) string {
	if c, err := digest.Normalize(d); err == nil {
		return c
	}
	return d
}

// Timestamp formats t as a 14-digit UTC timestamp.
func timestamp14(c wayside.Capture) string {
	t := c.Date.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.Format("20060102150405")
	}
	h, mi, s := t.Clock()
	var b [14]byte
	for i, v := range [...]int{y / 100, y % 100, int(mo), d, h, mi, s} {
		b[2*i], b[2*i+1] = byte('0'+v/10), byte('0'+v%10)
	}
	return string(b[:])
}

// FromCapture returns the index line of a capture, as pywb's cdxj-indexer
// writes it for the same record (the capture must come from
// warcio.Record.Capture, the one record converter): key = SURT of the URI
// (the URI itself when it does not canonicalise, and for warcinfo records,
// filed under their file name); revisits get mime "warc/revisit" and keep
// the status of their HTTP block; mime-detected is given for non-revisits
// only; digest in index form (bare Base32 for SHA-1).
func FromCapture(c wayside.Capture) Line {
	key, err := surt.Canonicalize(c.URI)
	if err != nil || c.Type == "warcinfo" {
		key = c.URI
	}
	return FromCaptureKey(c, key)
}

// FromCaptureKey is FromCapture for a capture whose key is known already
// (an index that stores it), sparing the SURT canonicalisation.
func FromCaptureKey(c wayside.Capture, key string) Line {
	l := Line{
		Key:       key,
		Timestamp: timestamp14(c),
		URL:       c.URI,
		MIME:      c.MIME,
		Status:    c.Status,
		Digest:    IndexDigest(canonicalOr(c.Digest)),
		Length:    c.Length,
		Offset:    c.Offset,
		Filename:  c.File,
		Metadata:  c.Metadata,
	}
	if c.Date.IsZero() {
		l.Timestamp = "00000000000000"
	}
	if c.IsRevisit() {
		l.MIME = RevisitMIME
	} else {
		l.MIMEDetected = c.MIMEDetected
	}
	return l
}

// String returns Format(nil) as a string, without the newline.
func (l *Line) String() string {
	b := l.Format(nil)
	return string(b[:len(b)-1])
}

// Format appends the CDXJ line, newline included, to dst.
func (l *Line) Format(dst []byte) []byte {
	dst = append(dst, l.Key...)
	dst = append(dst, ' ')
	dst = append(dst, l.Timestamp...)
	dst = append(dst, ' ', '{')
	first := true
	str := func(k, v string) {
		if v == "" || v == "-" {
			return
		}
		if !first {
			dst = append(dst, ',', ' ')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':', ' ')
		dst = appendJSONString(dst, v)
	}
	num := func(k string, v int64) {
		if v < 0 {
			return
		}
		// As str(k, strconv.FormatInt(v, 10)): digits need no escaping.
		if !first {
			dst = append(dst, ',', ' ')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':', ' ', '"')
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, '"')
	}
	str("metadata", l.Metadata) // pywb's entries create this key first
	str("url", l.URL)
	str("mime", l.MIME)
	str("mime-detected", l.MIMEDetected)
	if l.Status > 0 {
		num("status", int64(l.Status))
	}
	str("digest", l.Digest)
	str("redirect", l.Redirect)
	str("metatags", l.MetaTags)
	num("length", l.Length)
	num("offset", l.Offset)
	for _, f := range l.Extra {
		if !first {
			dst = append(dst, ',', ' ')
		}
		first = false
		dst = appendJSONString(dst, f.Key)
		dst = append(dst, ':', ' ')
		dst = append(dst, f.Value...)
	}
	str("filename", l.Filename)
	return append(dst, '}', '\n')
}

// appendJSONString writes s as a JSON string the way Python's json.dumps
// does (ensure_ascii): non-ASCII as \uXXXX, invalid UTF-8 as U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hexdig = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		// A run of bytes that need no escaping is appended whole.
		j := i
		for j < len(s) && jsonPlain(s[j]) {
			j++
		}
		if j > i {
			dst = append(dst, s[i:j]...)
			if i = j; i == len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hexdig[c>>4], hexdig[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		u := func(v rune) {
			dst = append(dst, '\\', 'u', hexdig[v>>12&15], hexdig[v>>8&15], hexdig[v>>4&15], hexdig[v&15])
		}
		if r >= 0x10000 {
			r -= 0x10000
			u(0xd800 + (r>>10)&0x3ff)
			u(0xdc00 + r&0x3ff)
		} else {
			u(r)
		}
	}
	return append(dst, '"')
}

// jsonPlain reports whether appendJSONString writes c as it is.
func jsonPlain(c byte) bool { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' }

// Parse parses one CDXJ line (a trailing newline is allowed).
func Parse(s string) (Line, error) {
	s = strings.TrimRight(s, "\r\n")
	key, rest, ok1 := strings.Cut(s, " ")
	ts, js, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || key == "" {
		return Line{}, fmt.Errorf("%w: want \"<key> <timestamp> {json}\", got %s", ErrSyntax, excerpt.Quote(s, 120))
	}
	if !isTimestamp(ts) {
		return Line{}, fmt.Errorf("%w: bad timestamp %s", ErrSyntax, excerpt.Quote(ts, 120))
	}
	l := Line{Key: key, Timestamp: ts, Length: -1, Offset: -1}
	js = strings.TrimSpace(js)
	if !strings.HasPrefix(js, "{") {
		return Line{}, fmt.Errorf("%w: no JSON block in %s", ErrSyntax, excerpt.Quote(s, 120))
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return Line{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return Line{}, fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		k, ok := t.(string)
		if !ok {
			return Line{}, fmt.Errorf("%w: bad JSON key %v", ErrSyntax, t)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Line{}, fmt.Errorf("%w: JSON value of %q: %v", ErrSyntax, k, err)
		}
		if err := l.setJSON(k, raw); err != nil {
			return Line{}, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return Line{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if dec.More() {
		return Line{}, fmt.Errorf("%w: data after the JSON block", ErrSyntax)
	}
	if _, err := dec.Token(); err == nil {
		return Line{}, fmt.Errorf("%w: data after the JSON block", ErrSyntax)
	}
	return l, nil
}

// scalar returns a JSON string or number as a string.
func scalar(k string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: %q: %v", ErrSyntax, k, err)
		}
		return s, nil
	}
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return string(raw), nil
	}
	if string(raw) == "null" {
		return "", nil
	}
	return "", fmt.Errorf("%w: %s must be a string or number, got %s", ErrSyntax, k, excerpt.Quote(raw, 120))
}

func (l *Line) setJSON(k string, raw json.RawMessage) error {
	switch k {
	case "url", "mime", "digest", "filename", "redirect", "metatags", "mime-detected", "metadata":
		v, err := scalar(k, raw)
		if err != nil {
			return err
		}
		switch k {
		case "url":
			l.URL = v
		case "mime":
			l.MIME = v
		case "digest":
			l.Digest = v
		case "filename":
			l.Filename = v
		case "redirect":
			l.Redirect = v
		case "metatags":
			l.MetaTags = v
		case "mime-detected":
			l.MIMEDetected = v
		case "metadata":
			l.Metadata = v
		}
	case "status", "length", "offset":
		v, err := scalar(k, raw)
		if err != nil {
			return err
		}
		if v == "" || v == "-" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: %s is not a non-negative integer: %s", ErrSyntax, k, excerpt.Quote(v, 120))
		}
		switch k {
		case "status":
			if n > 999 {
				return fmt.Errorf("%w: status %d out of range", ErrSyntax, n)
			}
			l.Status = int(n)
		case "length":
			l.Length = n
		case "offset":
			l.Offset = n
		}
	default:
		l.Extra = append(l.Extra, Field{Key: k, Value: append(json.RawMessage(nil), bytes.TrimSpace(raw)...)})
	}
	return nil
}

func isTimestamp(s string) bool {
	if len(s) < 4 || len(s) > 17 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
