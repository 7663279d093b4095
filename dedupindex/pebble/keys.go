package pebble

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
	"github.com/wayside-archive/wayside/digest"
)

const (
	tagMeta      byte = 0x01
	tagScope     byte = 0x02
	tagIntern    byte = 0x03
	tagCounter   byte = 0x04
	tagPrimary   byte = 0x10
	tagSecondary byte = 0x11

	kindFile = byte(record.KindFile)
	kindMIME = byte(record.KindMIME)

	hashLen = 8
	// secDigestLen is how many digest bytes a by-URL entry keeps.
	secDigestLen = 8
)

var (
	versionKey = []byte{tagMeta, 'v', 'e', 'r', 's', 'i', 'o', 'n'}
	byURLKey   = []byte{tagMeta, 'b', 'y', 'u', 'r', 'l'}
)

// formatVersion is the on-disk layout version written at creation.
const formatVersion = 1

func algCode(alg string) byte {
	switch alg {
	case digest.SHA1:
		return 1
	case digest.SHA256:
		return 2
	case digest.SHA512:
		return 3
	case digest.MD5:
		return 4
	}
	return 0
}

func algName(code byte) string {
	switch code {
	case 1:
		return digest.SHA1
	case 2:
		return digest.SHA256
	case 3:
		return digest.SHA512
	case 4:
		return digest.MD5
	}
	return ""
}

// hash8 returns the first 8 bytes of the SHA-256 of s: a stable,
// well-distributed hash of a SURT key.
func hash8(s string) [hashLen]byte {
	sum := sha256.Sum256([]byte(s))
	var h [hashLen]byte
	copy(h[:], sum[:hashLen])
	return h
}

// parsedKey is a dedupindex.Key in binary form, independent of scope ids.
type parsedKey struct {
	scope   string
	alg     byte
	sum     []byte
	hasURL  bool
	urlHash [hashLen]byte
	canon   string // the key's digest when it was given in canonical form
}

func parseKey(k dedupindex.Key) (parsedKey, error) {
	if k.Scope == "" {
		return parsedKey{}, fmt.Errorf("dedupindex/pebble: key has an empty scope")
	}
	d, err := digest.Parse(k.Digest)
	if err != nil {
		return parsedKey{}, fmt.Errorf("dedupindex/pebble: key digest: %w", err)
	}
	pk := parsedKey{scope: k.Scope, alg: algCode(d.Alg), sum: d.Sum}
	if digest.IsCanonicalSHA1(k.Digest) {
		pk.canon = k.Digest // what digest() would build again
	}
	if pk.alg == 0 {
		return parsedKey{}, fmt.Errorf("dedupindex/pebble: unsupported digest algorithm %q", d.Alg)
	}
	if k.URL != "" {
		pk.hasURL = true
		pk.urlHash = hash8(k.URL)
	}
	return pk, nil
}

func (pk parsedKey) digest() string {
	if pk.canon != "" {
		return pk.canon
	}
	return digest.Digest{Alg: algName(pk.alg), Sum: pk.sum}.String()
}

// slotName names the key in the in-memory claim table; it does not depend
// on the scope id so claims work before a scope is first written.
func (pk parsedKey) slotName() string {
	b := make([]byte, 0, len(pk.scope)+2+len(pk.sum)+hashLen)
	b = append(b, pk.scope...)
	b = append(b, 0, pk.alg)
	b = append(b, pk.sum...)
	if pk.hasURL {
		b = append(b, pk.urlHash[:]...)
	}
	return string(b)
}

// suffix appends alg, sum and the optional url hash: the part of a primary
// key after the scope id, repeated at the end of secondary keys.
func (pk parsedKey) appendSuffix(b []byte) []byte {
	b = append(b, pk.alg)
	b = append(b, pk.sum...)
	if pk.hasURL {
		b = append(b, pk.urlHash[:]...)
	}
	return b
}

func primaryKey(scopeID uint64, pk parsedKey) []byte {
	return appendPrimaryKey(make([]byte, 0, 1+binary.MaxVarintLen64+1+len(pk.sum)+hashLen), scopeID, pk)
}

// appendPrimaryKey appends the primary key of pk in scope scopeID to b.
func appendPrimaryKey(b []byte, scopeID uint64, pk parsedKey) []byte {
	b = append(b, tagPrimary)
	b = binary.AppendUvarint(b, scopeID)
	return pk.appendSuffix(b)
}

