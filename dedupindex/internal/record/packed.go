package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/huff0"
)

// The packed encoding (AppendPacked, DecodePacked) is the record's form in
// memory-bound stores (dedupindex/redis, layout 3). It keeps every field
// of the original and spends bytes where real originals need them:
//
//	header   uvarint: format version (low 2 bits, packedVersion), then flags
//	date     4 bytes big-endian Unix seconds (varint when pWideDate),
//	         then µs or ns as a uvarint when pMicros / pNanos
//	id       16 bytes for a canonical urn:uuid (pUUID), else a string
//	         (length 0: no record id)
//	file     interned id, or a string (pFileInline)
//	offset, length, payload length   uvarints
//	status   nothing for 200 (pStatus200), else a uvarint (0: none)
//	MIME     interned id (0: none), or a string (pMIMEInline)
//	ETag     text (pETag): see appendText
//	Last-Modified  varint seconds before the date for an IMF-fixdate
//	         (pLastModTime), or a string (pLastModText)
//	origin   interned id of the target URI's origin (pOrigin)
//	URI      the rest of the target URI (all of it without pOrigin) up to
//	         the end of the value: Huffman-coded (pHuff) or verbatim
//
// The first byte holds the version and the five commonest flags, so a
// typical original has a one-byte header. A value with another version is
// refused (ErrPackedVersion), so a later format can tell its values apart.
const packedVersion = 1

// Packed flags, after the two version bits of the header.
const (
	pUUID        = 1 << iota // record id is "<urn:uuid:…>" in lower-case canonical form: 16 bytes
	pStatus200               // HTTP status 200
	pOrigin                  // target URI: interned origin id, then the rest
	pHuff                    // the URI is Huffman-coded
	pLastModTime             // Last-Modified is an IMF-fixdate: varint seconds before the date
	// The first byte ends here (2 version bits + 5 flags).
	pETag        // ETag present
	pMicros      // date has a sub-second part in whole microseconds
	pNanos       // date has another sub-second part: nanoseconds
	pWideDate    // date seconds as a varint (outside 0..2^32-1)
	pFileInline  // file name as a string
	pMIMEInline  // MIME as a string
	pLastModText // Last-Modified verbatim
	pLast
)

// ErrPackedVersion is wrapped by DecodePacked for a value written in
// another version of the packed format.
var ErrPackedVersion = errors.New("packed value of an unknown format version")

// AppendPacked appends the packed encoding of r to b.
func AppendPacked(b []byte, r *Record) []byte { return appendPacked(b, r, nil) }

