package mementomap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/wayside-archive/wayside/profiler/ukvs"
)

// CompactOptions tunes a compaction.
type CompactOptions struct {
	// Wh and Wp weight the per-depth mean child counts into thresholds for
	// host and path nodes: a node with more children than W × mean(depth)
	// is replaced by a wildcard. Smaller weights compact more; 0 rolls up
	// every node that has a child.
	Wh, Wp float64
	// Means are the per-depth mean child counts; nil measures them from the
	// input in a first pass.
	Means *DepthMeans
	// AllowRoot allows rolling everything up into "*" (never by default).
	// It disables partitioning.
	AllowRoot bool
	// Workers compact TLD partitions in parallel (default 1). The output is
	// the same for any number of workers.
	Workers int
	// SkipBad skips malformed and out-of-order lines (counted in
	// CompactStats.Skipped, each reported to OnSkip) instead of failing.
	SkipBad bool
	OnSkip  func(*ukvs.Error)
	// Progress, when set, is called every 1<<20 input lines of each pass.
	Progress func(pass string, lines int64)
	// TempDir holds temporary files (default: the output's directory).
	TempDir string
	// Name names the input in errors (default: its path).
	Name string
	// NoSync skips fsyncing the output and its directory (scratch outputs;
	// Compact sets it for its temporary file).
	NoSync bool
}

// CompactStats describes a compaction.
type CompactStats struct {
	InLines, OutLines int64
	InBytes, OutBytes int64
	Rollups           int64
	Skipped           int64
	Partitions        int
	Means             DepthMeans
}

type boundary struct{ off, line int64 }

// source reads records for compaction: each key is tokenized once, checked
// to be a SURT key and strictly greater than the previous one; bad lines
// fail or, with SkipBad, are reported and skipped.
type source struct {
	r       *ukvs.Reader
	name    string
	opts    CompactOptions
	report  bool
	prev    []byte
	started bool
	toks    []token
	skipped int64
}

func newSource(r io.Reader, name string, opts CompactOptions, report bool) *source {
	s := &source{name: name, opts: opts, report: report}
	ro := ukvs.ReaderOptions{SkipBad: opts.SkipBad, AllowUnsorted: true}
	if report {
		ro.OnSkip = opts.OnSkip
	}
	s.r = ukvs.NewReader(r, name, ro)
	return s
}

func (s *source) next() (ukvs.Record, []token, error) {
	for {
		rec, err := s.r.Next()
		if err != nil {
			return rec, nil, err
		}
		var bad error
		if s.toks, err = tokenize(rec.Key, s.toks); err != nil {
			bad = err
		} else if s.started && bytes.Compare(rec.Key, s.prev) <= 0 {
			bad = fmt.Errorf("%w: %q after %q", ukvs.ErrUnsorted, rec.Key, s.prev)
		}
		if bad == nil {
			s.prev = append(s.prev[:0], rec.Key...)
			s.started = true
			return rec, s.toks, nil
		}
		e := &ukvs.Error{File: s.name, Line: s.r.Line(), Err: bad}
		if !s.opts.SkipBad {
			return rec, nil, e
		}
		s.skipped++
		if s.report && s.opts.OnSkip != nil {
			s.opts.OnSkip(e)
		}
	}
}

func (s *source) skippedLines() int64 { return s.skipped + s.r.Skipped() }

// firstPass reads the whole input once: it validates it (order, syntax),
// measures the per-depth means and finds the TLD partition boundaries.
func firstPass(ctx context.Context, f *os.File, name string, opts CompactOptions) ([]ukvs.Header, DepthMeans, []boundary, int64, int64, error) {
	src := newSource(f, name, opts, true)
	hs, err := src.r.Headers()
	if err != nil {
		return nil, DepthMeans{}, nil, 0, 0, err
	}
	w := newWalker(opts, DepthMeans{}, nil)
	w.measure = true
	var bounds []boundary
	var prevTLD []byte
	var n int64
	for {
		rec, toks, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, DepthMeans{}, nil, 0, 0, err
		}
		n++
		if n&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, DepthMeans{}, nil, 0, 0, err
			}
			if opts.Progress != nil && n&(1<<20-1) == 0 {
				opts.Progress("measure", n)
			}
		}
		tld := rec.Key[toks[0].s:toks[0].e]
		if toks[0].kind == tkWild {
			tld = rec.Key[:0]
		}
		if prevTLD == nil || !bytes.Equal(tld, prevTLD) {
			bounds = append(bounds, boundary{off: src.r.Offset(), line: src.r.Line() - 1})
			prevTLD = append(prevTLD[:0], tld...)
		}
		if err := w.addTokens(rec, toks); err != nil {
			return nil, DepthMeans{}, nil, 0, 0, &ukvs.Error{File: name, Line: src.r.Line(), Err: err}
		}
	}
	if err := w.finish(); err != nil {
		return nil, DepthMeans{}, nil, 0, 0, err
	}
	return hs, w.result(), bounds, n, src.skippedLines(), nil
}


