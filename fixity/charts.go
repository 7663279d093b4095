package fixity

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
)

// chartSeries is one series of a chart.
type chartSeries struct {
	Name   string
	Color  string
	Values []float64
	Dash   string // stroke-dasharray of a line, "" for solid
}

// policyColor gives each hash policy one colour in every chart.
var policyColor = map[string]string{PolicyWayside: "#1f77b4", PolicyAlgorithm1: "#d62728", PolicyEntity: "#2ca02c"}

// policyDash tells the policies' lines apart where they overlap.
var policyDash = map[string]string{PolicyWayside: "", PolicyAlgorithm1: "6 3", PolicyEntity: "2 3"}

// chart geometry shared by bar and line charts.
const (
	chartW, chartH                                = 520, 250
	chartL, chartR, chartT, chartB                = 52, 130, 34, 44
	chartPlotW, chartPlotH                        = chartW - chartL - chartR, chartH - chartT - chartB
	chartTickFont, chartLabelFont, chartTitleFont = 10, 11, 13
)

// niceMax rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceMax(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// chartFrame writes the opening tag, title, axes, y ticks, x labels and the
// legend of a chart, and returns the x centre of category i and the y of a
// value.
func chartFrame(b *strings.Builder, id, title, xLabel, yLabel string, cats []string, series []chartSeries, yMax float64) (x func(i int) float64, y func(v float64) float64) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" id="%s" class="chart" width="%d" height="%d" role="img" aria-label="%s">`,
		html.EscapeString(id), chartW, chartH, html.EscapeString(title))
	fmt.Fprintf(b, `<text x="%d" y="18" font-size="%d" font-weight="bold">%s</text>`, chartL, chartTitleFont, html.EscapeString(title))
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, chartL, chartT, chartL, chartT+chartPlotH)
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, chartL, chartT+chartPlotH, chartL+chartPlotW, chartT+chartPlotH)
	y = func(v float64) float64 { return float64(chartT+chartPlotH) - v/yMax*float64(chartPlotH) }
	n := max(len(cats), 1)
	step := float64(chartPlotW) / float64(n)
	x = func(i int) float64 { return float64(chartL) + step*(float64(i)+0.5) }
	for _, t := range []float64{0, yMax / 2, yMax} {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="%d" text-anchor="end">%s</text>`, chartL-4, y(t)+3, chartTickFont, trimFloat(t))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`, chartL, y(t), chartL+chartPlotW, y(t))
	}
	every := max(1, len(cats)/16)
	for i, c := range cats {
		if i%every == 0 || i == len(cats)-1 {
			fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="%d" text-anchor="middle">%s</text>`, x(i), chartT+chartPlotH+13, chartTickFont, html.EscapeString(c))
		}
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" text-anchor="middle">%s</text>`, chartL+chartPlotW/2, chartH-6, chartLabelFont, html.EscapeString(xLabel))
	fmt.Fprintf(b, `<text x="12" y="%d" font-size="%d" text-anchor="middle" transform="rotate(-90 12 %d)">%s</text>`, chartT+chartPlotH/2, chartLabelFont, chartT+chartPlotH/2, html.EscapeString(yLabel))
	for i, s := range series {
		ly := chartT + 10 + 16*i
		fmt.Fprintf(b, `<rect class="legend" x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="%d">%s</text>`,
			chartL+chartPlotW+12, ly-9, s.Color, chartL+chartPlotW+26, ly, chartLabelFont, html.EscapeString(s.Name))
	}
	return x, y
}

// barChart draws grouped bars, one group per category.
func barChart(id, title, xLabel, yLabel string, cats []string, series []chartSeries) template.HTML {
	var b strings.Builder
	x, y := chartFrame(&b, id, title, xLabel, yLabel, cats, series, niceMax(seriesMax(series)))
	group := float64(chartPlotW) / float64(max(len(cats), 1)) * 0.8
	w := group / float64(max(len(series), 1))
	for si, s := range series {
		for i, v := range s.Values {
			x0 := x(i) - group/2 + w*float64(si)
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s</title></rect>`,
				x0, y(v), math.Max(w-1, 1), y(0)-y(v), s.Color, html.EscapeString(s.Name), html.EscapeString(cats[i]), trimFloat(v))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// lineChart draws one polyline (with points) per series.
func lineChart(id, title, xLabel, yLabel string, cats []string, series []chartSeries, yMax float64) template.HTML {
	var b strings.Builder
	if yMax <= 0 {
		yMax = niceMax(seriesMax(series))
	}
	x, y := chartFrame(&b, id, title, xLabel, yLabel, cats, series, yMax)
	for _, s := range series {
		var pts []string
		for i, v := range s.Values {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
		}
		fmt.Fprintf(&b, `<polyline class="line" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"><title>%s</title></polyline>`,
			s.Color, s.Dash, strings.Join(pts, " "), html.EscapeString(s.Name))
		for i, v := range s.Values {
			fmt.Fprintf(&b, `<circle class="point" cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s, %s: %s</title></circle>`,
				x(i), y(v), s.Color, html.EscapeString(s.Name), html.EscapeString(cats[i]), trimFloat(v))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func seriesMax(series []chartSeries) float64 {
	m := 0.0
	for _, s := range series {
		for _, v := range s.Values {
			m = math.Max(m, v)
		}
	}
	return m
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// studyCharts returns the four charts of one archive: Fig 20 (histogram
// of distinct hashes per memento), Fig 21 (cumulative percentage), Figs
// 27-28 (new hashes per download per policy).
func studyCharts(i int, st ArchiveStudy) []template.HTML {
	maxK := 0
	for _, p := range st.Policies {
		maxK = max(maxK, len(p.Histogram))
	}
	ks := make([]string, maxK)
	for k := range ks {
		ks[k] = fmt.Sprint(k + 1)
	}
	dl := make([]string, st.Downloads)
	for k := range dl {
		dl[k] = fmt.Sprint(k + 1)
	}
	var hist, cum, nw []chartSeries
	for _, p := range st.Policies {
		h, c := make([]float64, maxK), make([]float64, maxK)
		for k := range maxK {
			if k < len(p.Histogram) {
				h[k], c[k] = float64(p.Histogram[k]), p.Cumulative[k]
			} else {
				c[k] = 100
			}
		}
		n := make([]float64, len(p.NewPerDownload))
		for k, v := range p.NewPerDownload {
			n[k] = float64(v)
		}
		hist = append(hist, chartSeries{p.Policy, policyColor[p.Policy], h, ""})
		cum = append(cum, chartSeries{p.Policy, policyColor[p.Policy], c, policyDash[p.Policy]})
		nw = append(nw, chartSeries{p.Policy, policyColor[p.Policy], n, policyDash[p.Policy]})
	}
	return []template.HTML{
		barChart(fmt.Sprintf("fig20-%d", i), "Fig 20: distinct hashes per memento", "distinct hashes", "mementos", ks, hist),
		lineChart(fmt.Sprintf("fig21-%d", i), "Fig 21: cumulative share of mementos", "at most this many distinct hashes", "% of mementos", ks, cum, 100),
		lineChart(fmt.Sprintf("fig27-28-%d", i), "Figs 27-28: new hashes per download", "download", "mementos with a new hash", dl, nw, 0),
	}
}
