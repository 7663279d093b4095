package mementomap

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// PaperWeights are the host and path weights of the MementoMap paper's
// evaluation grid (Wh × Wp, 36 pairs).
var PaperWeights = []float64{4, 2, 1, 0.5, 0.25, 0}

// GridOptions tune Grid.
type GridOptions struct {
	// Weights are the values of both Wh and Wp (default PaperWeights).
	Weights []float64
	// Scratch compacts every pair from the full map instead of chaining
	// (the result is the same; chaining is faster).
	Scratch bool
	// Diagonal evaluates only the pairs Wh = Wp (a sweep of one weight),
	// each chained from the previous one.
	Diagonal bool
	// URIRs is the number of unique URI-Rs the full map summarises, for
	// the relative cost per URI-R; 0 sums the map's URI-R counts (unknown
	// when a line has none, as in the reference implementation's maps).
	URIRs int64
	// Workers, TempDir: as in CompactOptions.
	Workers int
	TempDir string
	// KeepDir, when set, keeps every compacted map there, named
	// "wh<Wh>-wp<Wp>.ukvs"; otherwise they are removed when no longer
	// needed.
	KeepDir string
	// Progress, when set, sees each point as it is done.
	Progress func(GridPoint)
}

// GridPoint is one (Wh, Wp) pair of a grid and its evaluation.
type GridPoint struct {
	Wh, Wp float64
	// From names the map this one was compacted from: "full", or the
	// weights of a larger map when chaining.
	From string
	EvalResult
	// URIRs is the number of unique URI-Rs of the full map (0: unknown)
	// and RelURIRs the paper's relative cost: lines of this map per unique
	// URI-R (NaN when unknown).
	URIRs    int64
	RelURIRs float64
	// Compaction is the time compacting this map took.
	Compaction time.Duration
}

// Grid compacts the full map at fullPath with every pair (Wh, Wp) of
// weights and evaluates each map on set.
//
// Chaining order: the weights are taken in decreasing order, rows of
// decreasing Wh, and within a row decreasing Wp. The pair (Wh, Wp) is
// compacted from the smaller of the two maps next to it with larger
// weights, (Wh', Wp) of the previous row and (Wh, Wp') of the same row, or
// from the full map for the first pair. This gives the same map as
// compacting the full map, because the per-depth means are measured once,
// on the full map, and used for every pair: a node's child count is the
// same in any map compacted with larger weights (a rolled-up child is still
// one child, a wildcard), and a node rolled up there has more children than
// the larger threshold, so more than the smaller one too; rolling it up
// again writes the same line. TestGridChainingEqualsScratch checks that
// every chained map equals the one compacted from scratch.
func Grid(ctx context.Context, fullPath string, set []Labelled, opts GridOptions) ([]GridPoint, error) {
	ws := slices.Clone(opts.Weights)
	if len(ws) == 0 {
		ws = slices.Clone(PaperWeights)
	}
	for _, w := range ws {
		if !(w >= 0) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("mementomap: grid: weights must be finite numbers >= 0, got %v", w)
		}
	}
	slices.Sort(ws)
	slices.Reverse(ws)
	ws = slices.Compact(ws)
	dir, err := os.MkdirTemp(opts.TempDir, "mementomap-grid-*")
	if err != nil {
		return nil, fmt.Errorf("mementomap: grid: %w", err)
	}
	defer os.RemoveAll(dir)
	full, err := OpenMap(fullPath)
	if err != nil {
		return nil, err
	}
	defer full.Close()
	if full.Normalized().Normalized() {
		// Compact the canonical form, normalised once.
		fullPath = filepath.Join(dir, "full.ukvs")
		if err := os.WriteFile(fullPath, full.data, 0o600); err != nil {
			return nil, fmt.Errorf("mementomap: grid: %w", err)
		}
	}
	urirs := opts.URIRs
	if urirs == 0 {
		urirs = SumURIRs(full)
	}
	base := CompactOptions{Workers: opts.Workers, TempDir: dir, NoSync: true, Canonical: true}
	type made struct {
		path  string
		lines int64
	}
	prevRow := make([]made, len(ws))
	var pts []GridPoint
	for i, wh := range ws {
		row := make([]made, len(ws))
		for j, wp := range ws {
			if opts.Diagonal && j != i {
				continue
			}
			in, from := fullPath, "full"
			if !opts.Scratch && opts.Diagonal && i > 0 {
				in, from = prevRow[i-1].path, fmt.Sprintf("wh=%g,wp=%g", ws[i-1], ws[i-1])
			} else if !opts.Scratch && !opts.Diagonal {
				switch {
				case i > 0 && j > 0 && prevRow[j].lines <= row[j-1].lines, i > 0 && j == 0:
					in, from = prevRow[j].path, fmt.Sprintf("wh=%g,wp=%g", ws[i-1], wp)
				case j > 0:
					in, from = row[j-1].path, fmt.Sprintf("wh=%g,wp=%g", wh, ws[j-1])
				}
			}
			out := filepath.Join(dir, fmt.Sprintf("wh%d-wp%d.ukvs", i, j))
			if opts.KeepDir != "" {
				out = filepath.Join(opts.KeepDir, fmt.Sprintf("wh%g-wp%g.ukvs", wh, wp))
			}
			o := base
			o.Wh, o.Wp = wh, wp
			start := time.Now()
			st, err := CompactFile(ctx, in, out, o)
			if err != nil {
				return nil, err
			}
			took := time.Since(start)
			if base.Means == nil {
				base.Means = &st.Means // measured once, on the full map
			}
			m, err := OpenMap(out)
			if err != nil {
				return nil, err
			}
			r, err := Evaluate(m, full, set)
			m.Close()
			if err != nil {
				return nil, err
			}
			p := GridPoint{Wh: wh, Wp: wp, From: from, EvalResult: r, URIRs: urirs, RelURIRs: math.NaN(), Compaction: took}
			if urirs > 0 {
				p.RelURIRs = float64(r.Lines) / float64(urirs)
			}
			if opts.Progress != nil {
				opts.Progress(p)
			}
			pts = append(pts, p)
			row[j] = made{out, r.Lines}
			if opts.Scratch && opts.KeepDir == "" {
				os.Remove(out)
			}
		}
		for _, p := range prevRow {
			if p.path != "" && opts.KeepDir == "" {
				os.Remove(p.path)
			}
		}
		prevRow = row
	}
	return pts, nil
}

