package captureindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Key tags: the first byte of every key names its kind.
const (
	tagMeta       byte = 0x01 // format version
	tagName       byte = 0x02 // interned name → id: tag, kind, name
	tagID         byte = 0x03 // id → interned name: tag, kind, uvarint id
	tagCounter    byte = 0x04 // per-scope counters: tag, uvarint scope, counter kind
	tagResync     byte = 0x05 // CDXJ file watermark: tag, path → size, mtime
	tagCapture    byte = 0x10 // primary: tag, uvarint scope, escaped urlkey, 0x00, 8-byte seconds, uvarint file, uvarint offset
	tagUnresolved byte = 0x11 // revisit whose original is not (yet) found: tag + the primary key without its tag
)

// Interned name kinds.
const (
	kindScope byte = 's'
	kindFile  byte = 'f'
	kindMIME  byte = 'm'
)

// Counter kinds.
const (
	ctrCaptures   byte = 'c'
	ctrRevisits   byte = 'r'
	ctrUnresolved byte = 'u'
)

var versionKey = []byte{tagMeta, 'v'}

// formatVersion is the on-disk layout version written at creation.
const formatVersion = 1

// keySep ends the urlkey inside a primary key. The urlkey is escaped so it
// holds no 0x00 (0x00 → 0x01 0x01, 0x01 → 0x01 0x02): the escape keeps the
// byte order of urlkeys, and the separator sorts before every urlkey byte,
// as the space of a CDX line does.
const keySep = 0x00

func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0x00:
			dst = append(dst, 0x01, 0x01)
		case 0x01:
			dst = append(dst, 0x01, 0x02)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// unescape reads an escaped urlkey up to keySep and returns it with the
// rest of b after the separator.
func unescape(b []byte) (string, []byte, error) {
	if i := bytes.IndexByte(b, keySep); i >= 0 && bytes.IndexByte(b[:i], 0x01) < 0 {
		return string(b[:i]), b[i+1:], nil // nothing escaped: the common case
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case keySep:
			return string(out), b[i+1:], nil
		case 0x01:
			if i+1 >= len(b) || (b[i+1] != 0x01 && b[i+1] != 0x02) {
				return "", nil, errors.New("bad escape in urlkey")
			}
			out = append(out, b[i+1]-1)
			i++
		default:
			out = append(out, c)
		}
	}
	return "", nil, errors.New("urlkey without separator")
}

// secondsKey encodes a date's Unix seconds so that byte order is time
// order (sign bit flipped, big-endian). Sub-second parts live in the value.
func secondsKey(dst []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t.Unix())^(1<<63))
}

func decodeSeconds(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// urlPrefix is the key prefix of every capture of one urlkey in one scope.
func urlPrefix(scope uint64, urlkey string) []byte {
	b := make([]byte, 0, 2+len(urlkey)+1+8+8)
	b = append(b, tagCapture)
	b = binary.AppendUvarint(b, scope)
	b = appendEscaped(b, urlkey)
	return append(b, keySep)
}

// scopePrefix is the key prefix of every capture in one scope.
func scopePrefix(scope uint64) []byte {
	return binary.AppendUvarint([]byte{tagCapture}, scope)
}

// rangeKey is the key where urlkeys >= k start in scope.
func rangeKey(scope uint64, k string) []byte {
	return appendEscaped(scopePrefix(scope), k)
}

// captureKey is the primary key of one capture.
func captureKey(scope uint64, urlkey string, date time.Time, file uint64, offset int64) []byte {
	b := urlPrefix(scope, urlkey)
	b = secondsKey(b, date)
	b = binary.AppendUvarint(b, file)
	return binary.AppendUvarint(b, uint64(offset))
}

// parsedKey is a decoded primary key.
type parsedKey struct {
	scope   uint64
	urlkey  string
	seconds int64
	file    uint64
	offset  int64
}

func parseCaptureKey(k []byte) (parsedKey, error) {
	var p parsedKey
	if len(k) == 0 || k[0] != tagCapture {
		return p, fmt.Errorf("not a capture key: %x", clipKey(k))
	}
	s, n := binary.Uvarint(k[1:])
	if n <= 0 {
		return p, fmt.Errorf("capture key %x: bad scope", clipKey(k))
	}
	p.scope = s
	uk, rest, err := unescape(k[1+n:])
	if err != nil {
		return p, fmt.Errorf("capture key %x: %w", clipKey(k), err)
	}
	p.urlkey = uk
	if len(rest) < 8 {
		return p, fmt.Errorf("capture key %x: short timestamp", clipKey(k))
	}
	p.seconds = decodeSeconds(rest)
	rest = rest[8:]
	f, n := binary.Uvarint(rest)
	if n <= 0 {
		return p, fmt.Errorf("capture key %x: bad file id", clipKey(k))
	}
	off, m := binary.Uvarint(rest[n:])
	if m <= 0 || n+m != len(rest) || off > math.MaxInt64 {
		return p, fmt.Errorf("capture key %x: bad offset", clipKey(k))
	}
	p.file, p.offset = f, int64(off)
	return p, nil
}

func clipKey(k []byte) []byte {
	if len(k) > 64 {
		return k[:64]
	}
	return k
}

func nameKey(kind byte, name string) []byte {
	return append([]byte{tagName, kind}, name...)
}

func idKey(kind byte, id uint64) []byte {
	return binary.AppendUvarint([]byte{tagID, kind}, id)
}

func counterKey(scope uint64, kind byte) []byte {
	return append(binary.AppendUvarint([]byte{tagCounter}, scope), kind)
}

func resyncKey(path string) []byte { return append([]byte{tagResync}, path...) }

// unresolvedKey marks a revisit (by its primary key) whose original was not
// found when it was added.
func unresolvedKey(primary []byte) []byte {
	return append([]byte{tagUnresolved}, primary[1:]...)
}

// upperBound returns the smallest key greater than every key with prefix p.
func upperBound(p []byte) []byte {
	b := append([]byte(nil), p...)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return b[:i+1]
		}
	}
	return nil
}
