package mementomap

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"golang.org/x/net/publicsuffix"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// Holdings are the statistics of an archive's holdings that the MementoMap
// paper (Alam et al., JCDL 2019) reports for Arquivo.pt: the size and skew
// of the holdings (mementos per URI-R, Gini coefficient, Pareto break
// point), a per-year table and per-depth tables of the key tree. The exact
// definitions, some of which had to be chosen, are on each field.
type Holdings struct {
	// Source says what the statistics were computed from: "captures"
	// (WARC, CDXJ, CDX, URI lists) or "map" (a MementoMap, where a URI-R
	// is only known through its key's counts: no years, and the
	// distribution statistics are over keys, see PerKey).
	Source string `json:"source"`
	Summary
	// Years is the per-year table (captures only), in year order; a
	// capture without a date counts under year 0.
	Years []YearRow `json:"years,omitempty"`
	// HostDepths and PathDepths are the per-depth tables of the key tree:
	// one row per depth d of host nodes of d labels (d = 0 is the root, 1
	// the TLDs) and of path nodes of d segments below a host (d = 0 is
	// the host root "host)/").
	HostDepths []DepthRow `json:"host_depths"`
	PathDepths []DepthRow `json:"path_depths"`
}

// Summary is the holdings summary table.
type Summary struct {
	Mementos int64 `json:"mementos"` // URI-Ms: captures counted (or the sum of the map's M counts)
	URIRs    int64 `json:"urirs"`    // unique URI-Rs (distinct full SURTs, query included); 0 when unknown
	Keys     int64 `json:"keys"`     // HxPx keys: lines of the full map
	Hosts    int64 `json:"hosts"`    // distinct hosts (with port) holding captures
	Domains  int64 `json:"domains"`  // distinct registered domains (eTLD+1; hosts without one count as themselves)
	TLDs     int64 `json:"tlds"`
	// Gamma (γ) is URI-Ms per URI-R: Mementos / URIRs.
	Gamma float64 `json:"gamma"`
	// PerKey is set when the distribution statistics below are over keys
	// (map input: mementos per key), not over URI-Rs.
	PerKey bool `json:"per_key,omitempty"`
	// Min, Median, Max of the number of mementos per URI-R (per key).
	Min    int64   `json:"min"`
	Median float64 `json:"median"`
	Max    int64   `json:"max"`
	// Gini is the Gini coefficient of mementos per URI-R: 0 when every
	// URI-R has as many mementos, towards 1 when a few hold all.
	// G = Σ_i Σ_j |x_i − x_j| / (2 n² x̄), computed exactly from the sorted
	// counts.
	Gini float64 `json:"gini"`
	// Pareto is the Pareto break point: the share p of URI-Rs with the most
	// mementos that holds the share 1 − p of all mementos (0.2 is the
	// "80/20 rule"; 0.5 means no skew), interpolated linearly between
	// URI-Rs.
	Pareto float64 `json:"pareto"`
}

// YearRow is one year of the per-year table.
type YearRow struct {
	Year     int   `json:"year"`
	Mementos int64 `json:"mementos"` // URI-Ms captured that year
	URIRs    int64 `json:"urirs"`    // distinct URI-Rs captured that year
	// NewURIRs counts the URI-Rs first captured that year (their first
	// dated capture; year 0 only for URI-Rs never dated).
	NewURIRs int64 `json:"new_urirs"`
	// Status counts the year's mementos by HTTP status class; revisit
	// records count apart (their status is the original's or a 304).
	S2xx    int64 `json:"2xx"`
	S3xx    int64 `json:"3xx"`
	S4xx    int64 `json:"4xx"`
	S5xx    int64 `json:"5xx"`
	Other   int64 `json:"other"`
	Revisit int64 `json:"revisit"`
}

