package ukvs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Bound qualifies a count: exact, lower bound, upper bound or estimate.
type Bound byte

// The bounds of a count, written as its suffix.
const (
	Exact    Bound = 0
	AtLeast  Bound = '+'
	AtMost   Bound = '-'
	Estimate Bound = '~'
)

// Count is one part of a frequency: a number that may be unknown and may be
// a bound or an estimate.
type Count struct {
	N     int64
	Known bool
	Bound Bound
}

// Exactly returns the exact, known count n.
func Exactly(n int64) Count { return Count{N: n, Known: true} }

// Freq is a UKVS frequency value: mementos (M) and original URIs (R).
type Freq struct {
	M, R Count
}

// IsExclusion reports whether f says that nothing is archived (or nothing can
// be served): an M count of exactly zero ("0", "0/20") or at most zero.
func (f Freq) IsExclusion() bool {
	return f.M.Known && f.M.N == 0 && (f.M.Bound == Exact || f.M.Bound == AtMost)
}

// combine returns the bound of a sum of two counts with bounds a and b: a
// sum including an estimate is an estimate, a sum of lower bounds (and exact
// values) is a lower bound, a sum of upper bounds (and exact values) is an
// upper bound, and a lower bound plus an upper bound bounds nothing.
func combine(a, b Bound) Bound {
	switch {
	case a == b:
		return a
	case a == Exact:
		return b
	case b == Exact:
		return a
	default: // '+' with '-', or anything with '~'
		return Estimate
	}
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Add returns the sum of two counts of disjoint sets with an honest bound.
// An unknown part makes the sum a lower bound of the known part (or an
// estimate when the known part is itself an upper bound or an estimate); two
// unknown parts sum to unknown.
func (c Count) Add(d Count) Count {
	switch {
	case !c.Known && !d.Known:
		return Count{}
	case !c.Known || !d.Known:
		k := c
		if !c.Known {
			k = d
		}
		b := combine(k.Bound, AtLeast)
		return Count{N: k.N, Known: true, Bound: b}
	}
	return Count{N: addSat(c.N, d.N), Known: true, Bound: combine(c.Bound, d.Bound)}
}

// AddOverlapping returns the sum of two counts of sets that may overlap
// (e.g. the URI-Rs of one key in two archives): when both are non-zero the
// sum is only an upper bound.
func (c Count) AddOverlapping(d Count) Count {
	s := c.Add(d)
	if c.Known && d.Known && c.N > 0 && d.N > 0 {
		s.Bound = combine(s.Bound, AtMost)
	}
	return s
}

// Add sums two frequencies of disjoint sets of captures and URIs.
func (f Freq) Add(g Freq) Freq { return Freq{M: f.M.Add(g.M), R: f.R.Add(g.R)} }

// appendCount appends c's text form ("" when unknown).
func appendCount(dst []byte, c Count) []byte {
	if !c.Known {
		return dst
	}
	dst = strconv.AppendInt(dst, c.N, 10)
	if c.Bound != Exact {
		dst = append(dst, byte(c.Bound))
	}
	return dst
}

// Append appends f's canonical text form: "M" when only M is known, "M/R",
// "/R", or "/" when nothing is known.
func (f Freq) Append(dst []byte) []byte {
	if f.M.Known && !f.R.Known {
		return appendCount(dst, f.M)
	}
	dst = appendCount(dst, f.M)
	dst = append(dst, '/')
	return appendCount(dst, f.R)
}

// String returns f's canonical text form.
func (f Freq) String() string { return string(f.Append(nil)) }

var errEmptyFreq = errors.New("empty frequency")

// ParseFreq parses a frequency value ("200", "200/", "400+/100", "/50~",
// "/", "0", "0/20").
func ParseFreq(b []byte) (Freq, error) {
	if len(b) == 0 {
		return Freq{}, errEmptyFreq
	}
	slash := -1
	for i, c := range b {
		if c == '/' {
			if slash >= 0 {
				return Freq{}, fmt.Errorf("frequency %q: more than one '/'", b)
			}
			slash = i
		}
	}
	var f Freq
	var err error
	if slash < 0 {
		if f.M, err = parseCount(b); err != nil {
			return Freq{}, fmt.Errorf("frequency %q: %w", b, err)
		}
		return f, nil
	}
	if slash > 0 {
		if f.M, err = parseCount(b[:slash]); err != nil {
			return Freq{}, fmt.Errorf("frequency %q: URI-M count: %w", b, err)
		}
	}
	if slash < len(b)-1 {
		if f.R, err = parseCount(b[slash+1:]); err != nil {
			return Freq{}, fmt.Errorf("frequency %q: URI-R count: %w", b, err)
		}
	}
	return f, nil
}

func parseCount(b []byte) (Count, error) {
	c := Count{Known: true}
	switch b[len(b)-1] {
	case '+', '-', '~':
		c.Bound = Bound(b[len(b)-1])
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return Count{}, errors.New("suffix without a number")
	}
	for _, d := range b {
		if d < '0' || d > '9' {
			return Count{}, fmt.Errorf("not a count: %q", b)
		}
		if c.N > (math.MaxInt64-int64(d-'0'))/10 {
			return Count{}, fmt.Errorf("count %q overflows", b)
		}
		c.N = c.N*10 + int64(d-'0')
	}
	return c, nil
}
