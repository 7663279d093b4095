// Package ddtest is Wayside's one data-driven test runner and the owner of
// the repository's one -update flag, in the style of pebble's datadriven
// package: `go test ./... -update` rewrites every testdata file and golden
// file from what the code produces now.
//
// A testdata file is a list of cases. Comment lines ("# ...") and blank
// lines between cases are kept when the file is rewritten. A case is a
// command line ("cmd arg name=value ..."), optional input lines, a line
// "----" and the expected output, ended by a blank line:
//
//	decide uri=http://example.com/a payload=hello
//	----
//	write-response-and-commit new
//
// An output that holds blank lines is written between doubled separators,
// as pebble's datadriven does:
//
//	page uri=http://example.com/
//	----
//	----
//	<p>one</p>
//
//	<p>two</p>
//	----
//	----
//
// An empty output is written "(empty)". Without -update, Run fails the test
// for each case whose output differs; with it, Run rewrites the file.
// Golden compares (or rewrites) a whole file, for outputs that are files
// of their own (WARC indexes, link lists, encodings).
package ddtest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the repository's one -update flag: every test binary that
// checks expected output links this package, so the flag means the same
// everywhere.
var update = flag.Bool("update", false, "rewrite the expected output of data-driven tests and golden files in testdata/")

// Update reports whether the test binary runs with -update.
func Update() bool { return *update }

// Case is one test case of a file.
type Case struct {
	Pos      string // file:line of the command
	Cmd      string
	Args     []string
	Input    string // input lines, each ending in "\n"
	Expected string
}

// Arg returns the value of "name=value" among the args, or def.
func (c *Case) Arg(name, def string) string {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return def
}

// Has reports whether the args give name (as "name=value" or "name").
func (c *Case) Has(name string) bool {
	for _, a := range c.Args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// Positional returns the args without '='.
func (c *Case) Positional() []string {
	var p []string
	for _, a := range c.Args {
		if !strings.Contains(a, "=") {
			p = append(p, a)
		}
	}
	return p
}

type block struct {
	c    *Case
	head []string // lines before the case (comments, blank lines)
}

const sep = "----"

func parse(path string) ([]block, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var blocks []block
	var head []string
	for i := 0; i < len(lines); {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "#") {
			head = append(head, l)
			i++
			continue
		}
		f := strings.Fields(l)
		c := &Case{Pos: fmt.Sprintf("%s:%d", path, i+1), Cmd: f[0], Args: f[1:]}
		i++
		var in []string
		for i < len(lines) && lines[i] != sep {
			in = append(in, lines[i])
			i++
		}
		if i >= len(lines) {
			return nil, nil, fmt.Errorf("%s: no %s separator", c.Pos, sep)
		}
		i++
		var out []string
		if i < len(lines) && lines[i] == sep {
			// Doubled separators: the output runs to the closing pair.
			i++
			for i < len(lines) && !(lines[i] == sep && i+1 < len(lines) && lines[i+1] == sep) {
				out = append(out, lines[i])
				i++
			}
			if i >= len(lines) {
				return nil, nil, fmt.Errorf("%s: output opened with %s twice is not closed by %s twice", c.Pos, sep, sep)
			}
			i += 2
		} else {
			for i < len(lines) && lines[i] != "" {
				out = append(out, lines[i])
				i++
			}
		}
		c.Input = strings.Join(in, "\n")
		if len(in) > 0 {
			c.Input += "\n"
		}
		c.Expected = strings.Join(out, "\n")
		blocks = append(blocks, block{c: c, head: head})
		head = nil
	}
	return blocks, head, nil
}

// Run runs every case of the file at path through f, comparing f's output
// with the expected output (trailing newlines ignored). With -update, the
// file is rewritten with the actual output instead.
func Run(t *testing.T, path string, f func(t *testing.T, c *Case) string) {
	t.Helper()
	blocks, tail, err := parse(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatalf("%s holds no case", path)
	}
	var sb strings.Builder
	for _, b := range blocks {
		c := b.c
		got := strings.TrimRight(f(t, c), "\n")
		if got == "" {
			got = "(empty)"
		}
		if !*update && got != c.Expected {
			t.Errorf("%s: %s %s\ngot:\n%s\nwant:\n%s", c.Pos, c.Cmd, strings.Join(c.Args, " "), got, c.Expected)
		}
		for _, h := range b.head {
			sb.WriteString(h + "\n")
		}
		sb.WriteString(strings.Join(append([]string{c.Cmd}, c.Args...), " ") + "\n")
		sb.WriteString(c.Input)
		if blank(got) {
			sb.WriteString(sep + "\n" + sep + "\n" + got + "\n" + sep + "\n" + sep + "\n")
		} else {
			sb.WriteString(sep + "\n" + got + "\n")
		}
	}
	for _, h := range tail {
		sb.WriteString(h + "\n")
	}
	if *update {
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// blank reports whether out holds an empty line, which ends the output of
// a single-separator case.
func blank(out string) bool {
	return strings.HasPrefix(out, "\n") || strings.Contains(out, "\n\n")
}

// Golden compares got with the file at path; with -update it writes got
// there instead (creating testdata directories as needed).
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update after checking the change):\n%s", path, firstDiff(got, want))
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d:\nwant: %s\n got: %s", i+1, wl, gl)
		}
	}
	return "same lines, different bytes"
}
