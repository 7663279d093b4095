package surt

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The functions as they were before their fast paths: the reference the
// fast ones must agree with.

func refNormalizePath(p string) string {
	if p == "" {
		return "/"
	}
	segs := strings.Split(p, "/")[1:]
	kept := make([]string, 0, len(segs))
	for _, s := range segs {
		switch s {
		case ".":
		case "..":
			if len(kept) > 0 {
				kept = kept[:len(kept)-1]
			} else {
				kept = append(kept, s)
			}
		default:
			kept = append(kept, s)
		}
	}
	var b strings.Builder
	b.WriteByte('/')
	for i, s := range kept {
		if i == len(kept)-1 {
			b.WriteString(s)
		} else if s != "" {
			b.WriteString(s)
			b.WriteByte('/')
		}
	}
	return b.String()
}

func refReverseHost(h string) string {
	if strings.IndexByte(h, '.') < 0 {
		return h
	}
	labels := strings.Split(h, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ",")
}

// refParseIPv4 is parseIPv4 without the byte-class check that rejects
// host names early.
func refParseIPv4(h string) (string, bool) {
	if h == "" {
		return "", false
	}
	allDigits := true
	for i := 0; i < len(h); i++ {
		if h[i] < '0' || h[i] > '9' {
			allDigits = false
			break
		}
	}
	if allDigits {
		var v uint32
		for i := 0; i < len(h); i++ {
			v = v*10 + uint32(h[i]-'0')
		}
		return dotted(v), true
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return "", false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseIPPart(p)
		if !ok {
			return "", false
		}
		vals[i] = v
	}
	var v uint64
	for i, p := range vals[:len(vals)-1] {
		if p > 255 {
			return "", false
		}
		v |= p << (8 * (3 - uint(i)))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-uint(len(vals)))) {
		return "", false
	}
	return dotted(uint32(v | last)), true
}

// TestFastPathsAgree: normalizePath, reverseHost and parseIPv4 give what
// their plain versions give, on random strings over the bytes that matter
// to them.
func TestFastPathsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 4))
	gen := func(alphabet string, n int) string {
		b := make([]byte, rng.IntN(n+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 50000 {
		p := gen("/./a.b", 12)
		if rng.IntN(2) == 0 {
			p = "/" + p
		}
		if got, want := normalizePath(p), refNormalizePath(p); got != want {
			t.Fatalf("normalizePath(%q) = %q, want %q", p, got, want)
		}
		h := gen("ab.,", 10)
		if got, want := reverseHost(h), refReverseHost(h); got != want {
			t.Fatalf("reverseHost(%q) = %q, want %q", h, got, want)
		}
		ip := gen("0123456789.xXaAfFgz-", 14)
		got, gok := parseIPv4(ip)
		want, wok := refParseIPv4(ip)
		if got != want || gok != wok {
			t.Fatalf("parseIPv4(%q) = %q, %v; want %q, %v", ip, got, gok, want, wok)
		}
	}
	for _, ip := range []string{"127.0.0.1", "0x7f.1", "0177.0.0.1", "2130706433", "1.2.3", "a.b.c.d", "0xG.1"} {
		got, gok := parseIPv4(ip)
		want, wok := refParseIPv4(ip)
		if got != want || gok != wok {
			t.Fatalf("parseIPv4(%q) = %q, %v; want %q, %v", ip, got, gok, want, wok)
		}
	}
}
