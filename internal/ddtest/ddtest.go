// Package ddtest runs data-driven tests from testdata files, in the style of
// pebble's datadriven package: each case is a command line, input lines, a
// "----" separator and the expected output, ended by a blank line. With
// update set, the files are rewritten with the actual output.
package ddtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Case is one test case of a file.
type Case struct {
	Pos      string // file:line of the command
	Cmd      string
	Args     []string
	Input    string
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

type block struct {
	c    *Case
	head []string // lines before the case (comments, blank lines)
}

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
		for i < len(lines) && lines[i] != "----" {
			in = append(in, lines[i])
			i++
		}
		if i >= len(lines) {
			return nil, nil, fmt.Errorf("%s: no ---- separator", c.Pos)
		}
		i++
		var out []string
		for i < len(lines) && lines[i] != "" {
			out = append(out, lines[i])
			i++
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
// with the expected output (trailing newlines ignored, an empty output is
// written "(empty)"). With update, the file is rewritten instead.
func Run(t *testing.T, path string, update bool, f func(t *testing.T, c *Case) string) {
	t.Helper()
	blocks, tail, err := parse(path)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, b := range blocks {
		c := b.c
		got := strings.TrimRight(f(t, c), "\n")
		if got == "" {
			got = "(empty)"
		}
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s: output holds a blank line, which the file format cannot express", c.Pos)
		}
		if !update && got != c.Expected {
			t.Errorf("%s: %s %s\ngot:\n%s\nwant:\n%s", c.Pos, c.Cmd, strings.Join(c.Args, " "), got, c.Expected)
		}
		for _, h := range b.head {
			sb.WriteString(h + "\n")
		}
		sb.WriteString(strings.Join(append([]string{c.Cmd}, c.Args...), " ") + "\n")
		sb.WriteString(c.Input)
		sb.WriteString("----\n" + got + "\n")
	}
	for _, h := range tail {
		sb.WriteString(h + "\n")
	}
	if update {
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