// SumURIRs returns the sum of the URI-R counts of a map's data lines: the
// number of unique URI-Rs of a full map (each URI-R has one key), or 0
// when some line does not know its count or gives only a bound.
func SumURIRs(m *Map) int64 {
	var sum int64
	d := m.Data()
	for p := 0; p < len(d); {
		e := indexNL(d[p:])
		rec, err := ukvs.ParseRecord(d[p : p+e])
		p += e + 1
		if err != nil || !rec.Freq.R.Known || rec.Freq.R.Bound != ukvs.Exact {
			return 0
		}
		sum += rec.Freq.R.N
	}
	return sum
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return len(b)
}

// WriteGridTable writes grid results as a tab-separated table with a
// header: weights, the map compacted from, size, relative cost per line
// of the full map, per unique URI-R ("-" when unknown) and per byte,
// accuracy, precision, recall, the confusion counts and the compaction
// time in seconds.
func WriteGridTable(w io.Writer, pts []GridPoint) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "wh\twp\tfrom\tlines\tbytes\trel_lines\trel_urirs\trel_bytes\taccuracy\tprecision\trecall\ttp\tfp\ttn\tfn\tseconds")
	for _, p := range pts {
		ru := "-"
		if !math.IsNaN(p.RelURIRs) {
			ru = fmt.Sprintf("%.6f", p.RelURIRs)
		}
		fmt.Fprintf(bw, "%g\t%g\t%s\t%d\t%d\t%.6f\t%s\t%.6f\t%.4f\t%.4f\t%.4f\t%d\t%d\t%d\t%d\t%.3f\n", p.Wh, p.Wp, p.From,
			p.Lines, p.Bytes, p.RelLines, ru, p.RelBytes, p.Accuracy, p.Precision, p.Recall, p.TP, p.FP, p.TN, p.FN, p.Compaction.Seconds())
	}
	return bw.Flush()
}