// DepthRow is one depth of a per-depth table. The value of a node is the
// number of unique URI-Rs in its sub-tree (itself included); for a map
// without URI-R counts, the number of keys.
type DepthRow struct {
	Depth int `json:"depth"`
	// Count is the number of nodes at this depth, Sum the sum of their
	// values (the URI-Rs whose key reaches this depth), Max, Mean, Median
	// and StdDev (population) describe the values.
	Count  int64   `json:"count"`
	Sum    int64   `json:"sum"`
	Max    int64   `json:"max"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	StdDev float64 `json:"stddev"`
	// RedQ, the reduction quotient, is 1 − Count/Sum: the share of the
	// URI-R lines below this depth that replacing every node of this depth
	// by one line would remove.
	RedQ float64 `json:"redq"`
	// Parents is the number of nodes with at least one child, Children
	// the number of their children and MeanChld = Children/Parents, the
	// per-depth mean child count that compaction multiplies by a weight to
	// get its thresholds. A host's children are its sub-hosts and its own
	// path root, as in the compaction tree; a path node's children are the
	// next segments.
	Parents  int64   `json:"parents"`
	Children int64   `json:"children"`
	MeanChld float64 `json:"meanchld"`
}

// maxDepth bounds the depth tables; deeper nodes count in the last row.
const maxDepth = 64

// appendTreeKey appends the tree-order form of a canonical key: host labels
// separated by 0x01, 0x02 for ')', each path segment preceded by 0x01. In
// byte order of these, every node's sub-tree is contiguous (in plain byte
// order "a.html" sorts between "a" and "a/x").
func appendTreeKey(dst []byte, key string) []byte {
	h := len(key)
	for i := 0; i < len(key); i++ {
		if key[i] == ')' {
			h = i
			break
		}
	}
	for i := 0; i < h; i++ {
		if c := key[i]; c == ',' {
			dst = append(dst, 1)
		} else {
			dst = append(dst, c)
		}
	}
	if h == len(key) {
		return dst
	}
	dst = append(dst, 2)
	path := key[h+1:]
	if path == "/" || path == "" {
		return dst
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c == '/' {
			dst = append(dst, 1)
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// yearOf returns the 4-digit year of a 14-digit timestamp, "0000" when
// unknown.
func yearOf(ts string) string {
	if len(ts) >= 4 && ts[0] >= '1' && ts[0] <= '9' {
		if _, err := strconv.Atoi(ts[:4]); err == nil {
			return ts[:4]
		}
	}
	return "0000"
}

// statusClass is the one-byte class of a capture's status in sort lines.
func statusClass(status int, revisit bool) byte {
	switch {
	case revisit:
		return 'r'
	case status >= 200 && status < 600:
		return byte('0' + status/100)
	}
	return 'o'
}

// hist is a histogram of non-negative counts.
type hist map[int64]int64

// describe returns n, sum, min, max, mean, median and the population
// standard deviation of the histogram.
func (h hist) describe() (n, sum, lo, hi int64, mean, median, sd float64) {
	vals := make([]int64, 0, len(h))
	for v, c := range h {
		vals = append(vals, v)
		n += c
		sum += v * c
	}
	if n == 0 {
		return
	}
	slices.Sort(vals)
	lo, hi = vals[0], vals[len(vals)-1]
	mean = float64(sum) / float64(n)
	var ss float64
	for _, v := range vals {
		d := float64(v) - mean
		ss += d * d * float64(h[v])
	}
	sd = math.Sqrt(ss / float64(n))
	// The median: the middle value, or the mean of the two middle ones.
	at := func(k int64) int64 { // k-th smallest, 0-based
		var seen int64
		for _, v := range vals {
			if seen += h[v]; k < seen {
				return v
			}
		}
		return hi
	}
	if n%2 == 1 {
		median = float64(at(n / 2))
	} else {
		median = float64(at(n/2-1)+at(n/2)) / 2
	}
	return
}

// gini returns the Gini coefficient of the histogram's values: with the n
// values sorted ascending, G = 2 Σ_i i·x_i / (n Σ x) − (n+1)/n (ranks
// from 1), equal to the mean absolute difference over twice the mean.
func (h hist) gini() float64 {
	vals, n, sum := h.sorted()
	if n == 0 || sum == 0 {
		return 0
	}
	var r, acc float64 // ranks used so far; Σ i·x_i
	for _, v := range vals {
		c := float64(h[v])
		acc += float64(v) * (c*r + c*(c+1)/2)
		r += c
	}
	return 2*acc/(n*sum) - (n+1)/n
}

// sorted returns the distinct values in increasing order, the number of
// items and the sum of their values.
func (h hist) sorted() (vals []int64, n, sum float64) {
	vals = make([]int64, 0, len(h))
	for v, c := range h {
		vals = append(vals, v)
		n += float64(c)
		sum += float64(v) * float64(c)
	}
	slices.Sort(vals)
	return vals, n, sum
}

// pareto returns the Pareto break point p: the top share p of items (by
// value) holds the share 1 − p of the total, linearly interpolated
// within a run of equal values.
func (h hist) pareto() float64 {
	vals, n, total := h.sorted()
	if n == 0 || total == 0 {
		return math.NaN()
	}
	var p, s float64 // share of items taken, share of the total they hold
	for i := len(vals) - 1; i >= 0; i-- {
		v, c := float64(vals[i]), float64(h[vals[i]])
		dp, ds := c/n, c*v/total
		// p + s grows linearly by dp + ds over this run; it reaches 1
		// within it when p + s + dp + ds >= 1.
		if p+s+dp+ds >= 1 {
			return p + dp*(1-p-s)/(dp+ds)
		}
		p, s = p+dp, s+ds
	}
	return 1
}

// holdingsWalk accumulates the per-depth tables over keys in tree order.
type holdingsWalk struct {
	stack []hnode
	host  [maxDepth]depthAcc
	path  [maxDepth]depthAcc
	// Hosts, domains and TLDs counted as the walk passes them.
	hosts, domains int64
	lastDomain     []byte
}

type hnode struct {
	tok      []byte
	path     bool // a path node (the host root or a segment)
	depth    int
	value    int64
	children int64
}

type depthAcc struct {
	values             hist
	parents, children  int64
	used               bool
	count, sum, maxVal int64
}

func newHoldingsWalk() *holdingsWalk {
	w := &holdingsWalk{}
	w.stack = append(w.stack, hnode{})
	return w
}

// add counts a key (in tree form) holding value URI-Rs.
func (w *holdingsWalk) add(tk []byte, value int64) {
	// Split into tokens: host labels (0x01-separated, up to 0x02), the
	// root, then 0x01-prefixed segments.
	type tok struct {
		b    []byte
		path bool
	}
	var toks [64]tok
	ts := toks[:0]
	h := bytes.IndexByte(tk, 2)
	host := tk
	if h >= 0 {
		host = tk[:h]
	}
	for len(host) > 0 {
		i := bytes.IndexByte(host, 1)
		if i < 0 {
			ts = append(ts, tok{b: host})
			break
		}
		ts = append(ts, tok{b: host[:i]})
		host = host[i+1:]
	}
	if h >= 0 {
		ts = append(ts, tok{b: tk[h : h+1], path: true})
		rest := tk[h+1:]
		for len(rest) > 0 && rest[0] == 1 {
			rest = rest[1:]
			i := bytes.IndexByte(rest, 1)
			if i < 0 {
				i = len(rest)
			}
			ts = append(ts, tok{b: rest[:i], path: true})
			rest = rest[i:]
		}
	}
	c := 0
	for c < len(ts) && c+1 < len(w.stack) {
		n := &w.stack[c+1]
		if n.path != ts[c].path || !bytes.Equal(n.tok, ts[c].b) {
			break
		}
		c++
	}
	for len(w.stack) > c+1 {
		w.pop()
	}
	for _, t := range ts[c:] {
		parent := &w.stack[len(w.stack)-1]
		parent.children++
		d := parent.depth + 1
		if t.path && !parent.path {
			d = 0 // the host root
		}
		w.stack = append(w.stack, hnode{tok: bytes.Clone(t.b), path: t.path, depth: d})
		if t.path && d == 0 {
			w.countHost()
		}
	}
	for i := range w.stack {
		w.stack[i].value += value
	}
}

// countHost counts the host of the path root just pushed, and its domain.
func (w *holdingsWalk) countHost() {
	w.hosts++
	var labels []string
	for _, n := range w.stack[1 : len(w.stack)-1] {
		l := string(n.tok)
		if i := bytes.IndexByte(n.tok, ':'); i >= 0 && bytes.Count(n.tok, []byte{':'}) == 1 {
			l = l[:i] // a port
		}
		labels = append([]string{l}, labels...)
	}
	host := []byte(joinDots(labels))
	dom := host
	if d, err := publicsuffix.EffectiveTLDPlusOne(string(host)); err == nil {
		dom = []byte(d)
	}
	if !bytes.Equal(dom, w.lastDomain) {
		w.domains++
		w.lastDomain = dom
	}
}

func joinDots(labels []string) string {
	var b bytes.Buffer
	for i, l := range labels {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(l)
	}
	return b.String()
}

func (w *holdingsWalk) pop() {
	n := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	acc := &w.host[min(n.depth, maxDepth-1)]
	if n.path {
		acc = &w.path[min(n.depth, maxDepth-1)]
	}
	if acc.values == nil {
		acc.values = hist{}
	}
	acc.used = true
	acc.values[n.value]++
	if n.children > 0 {
		acc.parents++
		acc.children += n.children
	}
}

// finish closes every node and returns the depth tables.
func (w *holdingsWalk) finish() (hosts, paths []DepthRow) {
	for len(w.stack) > 1 {
		w.pop()
	}
	w.pop() // the root
	rows := func(accs *[maxDepth]depthAcc) []DepthRow {
		var out []DepthRow
		for d := range accs {
			a := &accs[d]
			if !a.used {
				continue
			}
			n, sum, _, hi, mean, median, sd := a.values.describe()
			r := DepthRow{Depth: d, Count: n, Sum: sum, Max: hi, Mean: mean, Median: median, StdDev: sd,
				Parents: a.parents, Children: a.children}
			if sum > 0 {
				r.RedQ = 1 - float64(n)/float64(sum)
			}
			if a.parents > 0 {
				r.MeanChld = float64(a.children) / float64(a.parents)
			}
			out = append(out, r)
		}
		return out
	}
	return rows(&w.host), rows(&w.path)
}

// NewHoldings returns a generator that collects holdings statistics
// instead of a map: feed it with AddFile, AddLines or Add, then call
// Holdings. Close it to remove spill files.
func NewHoldings(opts GenerateOptions) *Generator {
	g := NewGenerator(opts)
	g.detail = true
	return g
}

// Holdings computes the holdings statistics of the captures added to a
// generator made by NewHoldings, in one pass over its sorted lines
// (memory: the depth of the key tree and histograms of counts).
func (g *Generator) Holdings() (*Holdings, error) {
	if !g.detail {
		return nil, fmt.Errorf("mementomap: holdings: the generator was not made by NewHoldings")
	}
	h := &Holdings{Source: "captures"}
	walk := newHoldingsWalk()
	perURIR := hist{}
	years := map[int]*YearRow{}
	yearRow := func(y int) *YearRow {
		r := years[y]
		if r == nil {
			r = &YearRow{Year: y}
			years[y] = r
		}
		return r
	}
	var curKey, curRid []byte
	var keyR, ridM int64
	var ridYears []int
	flushRid := func() {
		if curRid == nil {
			return
		}
		perURIR[ridM]++
		h.URIRs++
		keyR++
		// New in its first known year (undated captures sort first).
		first := ridYears[0]
		if first == 0 && len(ridYears) > 1 {
			first = ridYears[1]
		}
		for _, y := range ridYears {
			yearRow(y).URIRs++
			if y == first {
				yearRow(y).NewURIRs++
			}
		}
	}
	flushKey := func() {
		if curKey == nil {
			return
		}
		h.Keys++
		walk.add(curKey, keyR)
	}
	lines := &lineSplitter{fn: func(line []byte) error {
		// treekey SP full-SURT SP year SP class
		f := bytes.Split(line, []byte{' '})
		if len(f) != 4 || len(f[2]) != 4 || len(f[3]) != 1 {
			return fmt.Errorf("mementomap: holdings: bad sort line %q", line)
		}
		tk, rid, class := f[0], f[1], f[3][0]
		year, _ := strconv.Atoi(string(f[2]))
		if curKey == nil || !bytes.Equal(tk, curKey) {
			flushRid()
			flushKey()
			curKey = append(curKey[:0], tk...)
			curRid, keyR = nil, 0
		}
		if curRid == nil || !bytes.Equal(rid, curRid) {
			flushRid()
			curRid = append(curRid[:0], rid...)
			ridM, ridYears = 0, ridYears[:0]
		}
		ridM++
		h.Mementos++
		if len(ridYears) == 0 || ridYears[len(ridYears)-1] != year {
			ridYears = append(ridYears, year) // lines of a URI-R come in year order
		}
		y := yearRow(year)
		y.Mementos++
		switch class {
		case '2':
			y.S2xx++
		case '3':
			y.S3xx++
		case '4':
			y.S4xx++
		case '5':
			y.S5xx++
		case 'r':
			y.Revisit++
		default:
			y.Other++
		}
		return nil
	}}
	if _, err := g.sort.WriteTo(lines); err != nil {
		return nil, err
	}
	if err := lines.flush(); err != nil {
		return nil, err
	}
	flushRid()
	flushKey()
	h.HostDepths, h.PathDepths = walk.finish()
	h.Summary = summarize(h.Summary, perURIR, walk)
	for _, y := range years {
		h.Years = append(h.Years, *y)
	}
	slices.SortFunc(h.Years, func(a, b YearRow) int { return a.Year - b.Year })
	return h, nil
}

// summarize fills the distribution statistics of a summary.
func summarize(s Summary, dist hist, w *holdingsWalk) Summary {
	_, _, lo, hi, _, median, _ := dist.describe()
	s.Min, s.Max, s.Median = lo, hi, median
	s.Gini, s.Pareto = dist.gini(), dist.pareto()
	if s.URIRs > 0 {
		s.Gamma = float64(s.Mementos) / float64(s.URIRs)
	}
	s.Hosts, s.Domains = w.hosts, w.domains
	for _, r := range w.host[1].values {
		s.TLDs += r
	}
	return s
}

// MapHoldings computes what holdings statistics a map can give: the
// per-depth tables (node values from the keys' URI-R counts, or one per
// key when the map does not give them) and the summary, whose
// distribution statistics are then over keys (mementos per key). Keys are
// re-sorted in tree order on disk. Exclusions are not holdings and are
// left out; wildcard lines count as keys.
func MapHoldings(ctx context.Context, m *Map, tempDir string) (*Holdings, error) {
	h := &Holdings{Source: "map"}
	h.PerKey = true
	sorter := cdxj.NewSorter(cdxj.SortOptions{MaxMemory: 64 << 20, TempDir: tempDir})
	defer sorter.Close()
	headerLines := int64(bytes.Count(m.data[:m.start], []byte{'\n'}))
	perKey := hist{}
	knownR := true
	var line []byte
	d := m.Data()
	for p, n := 0, 0; p < len(d); n++ {
		if n&4095 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e := indexNL(d[p:])
		raw := d[p : p+e]
		p += e + 1
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		rec, err := ukvs.ParseRecord(raw)
		if err != nil {
			return nil, &ukvs.Error{File: m.name, Line: headerLines + int64(n) + 1, Err: err}
		}
		if rec.Freq.IsExclusion() {
			continue
		}
		mm := rec.Freq.M.N
		r := rec.Freq.R.N
		if !rec.Freq.R.Known {
			knownR, r = false, 1
		}
		h.Mementos += mm
		h.URIRs += r
		h.Keys++
		perKey[mm]++
		line = appendTreeKey(line[:0], string(rec.Key))
		line = append(line, ' ')
		line = strconv.AppendInt(line, r, 10)
		if err := sorter.Add(line); err != nil {
			return nil, err
		}
	}
	if !knownR {
		h.URIRs = 0
	}
	walk := newHoldingsWalk()
	lines := &lineSplitter{fn: func(l []byte) error {
		i := bytes.LastIndexByte(l, ' ')
		v, err := strconv.ParseInt(string(l[i+1:]), 10, 64)
		if err != nil {
			return err
		}
		walk.add(l[:i], v)
		return nil
	}}
	if _, err := sorter.WriteTo(lines); err != nil {
		return nil, err
	}
	if err := lines.flush(); err != nil {
		return nil, err
	}
	h.HostDepths, h.PathDepths = walk.finish()
	h.Summary = summarize(h.Summary, perKey, walk)
	return h, nil
}

// WriteText writes the holdings as text tables.
func (h *Holdings) WriteText(w io.Writer) error {
	var b bytes.Buffer
	s := h.Summary
	fmt.Fprintf(&b, "holdings (from %s)\n", h.Source)
	urirs, gamma := strconv.FormatInt(s.URIRs, 10), fmt.Sprintf("%.3f", s.Gamma)
	if s.URIRs == 0 {
		urirs, gamma = "-", "-"
	}
	unit := "URI-R"
	if s.PerKey {
		unit = "key"
	}
	row := func(name, format string, a ...any) {
		fmt.Fprintf(&b, "  %-24s"+format+"\n", append([]any{name}, a...)...)
	}
	row("URI-Ms (mementos)", "%d", s.Mementos)
	row("URI-Rs", "%s", urirs)
	row("HxPx keys", "%d", s.Keys)
	row("hosts", "%d", s.Hosts)
	row("registered domains", "%d", s.Domains)
	row("TLDs", "%d", s.TLDs)
	row("gamma (URI-Ms / URI-R)", "%s", gamma)
	row("mementos per "+unit, "min %d, median %g, max %d", s.Min, s.Median, s.Max)
	row("Gini (per "+unit+")", "%.4f", s.Gini)
	row("Pareto break point", "%.1f%% of %ss hold %.1f%% of URI-Ms", 100*s.Pareto, unit, 100*(1-s.Pareto))
	if len(h.Years) > 0 {
		b.WriteString("\nyear\tURI-Ms\tURI-Rs\tnew URI-Rs\t2xx\t3xx\t4xx\t5xx\tother\trevisit\n")
		for _, y := range h.Years {
			yr := strconv.Itoa(y.Year)
			if y.Year == 0 {
				yr = "-"
			}
			fmt.Fprintf(&b, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", yr, y.Mementos, y.URIRs, y.NewURIRs, y.S2xx, y.S3xx, y.S4xx, y.S5xx, y.Other, y.Revisit)
		}
	}
	for _, t := range []struct {
		prefix string
		rows   []DepthRow
	}{{"H", h.HostDepths}, {"P", h.PathDepths}} {
		b.WriteString("\ndepth\tCount\tSum\tMax\tMean\tMedian\tStdDev\tRedQ\tParents\tChildren\tMeanChld\n")
		for _, r := range t.rows {
			fmt.Fprintf(&b, "%s%d\t%d\t%d\t%d\t%.3f\t%g\t%.3f\t%.4f\t%d\t%d\t%.3f\n", t.prefix, r.Depth, r.Count, r.Sum, r.Max, r.Mean,
				r.Median, r.StdDev, r.RedQ, r.Parents, r.Children, r.MeanChld)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteDepthSVG plots the depth distribution of the key tree: for each
// host depth and path depth, the number of nodes (Count) and of URI-Rs
// below them (Sum) as bars on a logarithmic axis, with the mean child
// count (MeanChld) written under each depth. Written by hand: no plotting
// dependency.
func (h *Holdings) WriteDepthSVG(w io.Writer, title string) error {
	const H, T, B, L, gap = 380.0, 50.0, 80.0, 60.0, 40.0
	const bar = 14.0
	n := len(h.HostDepths) + len(h.PathDepths)
	W := L + float64(n)*(2*bar+10) + gap + 30
	top := 1.0
	for _, rows := range [][]DepthRow{h.HostDepths, h.PathDepths} {
		for _, r := range rows {
			top = max(top, float64(r.Sum), float64(r.Count))
		}
	}
	decades := math.Ceil(math.Log10(top))
	if decades < 1 {
		decades = 1
	}
	y := func(v float64) float64 {
		if v < 1 {
			return H - B
		}
		return H - B - math.Log10(v)/decades*(H-T-B)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%g" y="20" text-anchor="middle" font-size="14">%s</text>`+"\n", W/2, xmlEscape(title))
	for e := 0.0; e <= decades; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", L, y(v), W-20, y(v))
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end">%g</text>`+"\n", L-5, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<text x="15" y="%g" text-anchor="middle" transform="rotate(-90 15 %g)">nodes (Count), URI-Rs below (Sum), log scale</text>`+"\n", (T+H-B)/2, (T+H-B)/2)
	x := L + 10
	for ti, t := range []struct {
		prefix, name string
		rows         []DepthRow
	}{{"H", "host depth", h.HostDepths}, {"P", "path depth", h.PathDepths}} {
		x0 := x
		for _, r := range t.rows {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%g" height="%.1f" fill="#1f77b4"><title>%s%d Count %d</title></rect>`+"\n",
				x, y(float64(r.Count)), bar, H-B-y(float64(r.Count)), t.prefix, r.Depth, r.Count)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%g" height="%.1f" fill="#aec7e8"><title>%s%d Sum %d</title></rect>`+"\n",
				x+bar, y(float64(r.Sum)), bar, H-B-y(float64(r.Sum)), t.prefix, r.Depth, r.Sum)
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s%d</text>`+"\n", x+bar, H-B+14, t.prefix, r.Depth)
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" font-size="9">%.2g</text>`+"\n", x+bar, H-B+27, r.MeanChld)
			x += 2*bar + 10
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", (x0+x-10)/2, H-B+45, t.name)
		if ti == 0 {
			x += gap
		}
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="9">second row: mean children of nodes with children (MeanChld)</text>`+"\n", L, H-B+62)
	fmt.Fprintf(&b, `<rect x="%g" y="30" width="10" height="10" fill="#1f77b4"/><text x="%g" y="39">Count</text>`+"\n", W-140, W-126)
	fmt.Fprintf(&b, `<rect x="%g" y="30" width="10" height="10" fill="#aec7e8"/><text x="%g" y="39">Sum</text>`+"\n", W-80, W-66)
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}
