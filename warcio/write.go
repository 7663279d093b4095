package warcio

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// RecordHead is the header of a WARC record to be written: the one WARC
// record encoder of Wayside (the crawler's writer and ARC conversion use
// it; Draft.Marshal builds on it). Write emits, in this order, the version line, WARC-Type,
// WARC-Record-ID, WARC-Date, Fields as given, WARC-Warcinfo-ID (when set),
// WARC-Block-Digest, Content-Length and the blank line; the caller then
// writes exactly ContentLength block bytes and RecordEnd.
type RecordHead struct {
	Version       string // "1.0" or "1.1"
	Type          string
	ID            string // "<urn:uuid:...>"
	Date          string // formatted WARC-Date (see FormatDate)
	Fields        []Field
	WarcinfoID    string
	BlockDigest   string // labelled digest, e.g. "sha1:BASE32"
	ContentLength int64
}

// RecordEnd follows every record's block.
const RecordEnd = "\r\n\r\n"

// Write appends the header to buf.
func (h *RecordHead) Write(buf *bytes.Buffer) {
	buf.WriteString("WARC/")
	buf.WriteString(h.Version)
	buf.WriteString("\r\n")
	writeField(buf, "WARC-Type", h.Type)
	writeField(buf, "WARC-Record-ID", h.ID)
	writeField(buf, "WARC-Date", h.Date)
	for _, f := range h.Fields {
		writeField(buf, f.Name, f.Value)
	}
	if h.WarcinfoID != "" {
		writeField(buf, "WARC-Warcinfo-ID", h.WarcinfoID)
	}
	writeField(buf, "WARC-Block-Digest", h.BlockDigest)
	writeField(buf, "Content-Length", strconv.FormatInt(h.ContentLength, 10))
	buf.WriteString("\r\n")
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
	if version == "1.0" {
		return t.Truncate(time.Second).Format("2006-01-02T15:04:05Z")
	}
	return t.Truncate(time.Microsecond).Format(time.RFC3339Nano)
}
