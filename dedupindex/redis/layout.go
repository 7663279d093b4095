package redis

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
)

// layoutVersion is the key layout this package reads and writes; the meta
// key records it. Earlier layouts are refused (ErrOldLayout): version 1
// (one hash per digest, keys PREFIXo{…}, no meta key) and version 2 (the
// buckets of this one with record's varint values, 28-bit name ids and
// 16-byte by-URL entries).
const layoutVersion = 3

// Bucket bits bounds: at least 256 buckets, at most 2^26 (the bucket
// number must fit the first 4 bytes of the smallest digest, MD5).
const (
	minBits = 8
	maxBits = 26
)

// overflow marks a hash field whose value is too long for the hash to
// stay listpack-encoded; the value is in the field's overflow key. A real
// value is never one byte long.
const overflow = "\x00"

// hashLen is the length of the URL hash in the field of a same-URL key:
// it tells keys apart, so it is long.
const hashLen = 8

// urlHashLen is the length of the URL hash a by-URL entry is filed under
// (bucket bits, then the rest in the field), and refLen how many leading
// digest bytes the entry keeps to find its originals (the digest bucket,
// then a prefix of the field). Both only narrow the search: ByURL checks
// the URL of every original it finds.
const (
	urlHashLen = 4
	refLen     = 4
)

// layout names the keys of one index.
type layout struct {
	prefix string
	bits   uint // bucket bits
	drop   int  // leading digest bytes the bucket number determines: bits/8
	byURL  bool
}

func newLayout(prefix string, bits uint, byURL bool) *layout {
	return &layout{prefix: prefix, bits: bits, drop: int(bits / 8), byURL: byURL}
}

// bitsFor returns the bucket bits for an index expected to hold capacity
// originals per scope, with about perBucket originals in a bucket then.
func bitsFor(capacity int64, perBucket int) uint {
	n := max(capacity/int64(max(perBucket, 1)), 1)
	b := uint(bits.Len64(uint64(n - 1))) // ceil(log2(n))
	return min(max(b, minBits), maxBits)
}

func (l *layout) metaKey() string { return l.prefix + "meta" }

// bucketOf returns the bucket of a digest or hash: its leading bits.
func (l *layout) bucketOf(b []byte) uint32 {
	return binary.BigEndian.Uint32(b[:4]) >> (32 - l.bits)
}

// tag is a bucket's hash tag: every key of a bucket lives in one slot.
func (l *layout) tag(bucket uint32) string {
	s := strconv.FormatUint(uint64(bucket), 16)
	w := int(l.bits+3) / 4
	return "{" + strings.Repeat("0", w-len(s)) + s + "}"
}

// digestKey is the hash holding the originals of bucket in scope.
func (l *layout) digestKey(scope string, bucket uint32) string {
	return l.prefix + "d" + l.tag(bucket) + scope
}

// claimKey is the pending claim of field (a string with a lease).
func (l *layout) claimKey(scope string, bucket uint32, field string) string {
	return l.prefix + "c" + l.tag(bucket) + hex.EncodeToString([]byte(field)) + "/" + scope
}

// overflowKey holds the value of field when it is too long for the hash.
func (l *layout) overflowKey(scope string, bucket uint32, field string) string {
	return l.prefix + "x" + l.tag(bucket) + hex.EncodeToString([]byte(field)) + "/" + scope
}

// todoKey lists the originals of bucket in scope whose by-URL entry is
// not written yet (field → the value they replaced, or "").
func (l *layout) todoKey(scope string, bucket uint32) string {
	return l.prefix + "q" + l.tag(bucket) + scope
}

// urlKey is the by-URL hash of bucket in scope.
func (l *layout) urlKey(scope string, bucket uint32) string {
	return l.prefix + "b" + l.tag(bucket) + scope
}

// nameKey is the shard of the interned-name table holding id.
func (l *layout) nameKey(id uint64) string {
	return l.prefix + "n" + l.tag(uint32(id&(1<<l.bits-1)))
}