func appendPacked(b []byte, r *Record, m *marks) []byte {
	var flags uint64
	uuid, isUUID := parseUUIDRecordID(r.RecordID)
	if isUUID {
		flags |= pUUID
	}
	if r.Status == 200 {
		flags |= pStatus200
	}
	if r.OriginID != 0 {
		flags |= pOrigin
	}
	uri, huffed := huffEncode(r.TargetURI)
	if huffed {
		flags |= pHuff
	}
	lmTime, lmIsTime := parseHTTPDate(r.LastModified)
	switch {
	case lmIsTime:
		flags |= pLastModTime
	case r.LastModified != "":
		flags |= pLastModText
	}
	if r.ETag != "" {
		flags |= pETag
	}
	sec, nsec := r.Date.Unix(), r.Date.Nanosecond()
	switch {
	case nsec == 0:
	case nsec%1000 == 0:
		flags |= pMicros
	default:
		flags |= pNanos
	}
	if sec < 0 || sec > math.MaxUint32 {
		flags |= pWideDate
	}
	if r.FileID == 0 {
		flags |= pFileInline
	}
	if r.MIMEID == 0 && r.MIME != "" {
		flags |= pMIMEInline
	}
	m.at(FieldHeader, b)
	b = binary.AppendUvarint(b, flags<<2|packedVersion)
	m.at(FieldDate, b)
	if flags&pWideDate != 0 {
		b = binary.AppendVarint(b, sec)
	} else {
		b = binary.BigEndian.AppendUint32(b, uint32(sec))
	}
	switch {
	case flags&pMicros != 0:
		b = binary.AppendUvarint(b, uint64(nsec/1000))
	case flags&pNanos != 0:
		b = binary.AppendUvarint(b, uint64(nsec))
	}
	m.at(FieldRecordID, b)
	if isUUID {
		b = append(b, uuid[:]...)
	} else {
		b = appendString(b, r.RecordID)
	}
	m.at(FieldFile, b)
	if flags&pFileInline != 0 {
		b = appendString(b, r.File)
	} else {
		b = binary.AppendUvarint(b, r.FileID)
	}
	m.at(FieldOffset, b)
	b = binary.AppendUvarint(b, uint64(r.Offset))
	m.at(FieldLength, b)
	b = binary.AppendUvarint(b, uint64(r.Length))
	m.at(FieldPayloadLength, b)
	b = binary.AppendUvarint(b, uint64(r.PayloadLength))
	m.at(FieldStatus, b)
	if flags&pStatus200 == 0 {
		b = binary.AppendUvarint(b, uint64(r.Status))
	}
	m.at(FieldMIME, b)
	if flags&pMIMEInline != 0 {
		b = appendString(b, r.MIME)
	} else {
		b = binary.AppendUvarint(b, r.MIMEID)
	}
	m.at(FieldETag, b)
	if flags&pETag != 0 {
		b = appendText(b, r.ETag)
	}
	m.at(FieldLastModified, b)
	switch {
	case lmIsTime:
		b = binary.AppendVarint(b, sec-lmTime)
	case r.LastModified != "":
		b = appendString(b, r.LastModified)
	}
	m.at(FieldOrigin, b)
	if r.OriginID != 0 {
		b = binary.AppendUvarint(b, r.OriginID)
	}
	m.at(FieldURI, b)
	b = append(b, uri...)
	m.at("", b)
	return b
}

// DecodePacked parses a value written by AppendPacked.
func DecodePacked(b []byte) (Record, error) {
	d := decoder{b: b}
	var r Record
	h := d.uvarint()
	if d.err != nil {
		return Record{}, d.err
	}
	if v := h & 3; v != packedVersion {
		return Record{}, fmt.Errorf("%w %d", ErrPackedVersion, v)
	}
	flags := h >> 2
	if flags >= pLast || flags&pMicros != 0 && flags&pNanos != 0 || flags&pLastModTime != 0 && flags&pLastModText != 0 {
		return Record{}, fmt.Errorf("bad packed flags %#x", flags)
	}
	var sec int64
	if flags&pWideDate != 0 {
		sec = d.varint()
	} else if v := d.bytes(4); d.err == nil {
		sec = int64(binary.BigEndian.Uint32(v))
	}
	var nsec uint64
	switch {
	case flags&pMicros != 0:
		nsec = d.uvarint() * 1000
	case flags&pNanos != 0:
		nsec = d.uvarint()
	}
	if d.err == nil && (nsec >= 1e9 || flags&(pMicros|pNanos) != 0 && nsec == 0) {
		return Record{}, fmt.Errorf("bad sub-second part %d ns", nsec)
	}
	r.Date = time.Unix(sec, int64(nsec)).UTC()
	if flags&pUUID != 0 {
		if u := d.bytes(16); d.err == nil {
			r.RecordID = formatUUIDRecordID(u)
		}
	} else {
		r.RecordID = d.string()
	}
	if flags&pFileInline != 0 {
		r.File = d.string()
	} else if r.FileID = d.uvarint(); d.err == nil && r.FileID == 0 {
		return Record{}, errors.New("file id 0")
	}
	r.Offset = d.int63()
	r.Length = d.int63()
	r.PayloadLength = d.int63()
	if flags&pStatus200 != 0 {
		r.Status = 200
	} else if s := d.uvarint(); d.err == nil {
		if s != 0 && (s < 100 || s > 999) {
			return Record{}, fmt.Errorf("bad status %d", s)
		}
		r.Status = int(s)
	}
	if flags&pMIMEInline != 0 {
		r.MIME = d.string()
	} else {
		r.MIMEID = d.uvarint()
	}
	if flags&pETag != 0 {
		r.ETag = d.text()
	}
	switch {
	case flags&pLastModTime != 0:
		r.LastModified = time.Unix(sec-d.varint(), 0).UTC().Format(http.TimeFormat)
	case flags&pLastModText != 0:
		r.LastModified = d.string()
	}
	if flags&pOrigin != 0 {
		if r.OriginID = d.uvarint(); d.err == nil && r.OriginID == 0 {
			return Record{}, errors.New("origin id 0")
		}
	}
	if d.err != nil {
		return Record{}, d.err
	}
	if flags&pHuff != 0 {
		uri, err := huffDecode(d.b)
		if err != nil {
			return Record{}, fmt.Errorf("target URI: %w", err)
		}
		r.TargetURI = uri
	} else {
		r.TargetURI = string(d.b)
	}
	if flags&pMIMEInline != 0 && r.MIME == "" ||
		flags&pETag != 0 && r.ETag == "" || flags&pLastModText != 0 && r.LastModified == "" {
		return Record{}, fmt.Errorf("empty string field announced by flags %#x", flags)
	}
	return r, nil
}