func secondaryPrefix(scopeID uint64, surtHash [hashLen]byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+hashLen)
	b = append(b, tagSecondary)
	b = binary.AppendUvarint(b, scopeID)
	return append(b, surtHash[:]...)
}

// secondaryKey is the by-URL entry of primary pk: it names the primary by
// the first secDigestLen bytes of its digest, resolved by a prefix scan.
func secondaryKey(scopeID uint64, surtHash [hashLen]byte, pk parsedKey) []byte {
	b := secondaryPrefix(scopeID, surtHash)
	b = append(b, pk.alg)
	return append(b, pk.sum[:secDigestLen]...)
}

// decodeSuffix parses alg, sum and optional url hash.
func decodeSuffix(b []byte) (alg byte, sum []byte, hasURL bool, urlHash [hashLen]byte, err error) {
	if len(b) < 1 {
		return 0, nil, false, urlHash, fmt.Errorf("missing digest algorithm")
	}
	alg = b[0]
	n := digest.Size(algName(alg))
	if n == 0 {
		return 0, nil, false, urlHash, fmt.Errorf("unknown digest algorithm code %d", alg)
	}
	rest := b[1:]
	switch len(rest) {
	case n:
	case n + hashLen:
		hasURL = true
		copy(urlHash[:], rest[n:])
	default:
		return 0, nil, false, urlHash, fmt.Errorf("digest part has %d bytes, want %d or %d", len(rest), n, n+hashLen)
	}
	return alg, rest[:n], hasURL, urlHash, nil
}

// decodedPrimary is a primary key split into its parts.
type decodedPrimary struct {
	scopeID uint64
	pk      parsedKey // scope name unset
}

func decodePrimaryKey(k []byte) (decodedPrimary, error) {
	if len(k) < 2 || k[0] != tagPrimary {
		return decodedPrimary{}, fmt.Errorf("not a primary key")
	}
	id, n := canonicalUvarint(k[1:])
	if n <= 0 {
		return decodedPrimary{}, fmt.Errorf("bad scope id")
	}
	alg, sum, hasURL, uh, err := decodeSuffix(k[1+n:])
	if err != nil {
		return decodedPrimary{}, err
	}
	return decodedPrimary{scopeID: id, pk: parsedKey{alg: alg, sum: sum, hasURL: hasURL, urlHash: uh}}, nil
}

// decodedSecondary is a secondary key split into its parts.
type decodedSecondary struct {
	scopeID  uint64
	surtHash [hashLen]byte
	primary  []byte // prefix of the primary keys it may refer to
}

func decodeSecondaryKey(k []byte) (decodedSecondary, error) {
	if len(k) < 2 || k[0] != tagSecondary {
		return decodedSecondary{}, fmt.Errorf("not a secondary key")
	}
	id, n := canonicalUvarint(k[1:])
	if n <= 0 {
		return decodedSecondary{}, fmt.Errorf("bad scope id")
	}
	rest := k[1+n:]
	if len(rest) != hashLen+1+secDigestLen {
		return decodedSecondary{}, fmt.Errorf("secondary key has %d bytes after the scope, want %d", len(rest), hashLen+1+secDigestLen)
	}
	if algName(rest[hashLen]) == "" {
		return decodedSecondary{}, fmt.Errorf("unknown digest algorithm code %d", rest[hashLen])
	}
	var ds decodedSecondary
	ds.scopeID = id
	copy(ds.surtHash[:], rest[:hashLen])
	p := make([]byte, 0, 1+n+1+secDigestLen)
	p = append(p, tagPrimary)
	p = append(p, k[1:1+n]...)
	ds.primary = append(p, rest[hashLen:]...)
	return ds, nil
}

// canonicalUvarint is binary.Uvarint that also rejects over-long encodings
// (e.g. 0x80 0x00 for 0): keys are compared as bytes, so one number must
// have one encoding, or two keys would name the same slot.
func canonicalUvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		return 0, -1
	}
	return v, n
}

func scopeKey(name string) []byte { return append([]byte{tagScope}, name...) }

func internKey(kind byte, id uint64) []byte {
	return binary.AppendUvarint([]byte{tagIntern, kind}, id)
}

func counterKey(scopeID uint64) []byte {
	return binary.AppendUvarint([]byte{tagCounter}, scopeID)
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
