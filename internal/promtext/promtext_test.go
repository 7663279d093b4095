package promtext

import (
	"math"
	"strings"
	"testing"
)

func TestHistogram(t *testing.T) {
	h := NewHistogram([]float64{0.1, 1, 10})
	if !math.IsNaN(h.Quantile(0.5)) {
		t.Error("quantile of nothing is not NaN")
	}
	for _, v := range []float64{0.05, 0.05, 0.5, 5, 50} {
		h.Observe(v)
	}
	for q, want := range map[float64]float64{0.2: 0.1, 0.4: 0.1, 0.6: 1, 0.8: 10, 1: math.Inf(1)} {
		if got := h.Quantile(q); got != want {
			t.Errorf("quantile %g: %g, want %g", q, got, want)
		}
	}
	var b strings.Builder
	h.Write(&b, "x_seconds", `a="b"`)
	want := `x_seconds_bucket{a="b",le="0.1"} 2
x_seconds_bucket{a="b",le="1"} 3
x_seconds_bucket{a="b",le="10"} 4
x_seconds_bucket{a="b",le="+Inf"} 5
x_seconds_sum{a="b"} 55.6
x_seconds_count{a="b"} 5
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	NewHistogram([]float64{1}).Write(&b, "y", "")
	if want := "y_bucket{le=\"1\"} 0\ny_bucket{le=\"+Inf\"} 0\ny_sum 0\ny_count 0\n"; b.String() != want {
		t.Errorf("no labels: %q", b.String())
	}
	if got := EscLabel("a\"b\\c\nd"); got != `a\"b\\c\nd` {
		t.Errorf("EscLabel: %q", got)
	}
}
