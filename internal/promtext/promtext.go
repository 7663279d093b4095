package promtext

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// Histogram is a lock-free cumulative histogram of float observations
// (seconds, by convention); the sum is kept in nanoseconds.
type Histogram struct {
	bounds []float64
	counts []atomic.Int64
	sumNs  atomic.Int64
	n      atomic.Int64
}

// NewHistogram returns a histogram with the given upper bounds (ascending;
// +Inf is implicit).
func NewHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Int64, len(bounds))}
}

// Observe records one value.
func (h *Histogram) Observe(v float64) {
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i].Add(1)
		}
	}
	h.sumNs.Add(int64(v * 1e9))
	h.n.Add(1)
}

// Count returns the number of observations.
func (h *Histogram) Count() int64 { return h.n.Load() }

// Sum returns the sum of the observations.
func (h *Histogram) Sum() float64 { return float64(h.sumNs.Load()) / 1e9 }

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q <= 1): an upper estimate, +Inf when it lies past the last bound,
// NaN without observations.
func (h *Histogram) Quantile(q float64) float64 {
	n := h.n.Load()
	if n == 0 {
		return math.NaN()
	}
	rank := int64(math.Ceil(q * float64(n)))
	for i, b := range h.bounds {
		if h.counts[i].Load() >= rank {
			return b
		}
	}
	return math.Inf(1)
}

// Write writes the histogram's _bucket, _sum and _count lines for the
// metric name; labels (`archive="x"`, already escaped) may be empty. The
// HELP and TYPE lines are the caller's (once per family).
func (h *Histogram) Write(w io.Writer, name, labels string) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	for i, b := range h.bounds {
		fmt.Fprintf(w, "%s_bucket{%s%sle=\"%s\"} %d\n", name, labels, sep, FormatFloat(b), h.counts[i].Load())
	}
	n := h.n.Load()
	fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, labels, sep, n)
	if labels != "" {
		labels = "{" + labels + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %s\n", name, labels, FormatFloat(h.Sum()))
	fmt.Fprintf(w, "%s_count%s %d\n", name, labels, n)
}

// Header writes the HELP and TYPE lines of a metric family.
func Header(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// FormatFloat formats a sample value (+Inf, -Inf, NaN as the format wants).
func FormatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// EscLabel escapes a label value: backslash, double quote and newline.
func EscLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return labelEscaper.Replace(s)
}
