package mementomap

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// DepthMeans holds the mean number of children of the tree's inner nodes
// per depth: Host[d] for host nodes with d labels (Host[0] is the root, whose
// children are TLDs), Path[d] for path nodes d segments deep (Path[0] is a
// host's path root "host)/", whose children are first segments).
type DepthMeans struct {
	Host []float64 `json:"host"`
	Path []float64 `json:"path"`
}

// PowerLawMeans returns the reference implementation's power-law fits of the
// per-depth means (alpha·(d+1)^-k; hosts α 16.329 k 0.714, paths α 24.546
// k 1.429), for when the input cannot be read twice and no means are given.
func PowerLawMeans() DepthMeans {
	var m DepthMeans
	for d := 0; d < 16; d++ {
		m.Host = append(m.Host, 16.329*math.Pow(float64(d+1), -0.714))
		m.Path = append(m.Path, 24.546*math.Pow(float64(d+1), -1.429))
	}
	return m
}

func meanAt(v []float64, d int) float64 {
	switch {
	case len(v) == 0:
		return 1
	case d < len(v):
		return v[d]
	default:
		return v[len(v)-1]
	}
}

// String formats the means as "H0,H1,...;P0,P1,..." (the --means flag).
func (m DepthMeans) String() string {
	f := func(v []float64) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprintf("%.3g", x)
		}
		return strings.Join(s, ",")
	}
	return f(m.Host) + ";" + f(m.Path)
}

// level is one open node of the holdings tree during a walk.
type level struct {
	kind      tokKind
	root      bool
	tok       []byte
	depth     int
	sum       ukvs.Freq
	hasSum    bool
	children  int
	start     int64
	startLine int64
	exclStart int
	wildExcl  bool
	// shared marks a node that continues in the previous partition (a
	// partitioned measure pass; see segment).
	shared bool
}

// segment is the part of a node seen by one partition of a parallel
// measure pass, for nodes that span a partition cut.
type segment struct {
	level       int
	kind        tokKind
	depth       int
	children    int
	left, right bool // continues from the previous / into the next partition
}

func (l *level) add(f ukvs.Freq) {
	if l.hasSum {
		l.sum = l.sum.Add(f)
	} else {
		l.sum, l.hasSum = f, true
	}
}

type exclLine struct {
	line   []byte
	keyLen int
}

// walker runs the single-pass algorithm over sorted records: it keeps the
// open path of the tree (memory proportional to depth), counts children
// and, when a node closes with more children than its threshold, cuts the
// output back to where the node started and writes one wildcard line.
type walker struct {
	opts  CompactOptions
	means DepthMeans
	stack []level
	out   sink
	excl  []exclLine
	buf   []byte

	measure        bool
	hostN, hostSum []float64
	pathN, pathSum []float64
	// Partitioned measuring: the first record's levels below sharedLeft
	// continue from the previous partition; levels below sharedRight left
	// open at the end continue into the next.
	sharedLeft, sharedRight int
	started                 bool
	finishing               bool
	segments                []segment

	rollups int64
}

func newWalker(opts CompactOptions, means DepthMeans, out sink) *walker {
	w := &walker{opts: opts, means: means, out: out}
	root := level{root: true, kind: tkHost}
	if out != nil {
		root.start, root.startLine = out.pos()
	}
	w.stack = append(w.stack, root)
	return w
}

// partition makes w measure one partition of a parallel pass whose first
// record shares left levels with the previous partition and whose last
// record shares right levels with the next.
func (w *walker) partition(left, right int) {
	w.sharedLeft, w.sharedRight = left, right
	w.stack[0].shared = left > 0
}

