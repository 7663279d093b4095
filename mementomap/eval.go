package mementomap

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/wayside-archive/wayside/internal/excerpt"
	"github.com/wayside-archive/wayside/internal/lookupset"
)

// Labelled is one lookup of an evaluation set: a key and whether the
// archive holds it.
type Labelled struct {
	Key     []byte
	Present bool
}

// ReadLabelled reads an evaluation set: one "<label> <URI or key>" per line,
// label one of 1/0, present/absent, +/-, true/false; the target is a URI or
// a SURT key in any spelling (ParseTarget). Blank lines and lines starting
// with '#' are skipped. A line whose target has no key (not an http(s)
// URI, not a SURT) is passed to onBad and skipped when onBad is set, else
// it is an error; a line without a valid label is always an error.
func ReadLabelled(r io.Reader, name string, onBad func(error)) ([]Labelled, error) {
	var out []Labelled
	err := lookupset.Each(r, name, "<label> <URI or key>", func(line int, lab, target string) error {
		var l Labelled
		switch strings.ToLower(lab) {
		case "1", "present", "+", "true":
			l.Present = true
		case "0", "absent", "-", "false":
		default:
			return fmt.Errorf("unknown label %s", excerpt.Quote(lab, 40))
		}
		k, err := parseTarget(target)
		if err != nil {
			if onBad == nil {
				return err
			}
			onBad(fmt.Errorf("mementomap: %s:%d: %w", name, line, err))
			return nil
		}
		l.Key = k
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mementomap: %w", err)
	}
	return out, nil
}

// EvalResult is the evaluation of a map against a labelled lookup set.
type EvalResult struct {
	Lines, Bytes         int64 // data lines and bytes of the map
	FullLines, FullBytes int64 // of the full key list it summarises
	RelLines, RelBytes   float64
	TP, FP, TN, FN       int64
	Accuracy, Precision  float64
	Recall               float64
}

// DataSize returns the number of data lines and bytes of a map.
func DataSize(m *Map) (lines, bytes int64) {
	d := m.Data()
	for _, c := range d {
		if c == '\n' {
			lines++
		}
	}
	if len(d) > 0 && d[len(d)-1] != '\n' {
		lines++
	}
	return lines, int64(len(d))
}

// Evaluate looks every labelled key up in m. full is the uncompacted map
// (the full key list) for relative cost; nil uses m itself.
func Evaluate(m, full *Map, set []Labelled) (EvalResult, error) {
	var r EvalResult
	r.Lines, r.Bytes = DataSize(m)
	if full == nil {
		full = m
	}
	r.FullLines, r.FullBytes = DataSize(full)
	var s Scratch
	for _, l := range set {
		got, err := m.Lookup(l.Key, &s)
		if err != nil {
			return r, err
		}
		switch {
		case got.Present && l.Present:
			r.TP++
		case got.Present:
			r.FP++
		case l.Present:
			r.FN++
		default:
			r.TN++
		}
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return math.NaN()
		}
		return a / b
	}
	r.RelLines = div(float64(r.Lines), float64(r.FullLines))
	r.RelBytes = div(float64(r.Bytes), float64(r.FullBytes))
	r.Accuracy = div(float64(r.TP+r.TN), float64(len(set)))
	r.Precision = div(float64(r.TP), float64(r.TP+r.FP))
	r.Recall = div(float64(r.TP), float64(r.TP+r.FN))
	return r, nil
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
