package digest

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// Algorithm names in canonical form.
const (
	SHA1   = "sha1"
	SHA256 = "sha256"
	SHA512 = "sha512"
	MD5    = "md5"
)

// EmptySHA1 is the canonical SHA-1 of the empty payload. Empty payloads are
// never deduplicated.
const EmptySHA1 = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// ErrInvalid is wrapped by every parse error.
var ErrInvalid = errors.New("digest: invalid digest")

// Digest is a parsed digest.
type Digest struct {
	Alg string // canonical algorithm name
	Sum []byte
}

// IsZero reports whether d is the zero Digest.
func (d Digest) IsZero() bool { return d.Alg == "" && len(d.Sum) == 0 }

// String returns the canonical form "alg:BASE32".
func (d Digest) String() string {
	if d.IsZero() {
		return ""
	}
	var buf [16 + 1 + 104]byte // a SHA-512 label and value fit
	b := append(buf[:0], d.Alg...)
	b = append(b, ':')
	return string(b32.AppendEncode(b, d.Sum))
}

// Base32 returns the upper-case unpadded Base32 of the digest bytes (the form
// CDX files and Heritrix use without the label).
func (d Digest) Base32() string { return b32.EncodeToString(d.Sum) }

// Hex returns the lower-case hex of the digest bytes.
func (d Digest) Hex() string { return hex.EncodeToString(d.Sum) }

// Equal reports whether two digests are the same algorithm and value.
func (d Digest) Equal(o Digest) bool {
	return d.Alg == o.Alg && string(d.Sum) == string(o.Sum)
}

// Size returns the digest size in bytes of a canonical algorithm name, 0 if
// unknown.
func Size(alg string) int {
	switch alg {
	case SHA1:
		return sha1.Size
	case SHA256:
		return sha256.Size
	case SHA512:
		return sha512.Size
	case MD5:
		return md5.Size
	}
	return 0
}

// New returns a new hash for a canonical algorithm name.
func New(alg string) (hash.Hash, error) {
	switch alg {
	case SHA1:
		return sha1.New(), nil
	case SHA256:
		return sha256.New(), nil
	case SHA512:
		return sha512.New(), nil
	case MD5:
		return md5.New(), nil
	}
	return nil, fmt.Errorf("%w: unknown algorithm %q", ErrInvalid, alg)
}

// FromHash returns the Digest of h's current sum.
func FromHash(alg string, h hash.Hash) Digest { return Digest{Alg: alg, Sum: h.Sum(nil)} }

// Of returns the digest of b.
func Of(alg string, b []byte) Digest {
	h, err := New(alg)
	if err != nil {
		return Digest{}
	}
	h.Write(b)
	return FromHash(alg, h)
}

// CanonicalAlg maps an algorithm label as found in the wild ("SHA-1",
// "sha-256", "SHA256") to its canonical name, or "" when unknown.
func CanonicalAlg(label string) string {
	l := strings.ToLower(strings.TrimSpace(label))
	l = strings.ReplaceAll(l, "-", "")
	l = strings.ReplaceAll(l, "_", "")
	switch l {
	case "sha1", "sha":
		return SHA1
	case "sha256":
		return SHA256
	case "sha512":
		return SHA512
	case "md5":
		return MD5
	}
	return ""
}

// Parse parses a digest in any of the encodings seen in WARC headers and
// index files. A value without a label is taken as SHA-1 when its length fits
// SHA-1 in Base32 or hex, else as SHA-256 when it fits SHA-256.
func Parse(s string) (Digest, error) {
	if IsCanonicalSHA1(s) {
		// What almost every WARC declares and Normalize returns: decoded
		// without the general path's case folding and copies.
		sum := make([]byte, sha1.Size)
		b32.Decode(sum, []byte(s[len(SHA1)+1:])) // 32 digits checked: 20 bytes, no error
		return Digest{Alg: SHA1, Sum: sum}, nil
	}
	return parse(s)
}

// parse is Parse's general path.
func parse(s string) (Digest, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Digest{}, errEmpty
	}
	label, val, hasLabel := strings.Cut(s, ":")
	if !hasLabel {
		val = s
		for _, alg := range []string{SHA1, SHA256, SHA512} {
			if sum, ok := decode(val, Size(alg)); ok {
				return Digest{Alg: alg, Sum: sum}, nil
			}
		}
		return Digest{}, fmt.Errorf("%w: %q has no algorithm label and no known length", ErrInvalid, s)
	}
	alg := CanonicalAlg(label)
	if alg == "" {
		return Digest{}, fmt.Errorf("%w: unknown algorithm %q in %q", ErrInvalid, label, s)
	}
	sum, ok := decode(strings.TrimSpace(val), Size(alg))
	if !ok {
		return Digest{}, fmt.Errorf("%w: %q is not a %s value in base32, hex or base64", ErrInvalid, val, alg)
	}
	return Digest{Alg: alg, Sum: sum}, nil
}

// errEmpty is Parse's error for an empty value: made once, as records
// without a digest (requests, metadata) are many and each would format
// the same error again.
var errEmpty = fmt.Errorf("%w: empty", ErrInvalid)

// Normalize returns the canonical form of s.
func Normalize(s string) (string, error) {
	if IsCanonicalSHA1(s) {
		return s, nil // what almost every WARC declares: nothing to redo
	}
	d, err := Parse(s)
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

func decode(v string, size int) ([]byte, bool) {
	if size == 0 {
		return nil, false
	}
	// hex
	if len(v) == 2*size {
		if b, err := hex.DecodeString(v); err == nil {
			return b, true
		}
	}
	// base32, with or without padding, any case
	b32len := (size*8 + 4) / 5
	u := strings.ToUpper(strings.TrimRight(v, "="))
	if len(u) == b32len {
		if b, err := b32.DecodeString(u); err == nil && len(b) == size {
			return b, true
		}
	}
	// base64 (std or url, padded or not)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if enc.EncodedLen(size) == len(v) {
			if b, err := enc.DecodeString(v); err == nil && len(b) == size {
				return b, true
			}
		}
	}
	return nil, false
}

// IsCanonicalSHA1 reports whether s is a SHA-1 digest in the canonical
// form ("sha1:" and 32 upper-case Base32 digits): Normalize returns it
// unchanged and Digest.String of its Parse gives it back.
func IsCanonicalSHA1(s string) bool {
	const prefix = SHA1 + ":"
	if len(s) != len(prefix)+32 || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if !isBase32Digit[s[i]] {
			return false
		}
	}
	return true
}

// isBase32Digit tells the digits of upper-case Base32 (RFC 4648).
var isBase32Digit = func() (t [256]bool) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" {
		t[c] = true
	}
	return t
}()
