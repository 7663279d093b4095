// Package ddtest runs data-driven tests: a file of commands, each followed
// by its expected output, checked against what a handler returns. With the
// -update flag the expected output is rewritten from the handler.
//
// File format: a line "> command arg..." starts a case; the lines after it,
// up to the next command, comment ("# …") or blank line, are its expected
// output. Comments and blank lines between cases are kept on update.
package ddtest

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// Update is the -update flag.
var update = flag.Bool("update", false, "rewrite expected output in testdata files")

// Cmd is one parsed command line.
type Cmd struct {
	Name string
	Args map[string]string
	Pos  []string // positional arguments (without '=')
	Line int
}

// Arg returns a named argument or def.
func (c Cmd) Arg(name, def string) string {
	if v, ok := c.Args[name]; ok {
		return v
	}
	return def
}

// Has reports whether a named argument was given.
func (c Cmd) Has(name string) bool { _, ok := c.Args[name]; return ok }

// Run runs the commands in path through handle, which returns the output.
func Run(t *testing.T, path string, handle func(t *testing.T, c Cmd) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); {
		line := lines[i]
		if !strings.HasPrefix(line, "> ") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		cmd := parse(line[2:], i+1)
		i++
		var want []string
		for i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "> ") && !strings.HasPrefix(lines[i], "#") {
			want = append(want, lines[i])
			i++
		}
		got := strings.TrimRight(handle(t, cmd), "\n")
		if !*update && got != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, cmd.Line, line, got, strings.Join(want, "\n"))
		}
		out.WriteString(line + "\n")
		if got != "" {
			out.WriteString(got + "\n")
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parse(s string, line int) Cmd {
	f := strings.Fields(s)
	c := Cmd{Args: map[string]string{}, Line: line}
	if len(f) == 0 {
		return c
	}
	c.Name = f[0]
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			c.Args[k] = v
		} else {
			c.Pos = append(c.Pos, a)
		}
	}
	return c
}