// slot is where a dedup key lives: its digest bucket and hash field.
type slot struct {
	scope  string
	digest string // canonical
	sum    []byte
	bucket uint32
	// field is the digest bytes after the first drop, then for a
	// same-URL key the 8-byte hash of its SURT key.
	field string
}

func (l *layout) locate(k dedupindex.Key) (slot, error) {
	if k.Scope == "" {
		return slot{}, fmt.Errorf("dedupindex/redis: key has an empty scope")
	}
	d, err := digest.Parse(k.Digest)
	if err != nil {
		return slot{}, fmt.Errorf("dedupindex/redis: key digest: %w", err)
	}
	if digest.Size(d.Alg) == 0 {
		return slot{}, fmt.Errorf("dedupindex/redis: unsupported digest algorithm %q", d.Alg)
	}
	f := append([]byte{}, d.Sum[l.drop:]...)
	if k.URL != "" {
		h := hash8(k.URL)
		f = append(f, h[:]...)
	}
	return slot{scope: k.Scope, digest: d.String(), sum: d.Sum, bucket: l.bucketOf(d.Sum), field: string(f)}, nil
}

// algs lists the algorithms a field's length can name.
var algs = []string{digest.SHA1, digest.SHA256, digest.SHA512, digest.MD5}

// parseField inverts locate: the digest of a field found in bucket, and
// whether the field belongs to a same-URL key. The lengths of the four
// algorithms' fields, with and without a URL hash, are all different.
func (l *layout) parseField(bucket uint32, field string) (sum []byte, alg string, sameURL bool, err error) {
	for _, a := range algs {
		n := digest.Size(a) - l.drop
		switch len(field) {
		case n:
		case n + hashLen:
			sameURL = true
		default:
			continue
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], bucket<<(32-l.bits))
		sum = append(append([]byte{}, b[:l.drop]...), field[:n]...)
		if l.bucketOf(sum) != bucket {
			return nil, "", false, fmt.Errorf("field %x does not belong in bucket %x", field, bucket)
		}
		return sum, a, sameURL, nil
	}
	return nil, "", false, fmt.Errorf("field %x has no digest length", field)
}

// urlEntry returns the by-URL key and field of an original of digest sum
// whose target URI has SURT key surtKey: the field is the rest of the SURT
// hash, then the first refLen digest bytes.
func (l *layout) urlEntry(scope, surtKey string, sum []byte) (key, field string) {
	key, p := l.urlQuery(scope, surtKey)
	return key, p + string(sum[:refLen])
}

// urlQuery returns the by-URL key and the field prefix of surtKey.
func (l *layout) urlQuery(scope, surtKey string) (key, fieldPrefix string) {
	h := hash8(surtKey)
	return l.urlKey(scope, l.bucketOf(h[:])), string(h[l.drop:urlHashLen])
}

// hash8 returns the first 8 bytes of the SHA-256 of s.
func hash8(s string) [hashLen]byte {
	sum := sha256.Sum256([]byte(s))
	var h [hashLen]byte
	copy(h[:], sum[:hashLen])
	return h
}

// splitKey splits a key this layout made, of the given kind letter, into
// its hash tag's content and what follows the tag.
func (l *layout) splitKey(key string, kind byte) (tag, rest string, ok bool) {
	s, ok := strings.CutPrefix(key, l.prefix)
	if !ok || len(s) < 2 || s[0] != kind || s[1] != '{' {
		return "", "", false
	}
	i := strings.IndexByte(s, '}')
	if i < 0 {
		return "", "", false
	}
	return s[2:i], s[i+1:], true
}

// parseBucketKey returns the bucket and scope of a digest or by-URL key.
func (l *layout) parseBucketKey(key string, kind byte) (uint32, string, error) {
	tag, scope, ok := l.splitKey(key, kind)
	if !ok {
		return 0, "", fmt.Errorf("key %q is not a %c key of this index", key, kind)
	}
	n, err := strconv.ParseUint(tag, 16, 32)
	if err != nil || len(tag) != int(l.bits+3)/4 || n >= 1<<l.bits {
		return 0, "", fmt.Errorf("key %q: bad bucket %q", key, tag)
	}
	return uint32(n), scope, nil
}
