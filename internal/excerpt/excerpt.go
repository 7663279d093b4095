package excerpt

import (
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// Quote returns s as a Go-quoted string of at most n of its bytes (cut at
// a character boundary, "…" appended when cut). Input that is mostly not
// text (a NUL byte, or more than a tenth control bytes or invalid UTF-8)
// is shown as "binary data (hex …)" with its first 8 bytes instead.
func Quote[T ~string | ~[]byte](s T, n int) string {
	b := []byte(s)
	cut := len(b) > n
	if cut {
		b = b[:n]
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.FullRune(b[lastStart(b):]); i++ {
			b = b[:lastStart(b)]
		}
	}
	if binary(b) {
		h := b[:min(len(b), 8)]
		return "binary data (hex " + hex.EncodeToString(h) + "…)"
	}
	q := strconv.Quote(string(b))
	if cut {
		q += "…"
	}
	return q
}

// lastStart returns the index where the last UTF-8 sequence of b starts.
func lastStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return len(b) - 1
}

// binary reports whether b looks like binary data rather than text.
func binary(b []byte) bool {
	bad := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c == 0 {
			return true
		}
		if c < utf8.RuneSelf {
			if c < ' ' && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				bad++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			bad++
		}
		i += size
	}
	return bad*10 > len(b)
}
