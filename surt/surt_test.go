package surt

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

type vector struct {
	line     int
	in, want string
}

// readVectors parses testdata/surt.txt, keeping comment lines for -update.
func readVectors(t *testing.T, path string) ([]vector, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []vector
	var lines []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		lines = append(lines, l)
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			continue
		}
		q1, err := strconv.QuotedPrefix(l)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		in, _ := strconv.Unquote(q1)
		want, err := strconv.Unquote(strings.TrimSpace(l[len(q1):]))
		if err != nil {
			t.Fatalf("%s:%d: expected value: %v", path, n, err)
		}
		vs = append(vs, vector{n, in, want})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vs, lines
}

func canon(in string) string {
	got, err := Canonicalize(in)
	if err != nil {
		return "ERROR"
	}
	return got
}

func TestVectors(t *testing.T) {
	const path = "testdata/surt.txt"
	vs, lines := readVectors(t, path)
	if len(vs) < 100 {
		t.Fatalf("only %d vectors in %s", len(vs), path)
	}
	for _, v := range vs {
		got := canon(v.in)
		if ddtest.Update() {
			lines[v.line-1] = strconv.Quote(v.in) + " " + strconv.Quote(got)
			continue
		}
		if got != v.want {
			t.Errorf("%s:%d: Canonicalize(%q) = %q, want %q", path, v.line, v.in, got, v.want)
		}
	}
	if ddtest.Update() {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestErrorsWrapErrInvalidAndQuoteInput(t *testing.T) {
	for _, in := range []string{"http://example.com:99999/", "http://[::1/", "https://"} {
		_, err := Canonicalize(in)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), strconv.Quote(in)) {
			t.Errorf("Canonicalize(%q) error %v: want ErrInvalid quoting the input", in, err)
		}
	}
}

// TestSchemesCollapse: http and https of the same resource share a key,
// and canonicalisation is idempotent on the URL form of a key.
func TestSchemesCollapse(t *testing.T) {
	a, err := Canonicalize("http://www.example.com/a?b=1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Canonicalize("https://example.com:443/a/?b=1#f")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a != "com,example)/a?b=1" {
		t.Errorf("%q and %q, want both com,example)/a?b=1", a, b)
	}
}