// addTokens processes one record (keys strictly increasing) whose key is
// already tokenized.
func (w *walker) addTokens(rec ukvs.Record, toks []token) error {
	key := rec.Key
	c := 0
	for c < len(toks) && c+1 < len(w.stack) {
		l := &w.stack[c+1]
		t := toks[c]
		if l.kind != t.kind || !bytes.Equal(l.tok, key[t.s:t.e]) {
			break
		}
		c++
	}
	for len(w.stack) > c+1 {
		if err := w.pop(); err != nil {
			return err
		}
	}
	if c == len(toks) {
		return fmt.Errorf("key %q names the same node as an earlier key (duplicate or unsorted input)", key)
	}
	for _, t := range toks[c:] {
		w.push(t, key)
	}
	w.started = true
	top := &w.stack[len(w.stack)-1]
	if rec.Freq.IsExclusion() {
		if top.kind == tkWild {
			top.wildExcl = true
		} else if !w.measure {
			start := len(w.buf)
			w.buf = ukvs.AppendRecord(w.buf, rec)
			w.excl = append(w.excl, exclLine{line: bytes.Clone(w.buf[start:]), keyLen: len(key)})
			w.buf = w.buf[:start]
		}
	} else {
		top.add(rec.Freq)
	}
	if w.measure {
		return nil
	}
	w.buf = ukvs.AppendRecord(w.buf[:0], rec)
	return w.out.write(w.buf)
}

func (w *walker) push(t token, key []byte) {
	parent := &w.stack[len(w.stack)-1]
	parent.children++
	depth := 0
	switch t.kind {
	case tkHost:
		depth = parent.depth + 1
	case tkSeg:
		depth = parent.depth + 1
	}
	n := len(w.stack)
	if n < cap(w.stack) {
		w.stack = w.stack[:n+1]
	} else {
		w.stack = append(w.stack, level{})
	}
	l := &w.stack[n]
	tok := l.tok[:0]
	*l = level{kind: t.kind, depth: depth, exclStart: len(w.excl)}
	l.tok = append(tok, key[t.s:t.e]...)
	l.shared = !w.started && n < w.sharedLeft
	if !w.measure {
		l.start, l.startLine = w.out.pos()
	}
}

func (w *walker) threshold(l *level) float64 {
	if l.kind == tkHost {
		return w.opts.Wh * meanAt(w.means.Host, l.depth)
	}
	return w.opts.Wp * meanAt(w.means.Path, l.depth)
}

func record(n, sum []float64, d, children int) ([]float64, []float64) {
	for len(n) <= d {
		n, sum = append(n, 0), append(sum, 0)
	}
	n[d]++
	sum[d] += float64(children)
	return n, sum
}

// pop closes the deepest open node.
func (w *walker) pop() error {
	idx := len(w.stack) - 1
	l := &w.stack[idx]
	if w.measure {
		right := len(w.stack) <= w.sharedRight && w.finishing
		if l.shared || right {
			w.segments = append(w.segments, segment{level: idx, kind: l.kind, depth: l.depth, children: l.children, left: l.shared, right: right})
		} else if l.children > 0 {
			if l.kind == tkHost {
				w.hostN, w.hostSum = record(w.hostN, w.hostSum, l.depth, l.children)
			} else if l.kind != tkWild {
				w.pathN, w.pathSum = record(w.pathN, w.pathSum, l.depth, l.children)
			}
		}
	} else if l.children > 0 && l.hasSum && !l.wildExcl && float64(l.children) > w.threshold(l) && w.rollable(idx) {
		if err := w.rollup(idx); err != nil {
			return err
		}
	}
	if idx == 0 {
		w.stack = w.stack[:0]
		return nil
	}
	p := &w.stack[idx-1]
	if l.hasSum {
		p.add(l.sum)
	}
	p.wildExcl = p.wildExcl || l.wildExcl
	w.stack = w.stack[:idx]
	if idx == 1 && !w.opts.AllowRoot {
		// Back at the root, which never rolls up: no retained exclusion
		// can be needed again.
		w.excl = w.excl[:0]
	}
	return nil
}

