package record

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
	fOrigin                  // target URI split: interned origin id, then the rest as a string
	fLast
)

// Record is the stored form of an original. File, MIME and the target
// URI's origin are either interned ids (non-zero; the caller's table maps
// them to names) or inline strings; the digest is not part of the value
// (backends keep it in the key).
type Record struct {
	Date time.Time
	// TargetURI is the whole target URI, or the part after the origin
	// when OriginID is set.
	TargetURI     string
	OriginID      uint64
	RecordID      string
	FileID        uint64
	File          string
	Offset        int64
	Length        int64
	PayloadLength int64
	Status        int
	MIMEID        uint64
	MIME          string
	ETag          string
	LastModified  string
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

// Append appends the compact encoding of r to b.
func Append(b []byte, r *Record) []byte { return appendRecord(b, r, nil) }

func appendRecord(b []byte, r *Record, m *marks) []byte {
	var flags uint64
	if r.Date.Nanosecond() != 0 {
		flags |= fNanos
	}
	uuid, isUUID := parseUUIDRecordID(r.RecordID)
	switch {
	case isUUID:
		flags |= fUUID
	case r.RecordID != "":
		flags |= fRecordID
	}
	switch {
	case r.FileID != 0:
		flags |= fFile
	case r.File != "":
		flags |= fFileInline
	}
	switch {
	case r.MIMEID != 0:
		flags |= fMIME
	case r.MIME != "":
		flags |= fMIMEInline
	}
	if r.ETag != "" {
		flags |= fETag
	}
	lmTime, lmIsTime := parseHTTPDate(r.LastModified)
	switch {
	case lmIsTime:
		flags |= fLastModTime
	case r.LastModified != "":
		flags |= fLastMod
	}
	if r.Status != 0 {
		flags |= fStatus
	}
	if r.OriginID != 0 {
		flags |= fOrigin
	}
	m.at(FieldHeader, b)
	b = binary.AppendUvarint(b, flags)
	m.at(FieldDate, b)
	b = binary.AppendVarint(b, r.Date.Unix())
	if flags&fNanos != 0 {
		b = binary.AppendUvarint(b, uint64(r.Date.Nanosecond()))
	}
	m.at(FieldOrigin, b)
	if flags&fOrigin != 0 {
		b = binary.AppendUvarint(b, r.OriginID)
	}
	m.at(FieldURI, b)
	b = appendString(b, r.TargetURI)
	m.at(FieldRecordID, b)
	if flags&fUUID != 0 {
		b = append(b, uuid[:]...)
	} else if flags&fRecordID != 0 {
		b = appendString(b, r.RecordID)
	}
	m.at(FieldFile, b)
	if flags&fFile != 0 {
		b = binary.AppendUvarint(b, r.FileID)
	} else if flags&fFileInline != 0 {
		b = appendString(b, r.File)
	}
	m.at(FieldOffset, b)
	b = binary.AppendUvarint(b, uint64(r.Offset))
	m.at(FieldLength, b)
	b = binary.AppendUvarint(b, uint64(r.Length))
	m.at(FieldPayloadLength, b)
	b = binary.AppendUvarint(b, uint64(r.PayloadLength))
	m.at(FieldStatus, b)
	if flags&fStatus != 0 {
		b = binary.AppendUvarint(b, uint64(r.Status))
	}
	m.at(FieldMIME, b)
	if flags&fMIME != 0 {
		b = binary.AppendUvarint(b, r.MIMEID)
	} else if flags&fMIMEInline != 0 {
		b = appendString(b, r.MIME)
	}
	m.at(FieldETag, b)
	if flags&fETag != 0 {
		b = appendString(b, r.ETag)
	}
	m.at(FieldLastModified, b)
	if flags&fLastMod != 0 {
		b = appendString(b, r.LastModified)
	} else if flags&fLastModTime != 0 {
		b = binary.AppendVarint(b, lmTime)
	}
	m.at("", b)
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

// Decode parses a value written by Append.
func Decode(b []byte) (Record, error) {
	d := decoder{b: b}
	var r Record
	flags := d.uvarint()
	if flags >= fLast {
		return Record{}, fmt.Errorf("unknown value flags %#x", flags)
	}
	sec := d.varint()
	var nsec uint64
	if flags&fNanos != 0 {
		nsec = d.uvarint()
		if nsec >= 1e9 || nsec == 0 {
			return Record{}, fmt.Errorf("bad nanoseconds %d", nsec)
		}
	}
	r.Date = time.Unix(sec, int64(nsec)).UTC()
	if flags&fOrigin != 0 {
		r.OriginID = d.uvarint()
		if d.err == nil && r.OriginID == 0 {
			return Record{}, fmt.Errorf("origin id 0")
		}
	}
	r.TargetURI = d.string()
	if flags&fUUID != 0 && flags&fRecordID != 0 || flags&fFile != 0 && flags&fFileInline != 0 || flags&fMIME != 0 && flags&fMIMEInline != 0 {
		return Record{}, fmt.Errorf("conflicting value flags %#x", flags)
	}
	if flags&fUUID != 0 {
		if u := d.bytes(16); d.err == nil {
			r.RecordID = formatUUIDRecordID(u)
		}
	} else if flags&fRecordID != 0 {
		r.RecordID = d.string()
	}
	if flags&fFile != 0 {
		r.FileID = d.uvarint()
		if d.err == nil && r.FileID == 0 {
			return Record{}, fmt.Errorf("file id 0")
		}
	} else if flags&fFileInline != 0 {
		r.File = d.string()
	}
	r.Offset = d.int63()
	r.Length = d.int63()
	r.PayloadLength = d.int63()
	if flags&fStatus != 0 {
		s := d.uvarint()
		if d.err == nil && (s == 0 || s > 999) {
			return Record{}, fmt.Errorf("bad status %d", s)
		}
		r.Status = int(s)
	}
	if flags&fMIME != 0 {
		r.MIMEID = d.uvarint()
		if d.err == nil && r.MIMEID == 0 {
			return Record{}, fmt.Errorf("MIME id 0")
		}
	} else if flags&fMIMEInline != 0 {
		r.MIME = d.string()
	}
	if flags&fETag != 0 {
		r.ETag = d.string()
	}
	if flags&fLastMod != 0 && flags&fLastModTime != 0 {
		return Record{}, fmt.Errorf("conflicting value flags %#x", flags)
	}
	if flags&fLastMod != 0 {
		r.LastModified = d.string()
	} else if flags&fLastModTime != 0 {
		r.LastModified = time.Unix(d.varint(), 0).UTC().Format(http.TimeFormat)
	}
	if d.err != nil {
		return Record{}, d.err
	}
	// Only the canonical encoding is accepted: flags never announce an
	// empty string.
	if flags&fRecordID != 0 && r.RecordID == "" || flags&fFileInline != 0 && r.File == "" ||
		flags&fMIMEInline != 0 && r.MIME == "" || flags&fETag != 0 && r.ETag == "" || flags&fLastMod != 0 && r.LastModified == "" {
		return Record{}, fmt.Errorf("empty string field announced by flags %#x", flags)
	}
	if len(d.b) != 0 {
		return Record{}, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return r, nil
}
