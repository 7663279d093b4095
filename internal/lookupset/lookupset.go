// Package lookupset reads labelled lookup sets, the text files evaluations
// replay (`wayside mementomap eval`, `wayside aggregate eval`): one
// "<label> <target>" per line, the label before the first space; blank
// lines and lines starting with '#' are skipped.
package lookupset

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Each calls fn with the line number, label and target of every line of r
// (named name in errors). A line without a target is an error saying the
// form wanted ("<label> <URI or key>"); an error of fn stops the reading.
// Errors are "NAME:LINE: …" (or "NAME: …" for a read error), for the
// caller to prefix.
func Each(r io.Reader, name, form string, fn func(line int, label, target string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		lab, target, ok := strings.Cut(s, " ")
		target = strings.TrimSpace(target)
		if !ok || target == "" {
			return fmt.Errorf("%s:%d: want %q", name, line, form)
		}
		if err := fn(line, lab, target); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
