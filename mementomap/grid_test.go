package mementomap

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGridChainingEqualsScratch: every map of the 36-pair grid compacted
// from the next larger map (chaining) equals the map compacted from the
// full map, on a Zipf-skewed synthetic map and on random maps holding
// exact and wildcard exclusions; recall stays 1.0 and the relative costs
// follow the paper's definitions.
func TestGridChainingEqualsScratch(t *testing.T) {
	dir := t.TempDir()
	full, present, absent := writeSynth(t, dir, 8_000, 300)
	inputs := []string{full}
	r := rand.New(rand.NewPCG(9, 36))
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("random-%d.ukvs", i))
		if err := os.WriteFile(p, []byte(randomMap(r)), 0o644); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, p)
	}
	var set []Labelled
	for i, e := range present {
		if i%20 == 0 {
			set = append(set, Labelled{Key: []byte(e.Key), Present: true})
		}
	}
	for _, k := range absent {
		set = append(set, Labelled{Key: []byte(k)})
	}
	for n, in := range inputs {
		chained, scratch := filepath.Join(dir, fmt.Sprintf("chained-%d", n)), filepath.Join(dir, fmt.Sprintf("scratch-%d", n))
		for _, d := range []string{chained, scratch} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		s := set
		if n > 0 {
			s = labelAll(t, in)
		}
		cp, err := Grid(context.Background(), in, s, GridOptions{KeepDir: chained, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := Grid(context.Background(), in, s, GridOptions{KeepDir: scratch, Scratch: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(cp) != 36 || len(sp) != 36 {
			t.Fatalf("%d and %d points, want 36", len(cp), len(sp))
		}
		chainedFrom := 0
		for i := range cp {
			c, s := cp[i], sp[i]
			name := fmt.Sprintf("wh%g-wp%g.ukvs", c.Wh, c.Wp)
			a, b := dataOf(t, filepath.Join(chained, name)), dataOf(t, filepath.Join(scratch, name))
			if a != b {
				t.Fatalf("%s: %s compacted from %s differs from the map compacted from scratch:\n%s\nvs\n%s", in, name, c.From, a, b)
			}
			if c.FN != 0 || c.Lines != s.Lines || c.TP != s.TP || c.FP != s.FP {
				t.Fatalf("%s: %s: chained %+v, scratch %+v", in, name, c.EvalResult, s.EvalResult)
			}
			if c.From != "full" {
				chainedFrom++
			}
			if s.From != "full" {
				t.Fatalf("scratch point %s compacted from %s", name, s.From)
			}
			if got := float64(c.Lines) / float64(c.FullLines); c.RelLines != got {
				t.Fatalf("rel_lines %v, want %v", c.RelLines, got)
			}
		}
		if chainedFrom != 35 {
			t.Fatalf("%d of 36 pairs chained, want 35", chainedFrom)
		}
		// Smaller weights never give a larger map.
		for i := range cp {
			for j := range cp {
				if cp[j].Wh <= cp[i].Wh && cp[j].Wp <= cp[i].Wp && cp[j].Lines > cp[i].Lines {
					t.Fatalf("wh=%g wp=%g has %d lines, more than wh=%g wp=%g (%d)", cp[j].Wh, cp[j].Wp, cp[j].Lines, cp[i].Wh, cp[i].Wp, cp[i].Lines)
				}
			}
		}
	}
}

// labelAll labels every key of a map present, and a few unseen URIs absent.
func labelAll(t *testing.T, path string) []Labelled {
	t.Helper()
	m, err := OpenMap(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var set []Labelled
	for _, l := range strings.Split(strings.TrimSpace(string(m.Data())), "\n") {
		f := strings.Fields(l)
		if strings.HasSuffix(f[0], "*") || f[1] == "0" || strings.HasPrefix(f[1], "0/") {
			continue
		}
		if got, _ := m.Lookup([]byte(f[0]), nil); got.Present {
			set = append(set, Labelled{Key: []byte(f[0]), Present: true})
		}
	}
	for _, k := range []string{"net,unseen)/", "com,zz)/a", "uk,co,unseen)/"} {
		set = append(set, Labelled{Key: []byte(k)})
	}
	return set
}

func dataOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if len(l) > 0 && l[0] != '!' {
			out.Write(l)
		}
	}
	return out.String()
}

// TestGridRelativeCostPerURIR: the relative cost per unique URI-R divides
// by the sum of the full map's URI-R counts, and is unknown (NaN, "-")
// when the full map does not give them (the reference implementation's
// maps); the table and plot are written.
func TestGridRelativeCostPerURIR(t *testing.T) {
	dir := t.TempDir()
	withR := filepath.Join(dir, "r.ukvs")
	noR := filepath.Join(dir, "nor.ukvs")
	os.WriteFile(withR, []byte("com,a)/ 4/2\ncom,a)/x 3/3\ncom,b)/ 1/1\n"), 0o644)
	os.WriteFile(noR, []byte("com,a) 4\ncom,a)/x 3\ncom,b) 1\n"), 0o644)
	set := []Labelled{{Key: []byte("com,a)/"), Present: true}, {Key: []byte("com,c)/")}}
	pts, err := Grid(context.Background(), withR, set, GridOptions{Weights: []float64{1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 4 || pts[0].URIRs != 6 || pts[0].RelURIRs != 3.0/6 || pts[0].RelLines != 1 {
		t.Fatalf("%+v", pts[0])
	}
	pts2, err := Grid(context.Background(), noR, set, GridOptions{Weights: []float64{1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if pts2[0].URIRs != 0 || !math.IsNaN(pts2[0].RelURIRs) || pts2[0].Lines != 3 {
		t.Fatalf("%+v", pts2[0])
	}
	var tb, svg bytes.Buffer
	if err := WriteGridTable(&tb, pts2); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(tb.String()), "\n")
	if len(rows) != 5 || !strings.HasPrefix(rows[1], "1\t1\tfull\t3\t") || strings.Split(rows[1], "\t")[6] != "-" {
		t.Fatalf("table:\n%s", tb.String())
	}
	if err := WriteGridSVG(&svg, pts, "t"); err != nil || !strings.Contains(svg.String(), "Wh=1") || !strings.Contains(svg.String(), "unique URI-Rs") {
		t.Fatalf("svg %v:\n%s", err, svg.String())
	}
}

// TestGridDiagonal: a sweep (Wh = Wp) chains along the diagonal, gives the
// diagonal of the full grid, and plots as one line.
func TestGridDiagonal(t *testing.T) {
	dir := t.TempDir()
	full, present, absent := writeSynth(t, dir, 5_000, 100)
	set := []Labelled{{Key: []byte(present[7].Key), Present: true}, {Key: []byte(absent[3])}}
	d, err := Grid(context.Background(), full, set, GridOptions{Weights: []float64{1, 8, 0.1}, Diagonal: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Grid(context.Background(), full, set, GridOptions{Weights: []float64{1, 8, 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 3 || d[0].Wh != 8 || d[1].From != "wh=8,wp=8" || d[2].From != "wh=1,wp=1" {
		t.Fatalf("%+v", d)
	}
	for i, p := range d {
		if q := g[4*i]; q.Wh != p.Wh || q.Wp != p.Wp || q.Lines != p.Lines || q.Bytes != p.Bytes {
			t.Fatalf("diagonal point %d %+v differs from the grid's %+v", i, p, q)
		}
	}
	var svg bytes.Buffer
	if err := WriteGridSVG(&svg, d, "a <title>"); err != nil || !strings.Contains(svg.String(), "Wh = Wp") ||
		strings.Count(svg.String(), "<path ") != 1 || !strings.Contains(svg.String(), "a &lt;title&gt;") {
		t.Fatalf("svg %v\n%s", err, svg.String())
	}
}
