package mementomap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
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
	// Canonical says the input was written by this package (keys canonical
	// and sorted), skipping the pass that checks whether it must first be
	// normalised (another tool's spelling or order; see NormalizeKey).
	Canonical bool
}

// CompactStats describes a compaction.
type CompactStats struct {
	InLines, OutLines int64
	InBytes, OutBytes int64
	Rollups           int64
	Skipped           int64
	Partitions        int
	Means             DepthMeans
	// Normalized is set when the input was not in canonical sorted form
	// and was normalised before compacting.
	Normalized NormalizeStats
}

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
	fixLine func(*ukvs.Error) // makes line numbers absolute (parts)
}

// fix makes the line number of an error of this source absolute.
func (s *source) fix(err error) error {
	var ue *ukvs.Error
	if s.fixLine != nil && errors.As(err, &ue) && ue.File == s.name {
		s.fixLine(ue)
	}
	return err
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

// firstPass reads the whole input once: it validates it (order, syntax)
// and measures the per-depth means.
func firstPass(ctx context.Context, f *os.File, name string, opts CompactOptions) (DepthMeans, int64, int64, error) {
	src := newSource(f, name, opts, true)
	w := newWalker(opts, DepthMeans{}, nil)
	w.measure = true
	n, err := walk(ctx, src, w, opts, "measure")
	if err != nil {
		return DepthMeans{}, 0, 0, err
	}
	return w.result(), n, src.skippedLines(), nil
}

// walk feeds every record of src to w and finishes it.
func walk(ctx context.Context, src *source, w *walker, opts CompactOptions, pass string) (int64, error) {
	var n int64
	for {
		rec, toks, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		n++
		if n&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			if opts.Progress != nil && n&(1<<20-1) == 0 {
				opts.Progress(pass, n)
			}
		}
		if err := w.addTokens(rec, toks); err != nil {
			return n, &ukvs.Error{File: src.name, Line: src.r.Line(), Err: err}
		}
	}
	return n, w.finish()
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
	w := newWalker(opts, means, out)
	n, err := walk(ctx, src, w, opts, "compact")
	return w.rollups, n, err
}

// CompactFile compacts the sorted map at inPath into outPath (replaced
// atomically: written to a temporary file, synced, renamed). Unless the
// means are given, it reads the input twice: once to validate it and
// measure the per-depth means, once to compact. With Workers > 1 both
// passes run on partitions of the input cut where no node can roll up
// (between registrable domains), and the output is the same.
func CompactFile(ctx context.Context, inPath, outPath string, opts CompactOptions) (CompactStats, error) {
	var st CompactStats
	if !(opts.Wh >= 0) || !(opts.Wp >= 0) || math.IsInf(opts.Wh, 0) || math.IsInf(opts.Wp, 0) {
		return st, fmt.Errorf("mementomap: compact: weights must be finite numbers >= 0, got wh=%v wp=%v", opts.Wh, opts.Wp)
	}
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
	dir := opts.TempDir
	if dir == "" {
		dir = filepath.Dir(outPath)
	}
	src := newSource(f, name, opts, true)
	hs, err := src.r.Headers()
	if err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	dataStart := src.r.DataOffset()
	if !opts.Canonical {
		ok, err := canonicalFile(f, dataStart, fi.Size())
		if err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
		if !ok {
			// Another tool's spelling or order: compact the canonical form.
			nf, nst, err := normalizeFile(io.NewSectionReader(f, 0, fi.Size()), name,
				normalizeOptions{tempDir: dir, skipBad: opts.SkipBad, onSkip: opts.OnSkip})
			if err != nil {
				return st, fmt.Errorf("mementomap: compact: %w", err)
			}
			defer nf.Close()
			st.Normalized = nst
			f = nf
			if fi, err = f.Stat(); err != nil {
				return st, fmt.Errorf("mementomap: compact: %w", err)
			}
			src = newSource(io.NewSectionReader(f, 0, fi.Size()), name, opts, true)
			if hs, err = src.r.Headers(); err != nil {
				return st, fmt.Errorf("mementomap: compact: %w", err)
			}
			dataStart = src.r.DataOffset()
		}
	}
	firstData := max(src.r.Line()-1, 0) // lines before the first data line
	var parts []part
	if opts.Workers > 1 && !opts.AllowRoot {
		if parts, err = findParts(f, name, dataStart, fi.Size(), opts.Workers); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
	}
	st.Partitions = max(1, len(parts))
	var means DepthMeans
	switch {
	case opts.Means != nil:
		means = *opts.Means
	case len(parts) > 1:
		if means, st.InLines, st.Skipped, err = measureParallel(ctx, f, name, parts, opts); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
	default:
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
		if means, st.InLines, st.Skipped, err = firstPass(ctx, f, name, opts); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
		src = sectionSource(f, name, dataStart, fi.Size(), firstData, opts)
	}
	measured := opts.Means == nil
	st.Means = means
	meta, err := ukvs.MetaHeader(map[string]any{"compaction": map[string]any{"wh": opts.Wh, "wp": opts.Wp, "means": means.String()}})
	if err != nil {
		return st, err
	}
	if !hasHeader(hs, meta) {
		hs = append(hs, meta)
	}

	out, err := os.CreateTemp(filepath.Dir(outPath), "."+filepath.Base(outPath)+".tmp-*")
	if err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	tmpName := out.Name()
	ok := false
	defer func() {
		if !ok {
			out.Close()
			os.Remove(tmpName)
		}
	}()
	if err := out.Chmod(0o644); err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	var hb []byte
	for _, h := range hs {
		hb = ukvs.AppendHeader(hb, h)
	}
	if _, err := out.Write(hb); err != nil {
		return st, fmt.Errorf("mementomap: compact: %w", err)
	}
	if len(parts) <= 1 {
		s := newFileSink(out)
		s.fileOff = int64(len(hb))
		var n int64
		if st.Rollups, n, err = compactSource(ctx, src, opts, means, s); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
		if !measured || st.InLines == 0 {
			st.InLines, st.Skipped = n, src.skippedLines()
		}
		_, st.OutLines = s.pos()
	} else {
		var n, skipped int64
		if st.Rollups, st.OutLines, n, skipped, err = compactParallel(ctx, f, name, parts, opts, means, dir, out, !measured); err != nil {
			return st, fmt.Errorf("mementomap: compact: %w", err)
		}
		if !measured {
			st.InLines, st.Skipped = n, skipped
		}
	}
	st.Skipped += st.Normalized.Skipped
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
		if err := fsutil.SyncDir(filepath.Dir(outPath)); err != nil {
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

func syncClose(f *os.File) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
// atomically (mode 0644): see fsutil.WriteFileAtomic. On error path is left
// as it was.
func WriteFileAtomic(path string, write func(w io.Writer) error) error {
	return fsutil.WriteFileAtomic(path, 0o644, write)
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
