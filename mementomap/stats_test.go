package mementomap

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/publicsuffix"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/surt"
)

// runStatsCase is the one runner of the stats data-driven files:
//
//	stats corpus             the shared WARC corpus
//	stats reference          the reference implementation's full map of it
//	stats generated seed=N n=N   genStatsInput's CDXJ
//	stats cdxj | stats map   the case's input lines
//
// with json=true for JSON instead of text.
func runStatsCase(t *testing.T, c *ddtest.Case) string {
	ctx := context.Background()
	var h *Holdings
	var err error
	switch src := c.Args[0]; src {
	case "reference":
		m, err := OpenMap(filepath.Join(testenv.SharedDir(t), "corpus", "mementomap", "reference-full.ukvs"))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		h, err = MapHoldings(ctx, m, t.TempDir())
		if err != nil {
			return "error: " + err.Error()
		}
	case "map":
		m, err := NewMap([]byte(c.Input))
		if err != nil {
			return "error: " + err.Error()
		}
		if h, err = MapHoldings(ctx, m, t.TempDir()); err != nil {
			return "error: " + err.Error()
		}
	default:
		g := NewHoldings(GenerateOptions{SkipBad: true, Statuses: statusesArg(t, c)})
		defer g.Close()
		switch src {
		case "corpus":
			for _, p := range testenv.CorpusWARCs(t) {
				if err := g.AddFile(ctx, p, FormatAuto); err != nil {
					t.Fatal(err)
				}
			}
		case "generated":
			seed, _ := strconv.ParseUint(c.Arg("seed", "1"), 10, 64)
			n, _ := strconv.Atoi(c.Arg("n", "200"))
			in, _ := genStatsInput(seed, n)
			if err := g.AddLines(ctx, strings.NewReader(in), "generated", FormatCDXJ); err != nil {
				t.Fatal(err)
			}
		case "cdxj":
			if err := g.AddLines(ctx, strings.NewReader(c.Input), "input", FormatCDXJ); err != nil {
				return "error: " + err.Error()
			}
		default:
			t.Fatalf("%s: unknown source %q", c.Pos, src)
		}
		if h, err = g.Holdings(); err != nil {
			return "error: " + err.Error()
		}
	}
	if c.Arg("json", "") == "true" {
		b, err := json.MarshalIndent(h, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var sb strings.Builder
	if err := h.WriteText(&sb); err != nil {
		t.Fatal(err)
	}
	// The file format has no blank lines: tables are separated by "--".
	return strings.ReplaceAll(sb.String(), "\n\n", "\n--\n")
}

func statusesArg(t *testing.T, c *ddtest.Case) []int {
	var out []int
	for _, s := range strings.Split(c.Arg("status", ""), ",") {
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func TestStatsDataDriven(t *testing.T) {
	ddtest.Run(t, "testdata/stats.txt", runStatsCase)
}

// TestStatsCorpusDataDriven pins the tables of the shared corpus (its WARC
// files and the reference implementation's map of them).
func TestStatsCorpusDataDriven(t *testing.T) {
	testenv.SharedDir(t)
	ddtest.Run(t, "testdata/stats-corpus.txt", runStatsCase)
}

// statsURIR is one URI-R of a generated input and its captures.
type statsURIR struct {
	labels []string // host labels, TLD first
	segs   []string
	url    string
	years  []int // one per memento
	status []int // one per memento; -1 for a revisit
}

func (u statsURIR) key() string {
	return strings.Join(u.labels, ",") + ")/" + strings.Join(u.segs, "/")
}

// genStatsInput returns a CDXJ index whose distribution is known: URI-Rs
// over hosts of 1 to 4 labels (an IP, localhost, a registered domain under
// a multi-label public suffix) and paths of 0 to 3 segments, some sharing
// a key through their query; Zipf-like memento counts; years 2005-2019;
// statuses 2xx to 5xx, none, and revisits.
func genStatsInput(seed uint64, n int) (string, []statsURIR) {
	r := rand.New(rand.NewPCG(seed, 99))
	hosts := [][]string{{"com", "example"}, {"com", "example", "blog"}, {"com", "example", "shop", "eu"}, {"org", "archive"},
		{"uk", "co", "bbc", "news"}, {"uk", "co", "bbc"}, {"localhost"}, {"5", "0", "0", "10"}, {"io", "github", "user"}, {"pt", "arquivo"}}
	segs := []string{"a", "b", "c", "2019", "x.html"}
	var us []statsURIR
	var sb strings.Builder
	seen := map[string]bool{}
	for len(us) < n {
		u := statsURIR{labels: hosts[r.IntN(len(hosts))]}
		for range r.IntN(4) {
			u.segs = append(u.segs, segs[r.IntN(len(segs))])
		}
		dns := slices.Clone(u.labels)
		slices.Reverse(dns)
		u.url = "http://" + strings.Join(dns, ".") + "/" + strings.Join(u.segs, "/")
		if r.IntN(3) == 0 {
			u.url += fmt.Sprintf("?id=%d", r.IntN(4))
		}
		if seen[u.url] {
			continue
		}
		seen[u.url] = true
		m := 1 + r.IntN(3)
		if r.IntN(8) == 0 {
			m = 5 + r.IntN(40)
		}
		for range m {
			y := 2005 + r.IntN(15)
			st := []int{200, 200, 200, 301, 404, 503, 0, -1}[r.IntN(8)]
			u.years = append(u.years, y)
			u.status = append(u.status, st)
			l := cdxj.Line{Key: mustSURT(u.url), Timestamp: fmt.Sprintf("%d%02d01000000", y, 1+r.IntN(12)), URL: u.url, MIME: "text/html", Status: st,
				Length: -1, Offset: -1}
			if st == -1 {
				l.MIME, l.Status = cdxj.RevisitMIME, 200
			}
			sb.Write(l.Format(nil))
		}
		us = append(us, u)
	}
	return sb.String(), us
}

func mustSURT(u string) string {
	s, err := surt.Canonicalize(u)
	if err != nil {
		panic(err)
	}
	return s
}

// TestStatsKnownDistribution computes every statistic of a generated input
// independently (plain loops over the known URI-Rs: the O(n²) Gini
// definition, the Pareto break point item by item, node sets by prefix)
// and compares with Holdings.
func TestStatsKnownDistribution(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		in, us := genStatsInput(seed, 150+int(seed)*40)
		g := NewHoldings(GenerateOptions{})
		if err := g.AddLines(context.Background(), strings.NewReader(in), "generated", FormatCDXJ); err != nil {
			t.Fatal(err)
		}
		h, err := g.Holdings()
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := expectedHoldings(t, us)
		got, _ := json.MarshalIndent(h, "", " ")
		exp, _ := json.MarshalIndent(want, "", " ")
		if !holdingsClose(h, want) {
			t.Fatalf("seed %d:\ngot  %s\nwant %s", seed, got, exp)
		}
	}
}

func expectedHoldings(t *testing.T, us []statsURIR) *Holdings {
	t.Helper()
	h := &Holdings{Source: "captures"}
	counts := make([]float64, len(us))
	keys, hosts, domains, tlds := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	years := map[int]*YearRow{}
	for i, u := range us {
		if k, err := KeyFor(u.url); err != nil || k != u.key() {
			t.Fatalf("key of %s: %q %v, want %q", u.url, k, err, u.key())
		}
		counts[i] = float64(len(u.years))
		h.Mementos += int64(len(u.years))
		keys[u.key()] = true
		hosts[strings.Join(u.labels, ",")] = true
		tlds[u.labels[0]] = true
		dns := slices.Clone(u.labels)
		slices.Reverse(dns)
		d, err := publicsuffix.EffectiveTLDPlusOne(strings.Join(dns, "."))
		if err != nil {
			d = strings.Join(dns, ".")
		}
		domains[d] = true
		first := slices.Min(u.years) // every generated capture is dated
		seenYear := map[int]bool{}
		for j, y := range u.years {
			if years[y] == nil {
				years[y] = &YearRow{Year: y}
			}
			row := years[y]
			row.Mementos++
			if !seenYear[y] {
				seenYear[y] = true
				row.URIRs++
				if y == first {
					row.NewURIRs++
				}
			}
			switch s := u.status[j]; {
			case s == -1:
				row.Revisit++
			case s >= 200 && s < 300:
				row.S2xx++
			case s >= 300 && s < 400:
				row.S3xx++
			case s >= 400 && s < 500:
				row.S4xx++
			case s >= 500 && s < 600:
				row.S5xx++
			default:
				row.Other++
			}
		}
	}
	h.URIRs, h.Keys = int64(len(us)), int64(len(keys))
	h.Hosts, h.Domains, h.TLDs = int64(len(hosts)), int64(len(domains)), int64(len(tlds))
	h.Gamma = float64(h.Mementos) / float64(h.URIRs)
	sorted := slices.Clone(counts)
	slices.Sort(sorted)
	n := len(sorted)
	h.Min, h.Max = int64(sorted[0]), int64(sorted[n-1])
	h.Median = sorted[n/2]
	if n%2 == 0 {
		h.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	var absDiff, total float64
	for _, a := range counts {
		total += a
		for _, b := range counts {
			absDiff += math.Abs(a - b)
		}
	}
	h.Gini = absDiff / (2 * float64(n) * float64(n) * (total / float64(n)))
	// Pareto: take URI-Rs by decreasing count, one at a time, until the
	// share of URI-Rs plus the share of mementos they hold reaches 1.
	var p, s float64
	for i := n - 1; i >= 0; i-- {
		dp, ds := 1/float64(n), sorted[i]/total
		if p+s+dp+ds >= 1 {
			h.Pareto = p + (1-p-s)/(dp+ds)*dp
			break
		}
		p, s = p+dp, s+ds
	}
	for _, y := range years {
		h.Years = append(h.Years, *y)
	}
	slices.SortFunc(h.Years, func(a, b YearRow) int { return a.Year - b.Year })
	// Depth tables from node sets.
	type node struct {
		value    int64
		children map[string]bool
	}
	hostNodes := map[int]map[string]*node{}
	pathNodes := map[int]map[string]*node{}
	get := func(m map[int]map[string]*node, d int, id string) *node {
		if m[d] == nil {
			m[d] = map[string]*node{}
		}
		if m[d][id] == nil {
			m[d][id] = &node{children: map[string]bool{}}
		}
		return m[d][id]
	}
	for _, u := range us {
		for d := 0; d <= len(u.labels); d++ {
			nd := get(hostNodes, d, strings.Join(u.labels[:d], ","))
			nd.value++
			if d < len(u.labels) {
				nd.children[u.labels[d]] = true
			} else {
				nd.children[")"] = true // the host's own path root
			}
		}
		host := strings.Join(u.labels, ",")
		for d := 0; d <= len(u.segs); d++ {
			nd := get(pathNodes, d, host+")/"+strings.Join(u.segs[:d], "/"))
			nd.value++
			if d < len(u.segs) {
				nd.children[u.segs[d]] = true
			}
		}
	}
	rows := func(m map[int]map[string]*node) []DepthRow {
		var out []DepthRow
		for d := 0; m[d] != nil; d++ {
			var vals []float64
			r := DepthRow{Depth: d}
			for _, nd := range m[d] {
				vals = append(vals, float64(nd.value))
				r.Count++
				r.Sum += nd.value
				r.Max = max(r.Max, nd.value)
				if len(nd.children) > 0 {
					r.Parents++
					r.Children += int64(len(nd.children))
				}
			}
			slices.Sort(vals)
			r.Mean = float64(r.Sum) / float64(r.Count)
			r.Median = vals[len(vals)/2]
			if len(vals)%2 == 0 {
				r.Median = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
			}
			var ss float64
			for _, v := range vals {
				ss += (v - r.Mean) * (v - r.Mean)
			}
			r.StdDev = math.Sqrt(ss / float64(len(vals)))
			r.RedQ = 1 - float64(r.Count)/float64(r.Sum)
			if r.Parents > 0 {
				r.MeanChld = float64(r.Children) / float64(r.Parents)
			}
			out = append(out, r)
		}
		return out
	}
	h.HostDepths, h.PathDepths = rows(hostNodes), rows(pathNodes)
	return h
}

// holdingsClose compares holdings, floats to 1e-9.
func holdingsClose(a, b *Holdings) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*max(1, math.Abs(y)) }
	sa, sb := a.Summary, b.Summary
	if sa.Mementos != sb.Mementos || sa.URIRs != sb.URIRs || sa.Keys != sb.Keys || sa.Hosts != sb.Hosts || sa.Domains != sb.Domains ||
		sa.TLDs != sb.TLDs || sa.Min != sb.Min || sa.Max != sb.Max || !near(sa.Median, sb.Median) || !near(sa.Gamma, sb.Gamma) ||
		!near(sa.Gini, sb.Gini) || !near(sa.Pareto, sb.Pareto) || !slices.Equal(a.Years, b.Years) ||
		len(a.HostDepths) != len(b.HostDepths) || len(a.PathDepths) != len(b.PathDepths) || a.Source != b.Source {
		return false
	}
	for _, p := range [][2][]DepthRow{{a.HostDepths, b.HostDepths}, {a.PathDepths, b.PathDepths}} {
		for i := range p[0] {
			x, y := p[0][i], p[1][i]
			if x.Depth != y.Depth || x.Count != y.Count || x.Sum != y.Sum || x.Max != y.Max || x.Parents != y.Parents || x.Children != y.Children ||
				!near(x.Mean, y.Mean) || !near(x.Median, y.Median) || !near(x.StdDev, y.StdDev) || !near(x.RedQ, y.RedQ) || !near(x.MeanChld, y.MeanChld) {
				return false
			}
		}
	}
	return true
}