// ETag forms appendText tells apart, so that the quotes of the common
// forms cost no bytes.
const (
	etagVerbatim = iota
	etagStrong   // "x"
	etagWeak     // W/"x"
)

// appendText appends an ETag: a uvarint of (length << 3 | form << 1 |
// huffman), then the inner text, Huffman-coded when that is shorter.
func appendText(b []byte, s string) []byte {
	form := etagVerbatim
	switch {
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		form, s = etagStrong, s[1:len(s)-1]
	case len(s) >= 4 && strings.HasPrefix(s, `W/"`) && s[len(s)-1] == '"':
		form, s = etagWeak, s[3:len(s)-1]
	}
	enc, huffed := huffEncode(s)
	h := uint64(len(enc))<<3 | uint64(form)<<1
	if huffed {
		h |= 1
	}
	b = binary.AppendUvarint(b, h)
	return append(b, enc...)
}

func (d *decoder) text() string {
	h := d.uvarint()
	enc := d.bytes(h >> 3)
	if d.err != nil {
		return ""
	}
	s := string(enc)
	if h&1 != 0 {
		var err error
		if s, err = huffDecode(enc); err != nil {
			d.err = fmt.Errorf("ETag: %w", err)
			return ""
		}
	}
	switch (h >> 1) & 3 {
	case etagVerbatim:
		return s
	case etagStrong:
		return `"` + s + `"`
	case etagWeak:
		return `W/"` + s + `"`
	}
	d.err = fmt.Errorf("unknown ETag form %d", (h>>1)&3)
	return ""
}

// The Huffman code of URIs: a fixed huff0 table (urltable.go, built by
// gen_urltable.go from the URI paths of real crawls) in which every byte
// value has a code, so any string can be coded; huff0's 1X streams mark
// their own end. A string the table does not make shorter is kept
// verbatim.
var (
	// huffDecoder is built on first use, not at package initialisation.
	huffDecoder = sync.OnceValue(func() *huff0.Decoder { return newHuffScratch().Decoder() })
	huffPool    = sync.Pool{New: func() any { return newHuffScratch() }}
)

func newHuffScratch() *huff0.Scratch {
	s, _, err := huff0.ReadTable(urlTable, nil)
	if err != nil {
		panic("record: URI Huffman table: " + err.Error())
	}
	s.Reuse = huff0.ReusePolicyMust
	return s
}

// huffEncode returns s Huffman-coded and true, or s and false when the
// code is not shorter.
func huffEncode(s string) (string, bool) {
	if len(s) < 2 || len(s) >= huff0.BlockSizeMax {
		return s, false
	}
	sc := huffPool.Get().(*huff0.Scratch)
	defer huffPool.Put(sc)
	out, reused, err := huff0.Compress1X([]byte(s), sc)
	if err != nil || !reused || len(out) >= len(s) {
		return s, false
	}
	return string(out), true
}

func huffDecode(b []byte) (string, error) {
	if len(b) == 0 {
		return "", errors.New("empty Huffman stream")
	}
	// A code is at least one bit long; the decoder wants some room to spare.
	out, err := huffDecoder().Decompress1X(make([]byte, 0, 8*len(b)+8), b)
	if err != nil {
		return "", err
	}
	return string(out), nil
}
