package mementomap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/wayside-archive/wayside/mementomap/ukvs"
)

// part is a byte range of the input compacted on its own. Its first record
// shares left tree levels (the root and the non-rollable ancestors common
// with the previous record) with the previous part, its last record right
// levels with the next part.
type part struct {
	from, to    int64
	left, right int
}

// hostRollable reports whether a host node (its labels, TLD first) may be
// replaced by a wildcard: not a public suffix, not part of an IP address.
func hostRollable(labels []string) bool {
	numeric := true
	rev := make([]string, len(labels))
	for i, lab := range labels {
		if j := bytes.IndexByte([]byte(lab), ':'); j >= 0 {
			lab = lab[:j]
		}
		for k := 0; k < len(lab); k++ {
			if lab[k] < '0' || lab[k] > '9' {
				numeric = false
			}
		}
		rev[len(labels)-1-i] = lab
	}
	if numeric {
		return false
	}
	return !isPublicSuffix(rev)
}

// findParts cuts [dataStart, size) into up to k parts of similar size. A
// cut goes between two adjacent records whose common ancestors can never
// roll up (the root, public suffixes): each part then compacts exactly as
// it would inside the whole input.
func findParts(f *os.File, name string, dataStart, size int64, k int) ([]part, error) {
	var parts []part
	prev, prevShared := dataStart, 0
	for j := 1; j < k; j++ {
		target := dataStart + (size-dataStart)*int64(j)/int64(k)
		if target <= prev {
			continue
		}
		cut, shared, ok, err := findCut(f, target, size)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if !ok {
			break
		}
		if cut <= prev {
			continue
		}
		parts = append(parts, part{from: prev, to: cut, left: prevShared, right: shared})
		prev, prevShared = cut, shared
	}
	return append(parts, part{from: prev, to: size, left: prevShared}), nil
}

// findCut scans forward from off for the first valid cut (see findParts)
// and returns its offset and the number of levels the records around it
// share (the root included).
func findCut(f *os.File, off, size int64) (int64, int, bool, error) {
	if off > 0 {
		// Move to the start of the line after the one holding off-1.
		buf := make([]byte, 64<<10)
		for p := off - 1; ; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), size-p)], p)
			if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
				off = p + int64(i) + 1
				break
			}
			p += int64(n)
			if p >= size || (err != nil && err != io.EOF) || n == 0 {
				return 0, 0, false, nil
			}
		}
	}
	return findCutAtLine(f, off, size)
}

func findCutAtLine(f *os.File, off, size int64) (int64, int, bool, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 1<<16)
	var prevKey []byte
	var prevToks, toks []token
	pos := off
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A huge line: never cut next to it.
			for errors.Is(err, bufio.ErrBufferFull) {
				pos += int64(len(line))
				line, err = br.ReadSlice('\n')
			}
			pos += int64(len(line))
			if err != nil {
				return 0, 0, false, nil
			}
			prevKey = nil
			continue
		}
		if len(line) == 0 {
			return 0, 0, false, nil
		}
		start := pos
		pos += int64(len(line))
		key := line
		if i := bytes.IndexAny(key, " \t\r\n"); i >= 0 {
			key = key[:i]
		}
		var terr error
		toks, terr = tokenize(key, toks)
		if terr != nil || len(key) == 0 || key[0] == '!' {
			prevKey = nil
			if err != nil {
				return 0, 0, false, nil
			}
			continue
		}
		if prevKey != nil && bytes.Compare(prevKey, key) < 0 {
			c := 0
			for c < len(toks) && c < len(prevToks) && toks[c].kind == prevToks[c].kind &&
				bytes.Equal(key[toks[c].s:toks[c].e], prevKey[prevToks[c].s:prevToks[c].e]) {
				c++
			}
			if c < len(toks) && c < len(prevToks) && sharedNeverRolls(key, toks[:c]) {
				return start, c + 1, true, nil
			}
		}
		if err != nil {
			return 0, 0, false, nil
		}
		prevKey = append(prevKey[:0], key...)
		prevToks = append(prevToks[:0], toks...)
	}
}

// sharedNeverRolls reports whether every node of a key's path prefix toks
// is a host node that never rolls up.
func sharedNeverRolls(key []byte, toks []token) bool {
	for _, t := range toks {
		if t.kind != tkHost {
			return false
		}
	}
	labels := make([]string, 0, len(toks))
	for _, t := range toks {
		if t.kind != tkHost {
			return false
		}
		labels = append(labels, string(key[t.s:t.e]))
		if hostRollable(labels) {
			return false
		}
	}
	return true
}

// lineBase counts the lines before offset off of f.
func lineBase(f *os.File, off int64) int64 {
	var n int64
	buf := make([]byte, 1<<20)
	for p := int64(0); p < off; {
		m, err := f.ReadAt(buf[:min(int64(len(buf)), off-p)], p)
		n += int64(bytes.Count(buf[:m], []byte{'\n'}))
		p += int64(m)
		if err != nil {
			break
		}
	}
	return n
}