// sectionSource reads bytes [from, to) of f, whose first line is number
// line+1; bad lines were reported by the first pass.
func sectionSource(f *os.File, name string, from, to, line int64, opts CompactOptions) *source {
	src := newSource(io.NewSectionReader(f, from, to-from), name, opts, false)
	src.r.SetLine(line)
	return src
}

// compactSource compacts the records of src into out.
func compactSource(ctx context.Context, src *source, opts CompactOptions, means DepthMeans, out sink) (int64, int64, error) {
	name := src.name
	w := newWalker(opts, means, out)
	var n int64
	for {
		rec, toks, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
		n++
		if n&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
			if opts.Progress != nil && n&(1<<20-1) == 0 {
				opts.Progress("compact", n)
			}
		}
		if err := w.addTokens(rec, toks); err != nil {
			return 0, 0, &ukvs.Error{File: name, Line: src.r.Line(), Err: err}
		}
	}
	if err := w.finish(); err != nil {
		return 0, 0, err
	}
	return w.rollups, n, nil
}

// CompactFile compacts the sorted map at inPath into outPath (replaced
// atomically: written to a temporary file, synced, renamed). It reads the
// input twice: once to validate it, measure the per-depth means (unless
// given) and find TLD partitions, once to compact.
func CompactFile(ctx context.Context, inPath, outPath string, opts CompactOptions) (CompactStats, error) {
	var st CompactStats
	f, err := os.Open(inPath)
	if err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	st.InBytes = fi.Size()
	name := opts.Name
	if name == "" {
		name = inPath
	}
	// With the means given and one worker, one pass does it all.
	onePass := opts.Means != nil && opts.Workers <= 1
	var hs []ukvs.Header
	var means DepthMeans
	var bounds []boundary
	var src *source
	if onePass {
		means = *opts.Means
		src = newSource(f, name, opts, true)
		if hs, err = src.r.Headers(); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
	} else {
		var measured DepthMeans
		hs, measured, bounds, st.InLines, st.Skipped, err = firstPass(ctx, f, name, opts)
		if err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
		means = measured
		if opts.Means != nil {
			means = *opts.Means
		}
	}
	st.Means = means
	dataStart := fi.Size()
	if len(bounds) > 0 {
		dataStart = bounds[0].off
	}
	meta, err := ukvs.MetaHeader(map[string]any{"compaction": map[string]any{"wh": opts.Wh, "wp": opts.Wp, "means": means.String()}})
	if err != nil {
		return st, err
	}
	if !hasHeader(hs, meta) {
		hs = append(hs, meta)
	}

	dir := opts.TempDir
	if dir == "" {
		dir = filepath.Dir(outPath)
	}
	out, err := os.CreateTemp(filepath.Dir(outPath), "."+filepath.Base(outPath)+".tmp-*")
	if err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	tmpName := out.Name()
	ok := false
	if err := out.Chmod(0o644); err != nil {
		out.Close()
		os.Remove(tmpName)
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	defer func() {
		if !ok {
			out.Close()
			os.Remove(tmpName)
		}
	}()
	var hb []byte
	for _, h := range hs {
		hb = ukvs.AppendHeader(hb, h)
	}
	if _, err := out.Write(hb); err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}

	parts := partition(bounds, fi.Size(), opts)
	st.Partitions = max(1, len(parts))
	if len(parts) <= 1 {
		s := newFileSink(out)
		s.fileOff = int64(len(hb))
		if src == nil {
			src = sectionSource(f, name, dataStart, fi.Size(), line0(bounds), opts)
		}
		var n int64
		if st.Rollups, n, err = compactSource(ctx, src, opts, means, s); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
		if onePass {
			st.InLines, st.Skipped = n, src.skippedLines()
		}
		_, st.OutLines = s.pos()
	} else {
		if st.Rollups, st.OutLines, err = compactParallel(ctx, f, name, parts, opts, means, dir, out); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
	}
	if opts.NoSync {
		err = out.Close()
	} else {
		err = syncClose(out)
	}
	if err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	if err := os.Rename(tmpName, outPath); err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	ok = true
	if !opts.NoSync {
		if err := syncDir(filepath.Dir(outPath)); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
	}
	if ofi, err := os.Stat(outPath); err == nil {
		st.OutBytes = ofi.Size()
	}
	return st, nil
}