// rollable reports whether the node at idx may be replaced by a wildcard:
// never the root (unless AllowRoot), never a public suffix (com, co.uk,
// github.io, ...) and never a part of an IP address.
func (w *walker) rollable(idx int) bool {
	l := &w.stack[idx]
	switch {
	case l.root:
		return w.opts.AllowRoot
	case l.kind != tkHost:
		return true
	}
	labels := make([]string, 0, idx)
	for i := 1; i <= idx; i++ {
		labels = append(labels, string(w.stack[i].tok))
	}
	return hostRollable(labels)
}

// isPublicSuffix reports whether the domain of labels (in DNS order) is a
// public suffix (com, co.uk, github.io, or any unlisted TLD).
func isPublicSuffix(labels []string) bool {
	domain := strings.Join(labels, ".")
	ps, _ := publicsuffix.PublicSuffix(domain)
	return ps == domain
}

// wildKey appends the wildcard key of the node at idx to dst.
func (w *walker) wildKey(dst []byte, idx int) []byte {
	if idx == 0 {
		return append(dst, '*')
	}
	for i := 1; i <= idx; i++ {
		l := &w.stack[i]
		switch l.kind {
		case tkHost:
			if i > 1 {
				dst = append(dst, ',')
			}
			dst = append(dst, l.tok...)
		case tkRoot:
			dst = append(dst, ')')
		case tkSeg:
			dst = append(dst, '/')
			dst = append(dst, l.tok...)
		}
	}
	if w.stack[idx].kind == tkHost {
		return append(dst, ',', '*')
	}
	return append(dst, '/', '*')
}

func (w *walker) rollup(idx int) error {
	l := &w.stack[idx]
	if err := w.out.truncate(l.start, l.startLine); err != nil {
		return err
	}
	w.buf = w.wildKey(w.buf[:0], idx)
	kl := len(w.buf)
	w.buf = append(w.buf, ' ')
	w.buf = l.sum.Append(w.buf)
	w.buf = append(w.buf, '\n')
	ex := w.excl[l.exclStart:]
	i := 0
	for ; i < len(ex) && bytes.Compare(ex[i].line[:ex[i].keyLen], w.buf[:kl]) < 0; i++ {
		if err := w.out.write(ex[i].line); err != nil {
			return err
		}
	}
	if err := w.out.write(w.buf); err != nil {
		return err
	}
	for ; i < len(ex); i++ {
		if err := w.out.write(ex[i].line); err != nil {
			return err
		}
	}
	w.rollups++
	return nil
}

// finish closes every open node, the root last.
func (w *walker) finish() error {
	w.finishing = true
	for len(w.stack) > 0 {
		if err := w.pop(); err != nil {
			return err
		}
	}
	if w.measure {
		return nil
	}
	return w.out.flush()
}

// result returns the means measured by a measure walk.
func (w *walker) result() DepthMeans {
	var m DepthMeans
	f := func(n, sum []float64) []float64 {
		out := make([]float64, len(n))
		for i := range n {
			out[i] = 1
			if n[i] > 0 {
				out[i] = sum[i] / n[i]
			}
		}
		return out
	}
	m.Host = f(w.hostN, w.hostSum)
	m.Path = f(w.pathN, w.pathSum)
	return m
}

// ParseMeans parses "H0,H1,...;P0,P1,..." (see DepthMeans.String).
func ParseMeans(s string) (DepthMeans, error) {
	hs, ps, ok := strings.Cut(s, ";")
	if !ok {
		return DepthMeans{}, fmt.Errorf("mementomap: means %q: want host means ';' path means", s)
	}
	f := func(s string) ([]float64, error) {
		var out []float64
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		for _, p := range strings.Split(s, ",") {
			var x float64
			if _, err := fmt.Sscan(strings.TrimSpace(p), &x); err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, fmt.Errorf("mementomap: means %q: bad number %q", s, p)
			}
			out = append(out, x)
		}
		return out, nil
	}
	var m DepthMeans
	var err error
	if m.Host, err = f(hs); err != nil {
		return m, err
	}
	m.Path, err = f(ps)
	return m, err
}
