package pebble

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Value flags: which optional fields a record carries and how. The common
// ones fit the first varint byte.
const (
	fUUID        = 1 << iota // record id is "<urn:uuid:…>" in lower-case canonical form, stored as 16 bytes
	fFile                    // interned file id
	fMIME                    // interned MIME id
	fStatus                  // HTTP status
	fETag                    // ETag string
	fLastModTime             // Last-Modified in IMF-fixdate form, stored as Unix seconds
	fNanos                   // date has a sub-second part
	fRecordID                // record id stored as a string
	fFileInline              // file name stored as a string
	fMIMEInline              // MIME stored as a string
	fLastMod                 // Last-Modified stored as a string
	fLast
)

// record is the decoded value of a primary entry; file and MIME are either
// interned ids or inline strings.
type record struct {
	date          time.Time
	targetURI     string
	recordID      string
	fileID        uint64
	file          string
	offset        int64
	length        int64
	payloadLength int64
	status        int
	mimeID        uint64
	mime          string
	etag          string
	lastModified  string
}

const uuidPrefix, uuidSuffix = "<urn:uuid:", ">"

// parseUUIDRecordID returns the 16 bytes of a lower-case canonical
// "<urn:uuid:8-4-4-4-12>" record id; ok is false for any other form, which
// is then stored verbatim so the id round-trips exactly.
func parseUUIDRecordID(id string) (b [16]byte, ok bool) {
	if len(id) != len(uuidPrefix)+36+len(uuidSuffix) || id[:len(uuidPrefix)] != uuidPrefix || id[len(id)-1] != '>' {
		return b, false
	}
	u := id[len(uuidPrefix) : len(id)-1]
	if u[8] != '-' || u[13] != '-' || u[18] != '-' || u[23] != '-' {
		return b, false
	}
	h := u[0:8] + u[9:13] + u[14:18] + u[19:23] + u[24:36]
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return b, false
		}
	}
	if _, err := hex.Decode(b[:], []byte(h)); err != nil {
		return b, false
	}
	return b, true
}

func formatUUIDRecordID(b []byte) string {
	h := hex.EncodeToString(b)
	return uuidPrefix + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32] + uuidSuffix
}

