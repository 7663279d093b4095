package merkle

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
)

// Hash is a SHA-256 digest.
type Hash [sha256.Size]byte

// String returns the lowercase hex form of h.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is all zero bytes (an unset hash).
func (h Hash) IsZero() bool { return h == Hash{} }

// MarshalText encodes h as lowercase hex.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText decodes a 64-character hex string.
func (h *Hash) UnmarshalText(b []byte) error {
	p, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// ParseHash decodes a 64-character hex SHA-256 digest.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*sha256.Size {
		return h, fmt.Errorf("merkle: hash %q: want %d hex digits, got %d", s, 2*sha256.Size, len(s))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("merkle: hash %q: %w", s, err)
	}
	return h, nil
}

// Sum returns SHA-256(b).
func Sum(b []byte) Hash { return sha256.Sum256(b) }

// LeafHash returns SHA-256(0x00 || leaf).
func LeafHash(leaf []byte) Hash {
	d := sha256.New()
	d.Write([]byte{0x00})
	d.Write(leaf)
	var h Hash
	d.Sum(h[:0])
	return h
}

// NodeHash returns SHA-256(0x01 || left || right).
func NodeHash(left, right Hash) Hash {
	var buf [1 + 2*sha256.Size]byte
	buf[0] = 0x01
	copy(buf[1:], left[:])
	copy(buf[1+sha256.Size:], right[:])
	return sha256.Sum256(buf[:])
}

// Root returns the RFC 9162 Merkle tree hash of the leaves, in the order
// given.
func Root(leaves [][]byte) Hash {
	hs := make([]Hash, len(leaves))
	for i, l := range leaves {
		hs[i] = LeafHash(l)
	}
	return RootOfLeafHashes(hs)
}

// RootOfLeafHashes returns the tree hash over already leaf-hashed entries
// (each LeafHash(d_i)). An empty list gives SHA-256 of the empty string.
func RootOfLeafHashes(hs []Hash) Hash {
	switch len(hs) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return hs[0]
	}
	k := splitPoint(len(hs))
	return NodeHash(RootOfLeafHashes(hs[:k]), RootOfLeafHashes(hs[k:]))
}

// splitPoint returns the largest power of two strictly smaller than n (n ≥ 2).
func splitPoint(n int) int {
	return 1 << (bits.Len(uint(n-1)) - 1)
}

// Tag names what a leaf holds. The values are part of the documented,
// stable encoding: never renumber them.
type Tag byte

// Leaf tags used by package fixity.
const (
	TagHeader      Tag = 'H' // fields: lowercase header name, value
	TagStatus      Tag = 'S' // field: outcome and status, e.g. "200", "timeout", "failed"
	TagHeadersRoot Tag = 'h' // field: root of the header tree of one response
	TagBody        Tag = 'B' // field: SHA-256 of the entity body
	TagNoBody      Tag = 'N' // field: why no body is hashed ("text-rewritten", "none")
	TagURIM        Tag = 'U' // field: SHA-256 of the canonical final URI-M
	TagRedirect    Tag = 'L' // fields: hop status, canonical URI-M of the hop
	TagResource    Tag = 'R' // fields: canonical key, resource root
	TagCapture     Tag = 'C' // fields: capture name ("rewritten" or "raw"), capture root
	TagEntity      Tag = 'E' // fields: canonical key, hex entity hash (entity-only policy)
)

// Encode returns tag || for each field: uint32 big-endian length || field.
func Encode(tag Tag, fields ...[]byte) []byte {
	n := 1
	for _, f := range fields {
		n += 4 + len(f)
	}
	out := make([]byte, 0, n)
	out = append(out, byte(tag))
	for _, f := range fields {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}

// Decode splits an encoded leaf into its tag and fields. It rejects
// truncated input and trailing bytes.
func Decode(leaf []byte) (Tag, [][]byte, error) {
	if len(leaf) == 0 {
		return 0, nil, fmt.Errorf("merkle: decode leaf: empty")
	}
	tag := Tag(leaf[0])
	var fields [][]byte
	rest := leaf[1:]
	for off := 1; len(rest) > 0; {
		if len(rest) < 4 {
			return 0, nil, fmt.Errorf("merkle: decode leaf: truncated length at offset %d", off)
		}
		l := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		off += 4
		if uint64(l) > uint64(len(rest)) {
			return 0, nil, fmt.Errorf("merkle: decode leaf: field of %d bytes at offset %d overruns the %d bytes left", l, off, len(rest))
		}
		fields = append(fields, rest[:l])
		rest = rest[l:]
		off += int(l)
	}
	return tag, fields, nil
}
