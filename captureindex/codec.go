package captureindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wayside-archive/wayside/digest"
)

// Value flags: which optional fields an entry carries.
const (
	fStatus        = 1 << iota // HTTP status
	fMIME                      // interned MIME id
	fDigest                    // parsed digest: algorithm code + sum
	fDigestInline              // digest kept as text (it does not parse)
	fPayloadLength             // payload length
	fNanos                     // the date has a sub-second part
	fTruncated                 // WARC-Truncated reason
	fMIMEDetected              // interned WARC-Identified-Payload-Type id
	fProfile                   // revisit profile (code, or inline text)
	fRefURI                    // WARC-Refers-To-Target-URI differs from the URI
	fRefSameURI                // WARC-Refers-To-Target-URI equals the URI
	fRefDate                   // WARC-Refers-To-Date
	fOriginal                  // the revisit's original: interned file, offset, length
	fRefID                     // WARC-Refers-To record id
	fMetadata                  // WARC-Json-Metadata
	fLast
)

// Record types.
const (
	typeResponse   byte = 1
	typeRevisit    byte = 2
	typeResource   byte = 3
	typeConversion byte = 4
)

var typeNames = map[byte]string{typeResponse: "response", typeRevisit: "revisit", typeResource: "resource", typeConversion: "conversion"}

func typeCode(t string) byte {
	for c, n := range typeNames {
		if n == t {
			return c
		}
	}
	return 0
}

// Revisit profiles, coded (anything else is kept as text).
var profiles = []string{
	"",
	"http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
	"http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
	"http://netpreserve.org/warc/1.0/revisit/server-not-modified",
	"http://netpreserve.org/warc/1.1/revisit/server-not-modified",
	"http://netpreserve.org/warc/1.0/revisit/uri-agnostic-identical-payload-digest",
}

// Digest algorithms, coded.
var algs = []string{"", digest.SHA1, digest.SHA256, digest.SHA512, digest.MD5}

func algCode(alg string) byte {
	for i, a := range algs {
		if i > 0 && a == alg {
			return byte(i)
		}
	}
	return 0
}

// value is the decoded value of a primary entry; names are interned ids.
type value struct {
	typ           byte
	length        int64
	status        int
	mime          uint64
	digest        string // canonical (or as written when it does not parse)
	payloadLength int64
	nanos         int64
	truncated     string
	mimeDetected  uint64
	profile       string
	refURI        string
	refSameURI    bool
	refDate       time.Time
	refID         string
	orig          *origRef
	uri           string
	metadata      string
}

// origRef locates a revisit's original in the WARC files.
type origRef struct {
	file           uint64
	offset, length int64
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func (v *value) encode(dst []byte) []byte {
	var flags uint64
	set := func(f uint64, on bool) {
		if on {
			flags |= f
		}
	}
	var d digest.Digest
	var dErr error = errors.New("none")
	if v.digest != "" {
		d, dErr = digest.Parse(v.digest)
		if dErr == nil && algCode(d.Alg) == 0 {
			dErr = errors.New("unknown algorithm")
		}
	}
	prof := -1
	if v.profile != "" {
		for i, p := range profiles {
			if i > 0 && p == v.profile {
				prof = i
			}
		}
	}
	set(fStatus, v.status > 0)
	set(fMIME, v.mime > 0)
	set(fDigest, dErr == nil)
	set(fDigestInline, v.digest != "" && dErr != nil)
	set(fPayloadLength, v.payloadLength > 0)
	set(fNanos, v.nanos > 0)
	set(fTruncated, v.truncated != "")
	set(fMIMEDetected, v.mimeDetected > 0)
	set(fProfile, v.profile != "")
	set(fRefSameURI, v.refSameURI)
	set(fRefURI, !v.refSameURI && v.refURI != "")
	set(fRefDate, !v.refDate.IsZero())
	set(fOriginal, v.orig != nil)
	set(fRefID, v.refID != "")
	set(fMetadata, v.metadata != "")

	b := binary.AppendUvarint(dst, flags)
	b = append(b, v.typ)
	b = binary.AppendUvarint(b, uint64(v.length))
	b = appendString(b, v.uri)
	if flags&fStatus != 0 {
		b = binary.AppendUvarint(b, uint64(v.status))
	}
	if flags&fMIME != 0 {
		b = binary.AppendUvarint(b, v.mime)
	}
	if flags&fDigest != 0 {
		b = append(b, algCode(d.Alg))
		b = append(b, d.Sum...)
	}
	if flags&fDigestInline != 0 {
		b = appendString(b, v.digest)
	}
	if flags&fPayloadLength != 0 {
		b = binary.AppendUvarint(b, uint64(v.payloadLength))
	}
	if flags&fNanos != 0 {
		b = binary.AppendUvarint(b, uint64(v.nanos))
	}
	if flags&fTruncated != 0 {
		b = appendString(b, v.truncated)
	}
	if flags&fMIMEDetected != 0 {
		b = binary.AppendUvarint(b, v.mimeDetected)
	}
	if flags&fProfile != 0 {
		if prof > 0 {
			b = append(b, byte(prof))
		} else {
			b = append(b, 0)
			b = appendString(b, v.profile)
		}
	}
	if flags&fRefURI != 0 {
		b = appendString(b, v.refURI)
	}
	if flags&fRefDate != 0 {
		b = appendTime(b, v.refDate)
	}
	if flags&fOriginal != 0 {
		b = binary.AppendUvarint(b, v.orig.file)
		b = binary.AppendUvarint(b, uint64(v.orig.offset))
		b = binary.AppendUvarint(b, uint64(v.orig.length))
	}
	if flags&fRefID != 0 {
		b = appendString(b, v.refID)
	}
	if flags&fMetadata != 0 {
		b = appendString(b, v.metadata)
	}
	return b
}

// reader decodes the fields of a value in order, keeping the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("bad %s", what)
	}
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) int64(what string) int64 {
	x := r.uvarint(what)
	if x > math.MaxInt64 {
		r.fail(what)
		return 0
	}
	return int64(x)
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(what)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) byte(what string) byte {
	b := r.bytes(1, what)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *reader) string(what string) string {
	n := r.uvarint(what)
	if n > uint64(len(r.b)) {
		r.fail(what)
		return ""
	}
	return string(r.bytes(int(n), what))
}

