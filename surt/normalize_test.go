package surt

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"com,example)/", "com,example)/"},
		{"com,example)", "com,example)/"},
		{"com,example,www)", "com,example)/"},
		{"com,example,www2,www)/a", "com,example)/a"},
		{"COM,Example)/A/B/", "com,example)/a/b"},
		{"com,example)/a?b=2&A=1", "com,example)/a?a=1&b=2"},
		{"com,example)?a=1", "com,example)/?a=1"},
		{"http://(com,example,www,)/a", "com,example)/a"},
		{"https://(com,example,)", "com,example)/"},
		{"com,example:80)/", "com,example)/"},
		{"com,example:443)/x", "com,example)/x"},
		{"com,example:8080)/x", "com,example:8080)/x"},
		{"com,example,www:8080)", "com,example:8080)/"},
		{"localhost)", "localhost)/"},
		{"localhost:3000)/a", "localhost:3000)/a"},
		{"www)/", "www)/"},
		{"4,3,2,1)", "4,3,2,1)/"},
		{"4,3,2,1:8080)/x", "4,3,2,1:8080)/x"},
		{"2130706433)/", "1,0,0,127)/"},
		{"::1)/x", "::1)/x"},
		{"2600:1F18::1)/", "2600:1f18::1)/"},
		{"com,example)/a/./b/../c", "com,example)/a/c"},
		{"com,example)/%7Euser", "com,example)/~user"},
		{"com,example)/caf%C3%A9", "com,example)/caf%c3%a9"},
		{"com,example)//a//b", "com,example)/a/b"},
		{",com,example,)/", "com,example)/"},
		{" com,example)/ ", "com,example)/"},
		{"de,b\u00fccher)/", "de,xn--bcher-kva)/"},
	} {
		got, err := Normalize(c.in)
		if err != nil || got != c.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", c.in, got, err, c.want)
			continue
		}
		if again, err := Normalize(got); err != nil || again != got {
			t.Errorf("Normalize(%q) = %q, %v: not idempotent", got, again, err)
		}
	}
	for _, in := range []string{"", "com,example", "com,example)a", ")/", "com,example:http)/", "com,example:99999)/", "g,h:i:j)/"} {
		if got, err := Normalize(in); err == nil {
			t.Errorf("Normalize(%q) = %q, want an error", in, got)
		}
	}
}

func TestLooksLikeSURT(t *testing.T) {
	for in, want := range map[string]bool{
		"com,example)/a": true, "com,example)": true, "localhost)": true, "localhost:8080)/": true,
		"http://(com,example,)/": true, "com,example,*": true, "*": true, "4,3,2,1)/": true,
		"http://example.com/a)": false, "example.com": false, "http://example.com/": false,
		"example.com/a(b)": false, "https://x.org/wiki/A_(b)": false, "mailto:a@b)": false,
	} {
		if got := LooksLikeSURT(in); got != want {
			t.Errorf("LooksLikeSURT(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestIsCanonicalAgreesWithCanonicalize: the keys Canonicalize writes for
// the test vectors take the fast path whenever they are plain.
func TestIsCanonicalAgreesWithCanonicalize(t *testing.T) {
	vs, _ := readVectors(t, "testdata/surt.txt")
	fast := 0
	for _, v := range vs {
		k, err := Canonicalize(v.in)
		if err != nil || !strings.Contains(k, ")/") {
			continue
		}
		k, _, _ = strings.Cut(k, "?")
		if IsCanonical(k) {
			fast++
			if slow, err := normalizeSlow(k); err != nil || slow != k {
				t.Errorf("IsCanonical(%q) but the slow path gives %q, %v", k, slow, err)
			}
		}
		if n, err := Normalize(k); err != nil {
			t.Errorf("Normalize(%q) (the key of %q): %v", k, v.in, err)
		} else if again, _ := Normalize(n); again != n {
			t.Errorf("Normalize(%q) = %q, then %q", k, n, again)
		}
	}
	if fast < len(vs)/2 {
		t.Errorf("only %d of %d keys took the fast path", fast, len(vs))
	}
}

// FuzzNormalize: Normalize is idempotent, never accepts on its fast path
// what the slow path would change, and accepts every key Canonicalize
// writes for an http(s) URL.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"com,example)/", "com,example,www)", "COM,EX)/A?b", "http://(com,example,)/", "4,3,2,1:80)/", "::1)/",
		"com,example)/a%2520b", "com,example)/%25", "com,example)/(a)/b.aspx", "com,0x7f,1)/", "com,example)/a/..",
		"http://www.Example.com:80/a/../b/?b=2&a=1#top", "http://0x7f.1/", "http://x.com/%41%25%32%30",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if IsCanonical(in) {
			if slow, err := normalizeSlow(in); err != nil || slow != in {
				t.Fatalf("IsCanonical(%q) but the slow path gives %q, %v", in, slow, err)
			}
		}
		if n, err := Normalize(in); err == nil {
			if again, err := Normalize(n); err != nil || again != n {
				t.Fatalf("Normalize(%q) = %q, then %q, %v", in, n, again, err)
			}
		}
		if k, err := Canonicalize(in); err == nil && strings.Contains(k, ")/") && strings.IndexByte(k, ')') == strings.Index(k, ")/") && !strings.HasPrefix(in, "dns:") && (strings.HasPrefix(in, "http") || !strings.Contains(in, ":")) &&
			strings.ContainsAny(k[:strings.IndexByte(k, ')')], "abcdefghijklmnopqrstuvwxyz0123456789") &&
			!strings.Contains(k[:strings.IndexByte(k, ')')], "%") { // escapes in hosts do not survive a second pass
			if _, err := Normalize(k); err != nil {
				t.Fatalf("Normalize(%q) (the key of %q): %v", k, in, err)
			}
		}
	})
}
