package ddtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `# a comment
echo a=1 b
in one
----
one

# blank lines in the output need doubled separators
para
----
----
x

y
----
----

nothing
----
(empty)
`

func run(t *testing.T, path string) {
	Run(t, path, func(t *testing.T, c *Case) string {
		switch c.Cmd {
		case "echo":
			if c.Arg("a", "") != "1" || !c.Has("b") || c.Has("c") || strings.Join(c.Positional(), ",") != "b" {
				t.Errorf("%s: args %q", c.Pos, c.Args)
			}
			return strings.TrimPrefix(c.Input, "in ")
		case "para":
			return "x\n\ny"
		}
		return ""
	})
}

// TestParseAndRewrite: every case of a file in each form is read as
// written, and -update writes the file back unchanged when the outputs
// agree, or with the new outputs (in the form they need) when not.
func TestParseAndRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sample.txt")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, _, err := parse(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range blocks {
		got = append(got, b.c.Cmd+"="+b.c.Expected)
	}
	if want := "echo=one|para=x\n\ny|nothing=(empty)"; strings.Join(got, "|") != want {
		t.Fatalf("parsed %q, want %q", strings.Join(got, "|"), want)
	}
	run(t, path) // the outputs agree

	defer func(u bool) { *update = u }(*update)
	*update = true
	run(t, path)
	if b, _ := os.ReadFile(path); string(b) != sample {
		t.Fatalf("rewrite of an agreeing file changed it:\n%s", b)
	}
	changed := strings.Replace(strings.Replace(sample, "----\none\n", "----\nstale\n", 1), "x\n\ny", "old", 1)
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, path)
	if b, _ := os.ReadFile(path); string(b) != sample {
		t.Fatalf("-update did not restore the outputs:\n%s", b)
	}
}

// TestUnclosedOutput: a doubled separator that is never closed is an
// error naming the case, not an output that swallows the rest.
func TestUnclosedOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(path, []byte("cmd\n----\n----\nx\n\nmore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := parse(path); err == nil || !strings.Contains(err.Error(), "bad.txt:1") {
		t.Fatalf("parse: %v", err)
	}
}