// parseHTTPDate returns the Unix time of an HTTP date in the IMF-fixdate
// form servers send ("Mon, 02 Jan 2006 15:04:05 GMT"); ok is false for any
// other text, which is then stored verbatim.
func parseHTTPDate(s string) (int64, bool) {
	if len(s) != len(http.TimeFormat) {
		return 0, false
	}
	t, err := time.Parse(http.TimeFormat, s)
	if err != nil || t.Format(http.TimeFormat) != s {
		return 0, false
	}
	return t.Unix(), true
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeRecord appends the compact encoding of r to b.
func encodeRecord(b []byte, r *record) []byte {
	var flags uint64
	if r.date.Nanosecond() != 0 {
		flags |= fNanos
	}
	uuid, isUUID := parseUUIDRecordID(r.recordID)
	switch {
	case isUUID:
		flags |= fUUID
	case r.recordID != "":
		flags |= fRecordID
	}
	switch {
	case r.fileID != 0:
		flags |= fFile
	case r.file != "":
		flags |= fFileInline
	}
	switch {
	case r.mimeID != 0:
		flags |= fMIME
	case r.mime != "":
		flags |= fMIMEInline
	}
	if r.etag != "" {
		flags |= fETag
	}
	lmTime, lmIsTime := parseHTTPDate(r.lastModified)
	switch {
	case lmIsTime:
		flags |= fLastModTime
	case r.lastModified != "":
		flags |= fLastMod
	}
	if r.status != 0 {
		flags |= fStatus
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendVarint(b, r.date.Unix())
	if flags&fNanos != 0 {
		b = binary.AppendUvarint(b, uint64(r.date.Nanosecond()))
	}
	b = appendString(b, r.targetURI)
	if flags&fUUID != 0 {
		b = append(b, uuid[:]...)
	} else if flags&fRecordID != 0 {
		b = appendString(b, r.recordID)
	}
	if flags&fFile != 0 {
		b = binary.AppendUvarint(b, r.fileID)
	} else if flags&fFileInline != 0 {
		b = appendString(b, r.file)
	}
	b = binary.AppendUvarint(b, uint64(r.offset))
	b = binary.AppendUvarint(b, uint64(r.length))
	b = binary.AppendUvarint(b, uint64(r.payloadLength))
	if flags&fStatus != 0 {
		b = binary.AppendUvarint(b, uint64(r.status))
	}
	if flags&fMIME != 0 {
		b = binary.AppendUvarint(b, r.mimeID)
	} else if flags&fMIMEInline != 0 {
		b = appendString(b, r.mime)
	}
	if flags&fETag != 0 {
		b = appendString(b, r.etag)
	}
	if flags&fLastMod != 0 {
		b = appendString(b, r.lastModified)
	} else if flags&fLastModTime != 0 {
		b = binary.AppendVarint(b, lmTime)
	}
	return b
}

var errShort = errors.New("value truncated")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int63() int64 {
	v := d.uvarint()
	if v > 1<<63-1 {
		d.err = fmt.Errorf("value %d out of range", v)
		return 0
	}
	return int64(v)
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.err = errShort
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes(d.uvarint())) }

// decodeRecord parses a value written by encodeRecord.
func decodeRecord(b []byte) (record, error) {
	d := decoder{b: b}
	var r record
	flags := d.uvarint()
	if flags >= fLast {
		return record{}, fmt.Errorf("unknown value flags %#x", flags)
	}
	sec := d.varint()
	var nsec uint64
	if flags&fNanos != 0 {
		nsec = d.uvarint()
		if nsec >= 1e9 || nsec == 0 {
			return record{}, fmt.Errorf("bad nanoseconds %d", nsec)
		}
	}
	r.date = time.Unix(sec, int64(nsec)).UTC()
	r.targetURI = d.string()
	if flags&fUUID != 0 && flags&fRecordID != 0 || flags&fFile != 0 && flags&fFileInline != 0 || flags&fMIME != 0 && flags&fMIMEInline != 0 {
		return record{}, fmt.Errorf("conflicting value flags %#x", flags)
	}
	if flags&fUUID != 0 {
		if u := d.bytes(16); d.err == nil {
			r.recordID = formatUUIDRecordID(u)
		}
	} else if flags&fRecordID != 0 {
		r.recordID = d.string()
	}
	if flags&fFile != 0 {
		r.fileID = d.uvarint()
		if d.err == nil && r.fileID == 0 {
			return record{}, fmt.Errorf("file id 0")
		}
	} else if flags&fFileInline != 0 {
		r.file = d.string()
	}
	r.offset = d.int63()
	r.length = d.int63()
	r.payloadLength = d.int63()
	if flags&fStatus != 0 {
		s := d.uvarint()
		if d.err == nil && (s == 0 || s > 999) {
			return record{}, fmt.Errorf("bad status %d", s)
		}
		r.status = int(s)
	}
	if flags&fMIME != 0 {
		r.mimeID = d.uvarint()
		if d.err == nil && r.mimeID == 0 {
			return record{}, fmt.Errorf("MIME id 0")
		}
	} else if flags&fMIMEInline != 0 {
		r.mime = d.string()
	}
	if flags&fETag != 0 {
		r.etag = d.string()
	}
	if flags&fLastMod != 0 && flags&fLastModTime != 0 {
		return record{}, fmt.Errorf("conflicting value flags %#x", flags)
	}
	if flags&fLastMod != 0 {
		r.lastModified = d.string()
	} else if flags&fLastModTime != 0 {
		r.lastModified = time.Unix(d.varint(), 0).UTC().Format(http.TimeFormat)
	}
	if d.err != nil {
		return record{}, d.err
	}
	// Only the canonical encoding is accepted: flags never announce an
	// empty string.
	if flags&fRecordID != 0 && r.recordID == "" || flags&fFileInline != 0 && r.file == "" ||
		flags&fMIMEInline != 0 && r.mime == "" || flags&fETag != 0 && r.etag == "" || flags&fLastMod != 0 && r.lastModified == "" {
		return record{}, fmt.Errorf("empty string field announced by flags %#x", flags)
	}
	if len(d.b) != 0 {
		return record{}, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return r, nil
}