func hasHeader(hs []ukvs.Header, h ukvs.Header) bool {
	for _, x := range hs {
		if x.Name == h.Name && bytes.Equal(x.Value, h.Value) {
			return true
		}
	}
	return false
}

func line0(b []boundary) int64 {
	if len(b) == 0 {
		return 0
	}
	return b[0].line
}

type part struct{ from, to, line int64 }

// partition groups the TLD boundaries into at most opts.Workers byte ranges
// of similar size.
func partition(bounds []boundary, size int64, opts CompactOptions) []part {
	if len(bounds) == 0 {
		return nil
	}
	k := opts.Workers
	if k <= 1 || opts.AllowRoot {
		return []part{{bounds[0].off, size, bounds[0].line}}
	}
	total := size - bounds[0].off
	var parts []part
	cur := part{from: bounds[0].off, line: bounds[0].line}
	for i := 1; i < len(bounds); i++ {
		if bounds[i].off-cur.from >= total/int64(k) && len(parts) < k-1 {
			cur.to = bounds[i].off
			parts = append(parts, cur)
			cur = part{from: bounds[i].off, line: bounds[i].line}
		}
	}
	cur.to = size
	return append(parts, cur)
}

func compactParallel(ctx context.Context, f *os.File, name string, parts []part, opts CompactOptions, means DepthMeans, dir string, out *os.File) (int64, int64, error) {
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
			return 0, 0, err
		}
		files[i] = pf
	}
	rollups := make([]int64, len(parts))
	lines := make([]int64, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newFileSink(files[i])
			rollups[i], _, errs[i] = compactSource(ctx, sectionSource(f, name, p.from, p.to, p.line, opts), opts, means, s)
			_, lines[i] = s.pos()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	var r, l int64
	for i, pf := range files {
		if _, err := pf.Seek(0, io.SeekStart); err != nil {
			return 0, 0, err
		}
		if _, err := io.Copy(out, pf); err != nil {
			return 0, 0, err
		}
		r += rollups[i]
		l += lines[i]
	}
	return r, l, nil
}

func syncClose(f *os.File) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Compact compacts the sorted map read from r into w. The input is spooled
// to a temporary file (in opts.TempDir) so it can be read twice, keeping
// memory independent of its size.
func Compact(ctx context.Context, r io.Reader, w io.Writer, opts CompactOptions) (CompactStats, error) {
	dir, err := os.MkdirTemp(opts.TempDir, "mementomap-compact-*")
	if err != nil {
		return CompactStats{}, fmt.Errorf("mementomap: compact: %w", err)
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in.ukvs")
	f, err := os.Create(in)
	if err != nil {
		return CompactStats{}, fmt.Errorf("mementomap: compact: %w", err)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return CompactStats{}, fmt.Errorf("mementomap: compact: spool input: %w", err)
	}
	if err := f.Close(); err != nil {
		return CompactStats{}, fmt.Errorf("mementomap: compact: %w", err)
	}
	opts.TempDir = dir
	if opts.Name == "" {
		opts.Name = "input"
	}
	opts.NoSync = true
	out := filepath.Join(dir, "out.ukvs")
	st, err := CompactFile(ctx, in, out, opts)
	if err != nil {
		return st, err
	}
	of, err := os.Open(out)
	if err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	defer of.Close()
	if _, err := io.Copy(w, of); err != nil {
		return st, fmt.Errorf("mementomap: compact: write output: %w", err)
	}
	return st, nil
}

// WriteFileAtomic writes a file through write and replaces path with it
// atomically: a temporary file in the same directory is written, synced
// and renamed over path, then the directory is synced. On error path is
// left as it was.
func WriteFileAtomic(path string, write func(w io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("mementomap: write %s: %w", path, err)
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 1<<20)
	err = f.Chmod(0o644)
	if err == nil {
		err = write(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = syncClose(f)
	} else {
		f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mementomap: write %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("mementomap: write %s: %w", path, err)
	}
	return nil
}

// RemoveStaleTemps removes temporary files a crashed writer of path may
// have left beside it.
func RemoveStaleTemps(path string) error {
	var ms []string
	for _, pat := range []string{"." + filepath.Base(path) + ".tmp-*", ".." + filepath.Base(path) + ".tmp-*"} {
		m, err := filepath.Glob(filepath.Join(filepath.Dir(path), pat))
		if err != nil {
			return err
		}
		ms = append(ms, m...)
	}
	for _, m := range ms {
		if err := os.Remove(m); err != nil {
			return fmt.Errorf("mementomap: remove stale %s: %w", m, err)
		}
	}
	return nil
}
