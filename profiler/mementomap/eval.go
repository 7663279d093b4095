package mementomap

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []Labelled
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
			return nil, fmt.Errorf("mementomap: %s:%d: want \"<label> <URI or key>\"", name, line)
		}
		var l Labelled
		switch strings.ToLower(lab) {
		case "1", "present", "+", "true":
			l.Present = true
		case "0", "absent", "-", "false":
		default:
			return nil, fmt.Errorf("mementomap: %s:%d: unknown label %q", name, line, lab)
		}
		k, err := parseTarget(target)
		if err != nil {
			err = fmt.Errorf("mementomap: %s:%d: %w", name, line, err)
			if onBad == nil {
				return nil, err
			}
			onBad(err)
			continue
		}
		l.Key = k
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mementomap: %s: %w", name, err)
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

// SweepPoint is one weight of a sweep and its evaluation.
type SweepPoint struct {
	W float64
	EvalResult
}

// Sweep compacts the full map at fullPath with Wh = Wp = w for each weight
// (in tmpDir) and evaluates each result.
func Sweep(ctx context.Context, fullPath string, weights []float64, set []Labelled, tmpDir string, opts CompactOptions) ([]SweepPoint, error) {
	full, err := OpenMap(fullPath)
	if err != nil {
		return nil, err
	}
	defer full.Close()
	var pts []SweepPoint
	for i, w := range weights {
		out := filepath.Join(tmpDir, fmt.Sprintf("sweep-%d.ukvs", i))
		o := opts
		o.Wh, o.Wp, o.NoSync = w, w, true
		st, err := CompactFile(ctx, fullPath, out, o)
		if err != nil {
			return nil, err
		}
		if opts.Means == nil {
			opts.Means = &st.Means // measured once
		}
		m, err := OpenMap(out)
		if err != nil {
			return nil, err
		}
		r, err := Evaluate(m, full, set)
		m.Close()
		os.Remove(out)
		if err != nil {
			return nil, err
		}
		pts = append(pts, SweepPoint{W: w, EvalResult: r})
	}
	return pts, nil
}

// WriteTable writes sweep results as a tab-separated table with a header.
func WriteTable(w io.Writer, pts []SweepPoint) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "w\tlines\tbytes\trel_lines\trel_bytes\taccuracy\tprecision\trecall\ttp\tfp\ttn\tfn")
	for _, p := range pts {
		fmt.Fprintf(bw, "%g\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%d\t%d\t%d\n", p.W, p.Lines, p.Bytes, p.RelLines, p.RelBytes,
			p.Accuracy, p.Precision, p.Recall, p.TP, p.FP, p.TN, p.FN)
	}
	return bw.Flush()
}

// WriteSVG plots relative cost (lines) against accuracy and precision, one
// point per weight, like Figure 9 of the MementoMap paper. The SVG is
// written by hand: no plotting dependency.
func WriteSVG(w io.Writer, pts []SweepPoint, title string) error {
	const W, H, L, R, T, B = 640.0, 420.0, 70.0, 20.0, 40.0, 60.0
	// The cost axis ends at the next tenth above the largest cost.
	xmax := 0.1
	for _, p := range pts {
		if !math.IsNaN(p.RelLines) {
			xmax = max(xmax, math.Ceil(p.RelLines*10-1e-9)/10)
		}
	}
	xmax = min(xmax, 1)
	x := func(v float64) float64 { return L + v/xmax*(W-L-R) }
	y := func(v float64) float64 { return H - B - v*(H-T-B) }
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(bw, `<rect width="%g" height="%g" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(bw, `<text x="%g" y="22" text-anchor="middle" font-size="14">%s</text>`+"\n", W/2, xmlEscape(title))
	for i := 0; i <= 10; i++ {
		v := float64(i) / 10
		xv := v * xmax
		fmt.Fprintf(bw, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd"/>`+"\n", x(xv), y(0), x(xv), y(1))
		fmt.Fprintf(bw, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd"/>`+"\n", x(0), y(v), x(xmax), y(v))
		fmt.Fprintf(bw, `<text x="%g" y="%g" text-anchor="middle">%.2g</text>`+"\n", x(xv), y(0)+18, xv)
		fmt.Fprintf(bw, `<text x="%g" y="%g" text-anchor="end">%.1f</text>`+"\n", x(0)-6, y(v)+4, v)
	}
	fmt.Fprintf(bw, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", x(0), y(0), x(xmax), y(0))
	fmt.Fprintf(bw, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", x(0), y(0), x(0), y(1))
	fmt.Fprintf(bw, `<text x="%g" y="%g" text-anchor="middle">relative cost (lines of the map / lines of the full key list)</text>`+"\n", (L+W-R)/2, H-15)
	fmt.Fprintf(bw, `<text x="18" y="%g" text-anchor="middle" transform="rotate(-90 18 %g)">accuracy, precision (recall = 1.0)</text>`+"\n", (T+H-B)/2, (T+H-B)/2)
	series := []struct {
		name, color string
		v           func(SweepPoint) float64
	}{
		{"accuracy", "#1f77b4", func(p SweepPoint) float64 { return p.Accuracy }},
		{"precision", "#d62728", func(p SweepPoint) float64 { return p.Precision }},
	}
	for si, s := range series {
		var path strings.Builder
		for i, p := range pts {
			if math.IsNaN(s.v(p)) || math.IsNaN(p.RelLines) {
				continue
			}
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f,%.1f ", cmd, x(p.RelLines), y(s.v(p)))
		}
		fmt.Fprintf(bw, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.TrimSpace(path.String()), s.color)
		for _, p := range pts {
			if math.IsNaN(s.v(p)) || math.IsNaN(p.RelLines) {
				continue
			}
			fmt.Fprintf(bw, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>W=%g %s=%.3f cost=%.3f</title></circle>`+"\n",
				x(p.RelLines), y(s.v(p)), s.color, p.W, s.name, s.v(p), p.RelLines)
		}
		if si == 0 {
			// One label per distinct point ("W=0.5,0.1" when weights coincide).
			for i := 0; i < len(pts); {
				j, ws := i, []string{}
				for ; j < len(pts) && pts[j].RelLines == pts[i].RelLines && pts[j].Accuracy == pts[i].Accuracy; j++ {
					ws = append(ws, fmt.Sprintf("%g", pts[j].W))
				}
				if !math.IsNaN(pts[i].RelLines) && !math.IsNaN(pts[i].Accuracy) {
					fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" font-size="10">W=%s</text>`+"\n", x(pts[i].RelLines)+5, y(pts[i].Accuracy)-6, strings.Join(ws, ","))
				}
				i = j
			}
		}
		fmt.Fprintf(bw, `<rect x="%g" y="%g" width="12" height="12" fill="%s"/><text x="%g" y="%g">%s</text>`+"\n",
			W-R-110, T+10+float64(si)*18, s.color, W-R-92, T+21+float64(si)*18, s.name)
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
