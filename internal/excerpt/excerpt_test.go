package excerpt

import "testing"

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"WARC/1.0", 40, `"WARC/1.0"`},
		{"com,example)/ 3/1 {bad", 8, `"com,exam"…`},
		{"héllo wörld", 2, `"h"…`}, // never cut inside a character
		{"tab\tand\nnewline", 40, `"tab\tand\nnewline"`},
		{"\x1f\x8b\x08\x00\x60\x93\xe6\x52\x00\xffrest", 40, "binary data (hex 1f8b0800609" + "3e652…)"},
		{"\xe7\xe2\xaa\x13bOU\xb6\xd5hD\x8f\x88<\x83\xf4", 40, "binary data (hex e7e2aa13624f55b6…)"},
		{"caf\xe9 latin-1 key", 40, `"caf\xe9 latin-1 key"`}, // one odd byte in text stays text
		{"", 10, `""`},
	} {
		if got := Quote(tc.in, tc.n); got != tc.want {
			t.Errorf("Quote(%q, %d) = %s, want %s", tc.in, tc.n, got, tc.want)
		}
		if got := Quote([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("Quote([]byte(%q), %d) = %s, want %s", tc.in, tc.n, got, tc.want)
		}
	}
}