// partSource reads one part; line numbers in its errors and skip reports
// are made absolute (counting the lines before the part) when needed.
func partSource(f *os.File, name string, p part, opts CompactOptions, report bool, mu *sync.Mutex) *source {
	var once sync.Once
	var base int64
	fix := func(e *ukvs.Error) {
		once.Do(func() { base = lineBase(f, p.from) })
		e.Line += base
	}
	o := opts
	if report && opts.OnSkip != nil {
		o.OnSkip = func(e *ukvs.Error) {
			fix(e)
			mu.Lock()
			defer mu.Unlock()
			opts.OnSkip(e)
		}
	} else {
		o.OnSkip = nil
	}
	src := newSource(io.NewSectionReader(f, p.from, p.to-p.from), name, o, report)
	src.fixLine = fix
	return src
}

// measureParallel measures the per-depth means over the parts in parallel
// and merges them; nodes spanning cuts are joined from their segments.
func measureParallel(ctx context.Context, f *os.File, name string, parts []part, opts CompactOptions) (DepthMeans, int64, int64, error) {
	walkers := make([]*walker, len(parts))
	ns := make([]int64, len(parts))
	skipped := make([]int64, len(parts))
	errs := make([]error, len(parts))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := partSource(f, name, p, opts, true, &mu)
			w := newWalker(opts, DepthMeans{}, nil)
			w.measure = true
			w.partition(p.left, p.right)
			ns[i], errs[i] = walk(ctx, src, w, opts, "measure")
			errs[i] = src.fix(errs[i])
			skipped[i] = src.skippedLines()
			walkers[i] = w
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return DepthMeans{}, 0, 0, err
	}
	total := walkers[0]
	var n, sk int64
	type acc struct {
		kind            tokKind
		depth, children int
	}
	open := map[int]*acc{}
	for i, w := range walkers {
		n += ns[i]
		sk += skipped[i]
		if i > 0 {
			for d := range w.hostN {
				total.hostN, total.hostSum = recordN(total.hostN, total.hostSum, d, w.hostN[d], w.hostSum[d])
			}
			for d := range w.pathN {
				total.pathN, total.pathSum = recordN(total.pathN, total.pathSum, d, w.pathN[d], w.pathSum[d])
			}
		}
		for _, sg := range w.segments {
			if sg.left {
				a := open[sg.level]
				if a == nil {
					return DepthMeans{}, 0, 0, fmt.Errorf("%s: partition %d: internal error: no open node at level %d", name, i, sg.level)
				}
				a.children += sg.children
				if sg.level+1 < parts[i].left {
					a.children-- // the child on the cut was counted on both sides
				}
				if !sg.right {
					delete(open, sg.level)
					if a.children > 0 && a.kind == tkHost {
						total.hostN, total.hostSum = recordN(total.hostN, total.hostSum, a.depth, 1, float64(a.children))
					} else if a.children > 0 && a.kind != tkWild {
						total.pathN, total.pathSum = recordN(total.pathN, total.pathSum, a.depth, 1, float64(a.children))
					}
				}
			} else if sg.right {
				open[sg.level] = &acc{kind: sg.kind, depth: sg.depth, children: sg.children}
			}
		}
	}
	if len(open) > 0 {
		return DepthMeans{}, 0, 0, fmt.Errorf("%s: internal error: %d nodes left open by the partitioned measure", name, len(open))
	}
	return total.result(), n, sk, nil
}

func recordN(n, sum []float64, d int, k, s float64) ([]float64, []float64) {
	for len(n) <= d {
		n, sum = append(n, 0), append(sum, 0)
	}
	n[d] += k
	sum[d] += s
	return n, sum
}

// compactParallel compacts the parts into temporary files in parallel and
// appends them to out in order.
func compactParallel(ctx context.Context, f *os.File, name string, parts []part, opts CompactOptions, means DepthMeans, dir string, out *os.File, report bool) (rollups, lines, in, skipped int64, err error) {
	files := make([]*os.File, len(parts))
	defer func() {
		for _, pf := range files {
			if pf != nil {
				pf.Close()
				os.Remove(pf.Name())
			}
		}
	}()
	for i := range parts {
		pf, err := os.CreateTemp(dir, ".mementomap-part-*")
		if err != nil {
			return 0, 0, 0, 0, err
		}
		files[i] = pf
	}
	type res struct{ rollups, lines, in, skipped int64 }
	rs := make([]res, len(parts))
	errs := make([]error, len(parts))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := partSource(f, name, p, opts, report, &mu)
			s := newFileSink(files[i])
			rs[i].rollups, rs[i].in, errs[i] = compactSource(ctx, src, opts, means, s)
			errs[i] = src.fix(errs[i])
			_, rs[i].lines = s.pos()
			rs[i].skipped = src.skippedLines()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, 0, err
	}
	for i, pf := range files {
		if _, err := pf.Seek(0, io.SeekStart); err != nil {
			return 0, 0, 0, 0, err
		}
		if _, err := io.Copy(out, pf); err != nil {
			return 0, 0, 0, 0, err
		}
		rollups += rs[i].rollups
		lines += rs[i].lines
		in += rs[i].in
		skipped += rs[i].skipped
	}
	return rollups, lines, in, skipped, nil
}