// WriteGridSVG plots a grid like Figure 9 of the MementoMap paper:
// accuracy against relative cost (per unique URI-R when known, else per
// line of the full map, on a logarithmic axis when the costs span more
// than a decade), one line per host weight joining its path weights, each
// point labelled with its Wp (a diagonal grid, Wh = Wp, is one line).
// Written by hand: no plotting dependency.
func WriteGridSVG(w io.Writer, pts []GridPoint, title string) error {
	const W, H, L, R, T, B = 760.0, 480.0, 70.0, 150.0, 40.0, 60.0
	cost := func(p GridPoint) float64 { return p.RelURIRs }
	xlabel := "relative cost (lines of the map / unique URI-Rs)"
	for _, p := range pts {
		if math.IsNaN(p.RelURIRs) {
			cost = func(p GridPoint) float64 { return p.RelLines }
			xlabel = "relative cost (lines of the map / lines of the full key list)"
			break
		}
	}
	lo, hi := math.Inf(1), 0.0
	for _, p := range pts {
		if c := cost(p); c > 0 && !math.IsNaN(c) {
			lo, hi = min(lo, c), max(hi, c)
		}
	}
	if hi == 0 {
		lo, hi = 0.1, 1
	}
	logX := hi/lo > 10
	var x func(float64) float64
	var ticks []float64
	if logX {
		l0, l1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		x = func(v float64) float64 { return L + (math.Log10(max(v, lo))-l0)/(l1-l0)*(W-L-R) }
		for e := l0; e <= l1; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		xmax := math.Ceil(hi*10-1e-9) / 10
		x = func(v float64) float64 { return L + v/xmax*(W-L-R) }
		for i := 0; i <= 10; i++ {
			ticks = append(ticks, xmax*float64(i)/10)
		}
	}
	// The accuracy axis starts at the tenth below the lowest point.
	ylo := 1.0
	for _, p := range pts {
		if !math.IsNaN(p.Accuracy) {
			ylo = min(ylo, math.Floor(p.Accuracy*10)/10)
		}
	}
	ylo = min(max(ylo, 0), 0.9)
	y := func(v float64) float64 { return H - B - (v-ylo)/(1-ylo)*(H-T-B) }
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(bw, `<rect width="%g" height="%g" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(bw, `<text x="%g" y="22" text-anchor="middle" font-size="14">%s</text>`+"\n", (L+W-R)/2, xmlEscape(title))
	for _, t := range ticks {
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`+"\n", x(t), y(ylo), x(t), y(1))
		fmt.Fprintf(bw, `<text x="%.1f" y="%g" text-anchor="middle">%.3g</text>`+"\n", x(t), y(ylo)+18, t)
	}
	for i := 0; i <= 10; i++ {
		v := ylo + (1-ylo)*float64(i)/10
		fmt.Fprintf(bw, `<line x1="%g" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`+"\n", x(ticks[0]), y(v), x(ticks[len(ticks)-1]), y(v))
		fmt.Fprintf(bw, `<text x="%g" y="%g" text-anchor="end">%.2f</text>`+"\n", L-6, y(v)+4, v)
	}
	fmt.Fprintf(bw, `<text x="%g" y="%g" text-anchor="middle">%s%s</text>`+"\n", (L+W-R)/2, H-15, xlabel, map[bool]string{true: ", log scale"}[logX])
	fmt.Fprintf(bw, `<text x="18" y="%g" text-anchor="middle" transform="rotate(-90 18 %g)">accuracy (recall = 1.0)</text>`+"\n", (T+H-B)/2, (T+H-B)/2)
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	diagonal := true
	var whs []float64
	for _, p := range pts {
		diagonal = diagonal && p.Wh == p.Wp
		if !slices.Contains(whs, p.Wh) {
			whs = append(whs, p.Wh)
		}
	}
	series := func(p GridPoint) float64 { return p.Wh }
	legend := "Wh=%g"
	if diagonal {
		whs, legend = []float64{0}, "Wh = Wp"
		series = func(GridPoint) float64 { return 0 }
	}
	for wi, wh := range whs {
		c := colors[wi%len(colors)]
		var path strings.Builder
		n := 0
		for _, p := range pts {
			if series(p) != wh || math.IsNaN(cost(p)) || math.IsNaN(p.Accuracy) {
				continue
			}
			cmd := "L"
			if n == 0 {
				cmd = "M"
			}
			n++
			fmt.Fprintf(&path, "%s%.1f,%.1f ", cmd, x(cost(p)), y(p.Accuracy))
		}
		fmt.Fprintf(bw, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.TrimSpace(path.String()), c)
		for _, p := range pts {
			if series(p) != wh || math.IsNaN(cost(p)) || math.IsNaN(p.Accuracy) {
				continue
			}
			fmt.Fprintf(bw, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>Wh=%g Wp=%g accuracy=%.3f precision=%.3f cost=%.4f</title></circle>`+"\n",
				x(cost(p)), y(p.Accuracy), c, p.Wh, p.Wp, p.Accuracy, p.Precision, cost(p))
			fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" font-size="9" fill="%s">%g</text>`+"\n", x(cost(p))+4, y(p.Accuracy)-5, c, p.Wp)
		}
		fmt.Fprintf(bw, `<rect x="%g" y="%g" width="12" height="12" fill="%s"/><text x="%g" y="%g">`+legend+`</text>`+"\n",
			W-R+20, T+10+float64(wi)*18, c, W-R+38, T+21+float64(wi)*18, wh)
	}
	fmt.Fprintf(bw, `<text x="%g" y="%g" font-size="10">point labels: Wp</text>`+"\n", W-R+20, T+21+float64(len(whs))*18+6)
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}