func (r *reader) time(what string) time.Time {
	s := r.varint(what)
	ns := r.uvarint(what)
	if ns >= 1e9 {
		r.fail(what)
	}
	return time.Unix(s, int64(ns)).UTC()
}

func decodeValue(b []byte) (value, error) {
	var v value
	r := &reader{b: b}
	flags := r.uvarint("flags")
	if flags >= fLast {
		return v, fmt.Errorf("unknown value flags %#x", flags)
	}
	v.typ = r.byte("type")
	v.length = r.int64("length")
	v.uri = r.string("uri")
	if flags&fStatus != 0 {
		v.status = int(r.uvarint("status"))
	}
	if flags&fMIME != 0 {
		v.mime = r.uvarint("mime")
	}
	if flags&fDigest != 0 {
		code := r.byte("digest algorithm")
		if int(code) >= len(algs) || code == 0 {
			r.fail("digest algorithm")
		} else {
			alg := algs[code]
			sum := r.bytes(digest.Size(alg), "digest")
			if r.err == nil {
				v.digest = digest.Digest{Alg: alg, Sum: append([]byte(nil), sum...)}.String()
			}
		}
	}
	if flags&fDigestInline != 0 {
		v.digest = r.string("digest")
	}
	if flags&fPayloadLength != 0 {
		v.payloadLength = r.int64("payload length")
	}
	if flags&fNanos != 0 {
		v.nanos = r.int64("nanoseconds")
		if v.nanos >= 1e9 {
			r.fail("nanoseconds")
		}
	}
	if flags&fTruncated != 0 {
		v.truncated = r.string("truncated")
	}
	if flags&fMIMEDetected != 0 {
		v.mimeDetected = r.uvarint("mime-detected")
	}
	if flags&fProfile != 0 {
		code := r.byte("profile")
		switch {
		case code == 0:
			v.profile = r.string("profile")
		case int(code) < len(profiles):
			v.profile = profiles[code]
		default:
			r.fail("profile")
		}
	}
	if flags&fRefURI != 0 {
		v.refURI = r.string("refers-to target")
	}
	if flags&fRefSameURI != 0 {
		v.refSameURI = true
		v.refURI = v.uri
	}
	if flags&fRefDate != 0 {
		v.refDate = r.time("refers-to date")
	}
	if flags&fOriginal != 0 {
		v.orig = &origRef{file: r.uvarint("original file"), offset: r.int64("original offset"), length: r.int64("original length")}
	}
	if flags&fRefID != 0 {
		v.refID = r.string("refers-to id")
	}
	if flags&fMetadata != 0 {
		v.metadata = r.string("metadata")
	}
	if r.err != nil {
		return v, r.err
	}
	if len(r.b) != 0 {
		return v, fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if typeNames[v.typ] == "" {
		return v, fmt.Errorf("unknown record type %d", v.typ)
	}
	return v, nil
}
