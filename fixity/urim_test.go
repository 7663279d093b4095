package fixity

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

func testConfig(t testing.TB) *Config {
	t.Helper()
	c, err := NewConfig(Archive{Name: "wa", Hosts: []string{"web.archive.example", "archive.alias.example"}},
		Archive{Name: "local", Hosts: []string{"127.0.0.1:8080"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCanonical(t *testing.T) {
	const path = "testdata/canonical.txt"
	c := testConfig(t)
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(string(in), "\n"), "\n") {
		if strings.HasPrefix(l, "  ") {
			continue
		}
		out.WriteString(l + "\n")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		canon, isM := c.Canonical(l)
		fmt.Fprintf(&out, "  canonical %s\n  memento %v\n  urir %s\n", canon, isM, c.URIR(l))
	}
	ddtest.Golden(t, path, out.Bytes())
}

func TestCanonicalAliasesAgree(t *testing.T) {
	c := testConfig(t)
	a, _ := c.Canonical("http://web.archive.example/web/20200101000000im_/http://example.com/a.png")
	b, _ := c.Canonical("https://archive.alias.example/web/20200101000000/http://example.com/a.png")
	if a != b {
		t.Fatalf("alias + scheme + modifier: %s vs %s", a, b)
	}
	d, _ := c.Canonical("https://web.archive.example/web/20200101000001/http://example.com/a.png")
	if d == a {
		t.Fatal("a different timestamp canonicalised to the same URI-M")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, as := range [][]Archive{
		{{Name: "x"}},
		{{Name: "a", Hosts: []string{"h.example"}}, {Name: "b", Hosts: []string{"H.example:80"}}},
		{{Name: "a", Hosts: []string{"h.example"}, Exclude: []Rule{{Pattern: "("}}}},
		{{Name: "a", Hosts: []string{"h.example/path"}}},
	} {
		if _, err := NewConfig(as...); err == nil {
			t.Errorf("NewConfig(%+v) accepted", as)
		}
	}
	dir := t.TempDir()
	y := filepath.Join(dir, "a.yaml")
	os.WriteFile(y, []byte("archives:\n  - name: ia\n    hosts: [web.archive.org, wayback.archive.org]\n    exclude:\n      - pattern: '/_static/'\n        reason: banner\n"), 0o644)
	c, err := LoadConfig(y)
	if err != nil {
		t.Fatal(err)
	}
	if a := c.ArchiveFor("WAYBACK.archive.org:443"); a == nil || a.Name != "ia" {
		t.Fatalf("alias lookup: %+v", a)
	}
	if _, why := c.exclusion("https://web.archive.org/_static/js/x.js"); why != "banner" {
		t.Fatalf("rule exclusion: %q", why)
	}
	j := filepath.Join(dir, "a.json")
	os.WriteFile(j, []byte(`{"archives": [{"name": "x", "hosts": ["a.example"]}], "bogus": 1`), 0o644)
	if _, err := LoadConfig(j); err == nil || !strings.Contains(err.Error(), "a.json") {
		t.Fatalf("bad JSON config: %v", err)
	}
}

func FuzzParseURIM(f *testing.F) {
	for _, s := range []string{
		"http://a.example/web/20200101000000/http://example.com/",
		"https://a.example/x/y/2020im_/https://e.com/?a=b",
		"http://a.example/20200101000000/",
		"ftp://a.example/web/1/x",
	} {
		f.Add(s)
	}
	c, err := NewConfig(Archive{Hosts: []string{"a.example"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := ParseURIM(s)
		if !ok {
			return
		}
		if m.URIR == "" || m.Datetime == "" || len(m.Datetime) > 14 {
			t.Fatalf("ParseURIM(%q) = %+v", s, m)
		}
		// Parsing the printed form gives the same URI-M.
		m2, ok := ParseURIM(m.String())
		if !ok || m2.Datetime != m.Datetime || m2.Modifier != m.Modifier {
			t.Fatalf("ParseURIM(%q).String() = %q does not parse back: %+v", s, m.String(), m2)
		}
		canon, _ := c.Canonical(s)
		if again, _ := c.Canonical(canon); c.ArchiveFor(m.Host) != nil && again != canon {
			t.Fatalf("Canonical not idempotent: %q -> %q -> %q", s, canon, again)
		}
	})
}
