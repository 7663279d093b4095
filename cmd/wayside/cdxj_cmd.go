package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

const cdxjUsage = `[flags] FILE...

Index WARC files (gzip or not, ".open" files too) into one sorted CDXJ index,
as pywb's cdx-indexer writes it, or merge already-sorted CDXJ/CDX shards
with --merge (shards may be gzip-compressed). Output is in byte order (LC_ALL=C sort). Unreadable records are
skipped and listed at the end; the exit status is then 1. A missing, empty or
unreadable input file fails the command before anything is written.`

func runCDXJ(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "cdxj", cdxjUsage)
	out := fs.String("o", "", "write the index to `FILE` (atomically, via a temporary file) instead of stdout")
	mergeMode := fs.Bool("merge", false, "the inputs are sorted index shards: merge them")
	jobs := fs.Int("j", runtime.NumCPU(), "index `N` files in parallel")
	all := fs.Bool("all", false, "index every record with a target URI (request, warcinfo and warc-fields metadata too)")
	unique := fs.Bool("unique", false, "drop duplicate lines")
	memMB := fs.Int("mem-mb", 4, "`MB` of index lines held in memory (outside the collected heap) before a sorted run is spilled to a temporary file; the runs are merged at the end")
	tmpDir := fs.String("tmpdir", "", "`DIR` for sort runs (default: the system temporary directory)")
	quiet := fs.quietFlag()
	verify := fs.Bool("verify", false, "check WARC-Block-Digest of every record (damaged records fail the run) and count payload digests that disagree with the de-chunked payload")
	overwrite := overwriteFlag(fs)
	tolerate := tolerateFlag(fs)
	puid := fs.Bool("puid", false, `add each capture's format as a "puid" field (characterizes the files first, as wayside characterize)`)
	var cf charFlags
	cf.register(fs)
	var in inputFlags
	in.register(fs)
	fs.atLeast("j", 1)
	fs.atLeast("mem-mb", 1)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 && !in.given() {
		return fs.usagef("cdxj: no input files")
	}
	files, err := in.expand(ctx, e, "cdxj", fs.Args())
	defer in.close()
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fs.usagef("cdxj: no input files")
	}
	if err := checkInputs("cdxj", files); err != nil {
		return err
	}
	if err := checkOutput("cdxj", files, *overwrite, outFile{"-o", *out}); err != nil {
		return err
	}
	files, doneWACZ, err := openWACZInputs(ctx, "cdxj", files, false)
	if err != nil {
		return err
	}
	defer doneWACZ()
	if *puid && *mergeMode {
		return usagef("cdxj: --puid indexes WARC files, not shards (--merge)")
	}
	defer indexGC(*jobs)()
	run := func(w io.Writer) error {
		if *mergeMode {
			return mergeShards(w, files, *unique)
		}
		cfg := indexConfig{
			jobs: *jobs, all: *all, unique: *unique, quiet: *quiet, verify: *verify,
			sort: cdxj.SortOptions{MaxMemory: int64(*memMB) << 20, TempDir: *tmpDir, Unique: *unique},
		}
		if *puid {
			decorate, err := puidDecorator(ctx, e, &cf, files, *jobs, *quiet)
			if err != nil {
				return err
			}
			cfg.decorate = decorate
		}
		return indexWARCs(ctx, e, w, files, cfg)
	}
	damageOnly := func(err error) error {
		var problems problemsError
		if errors.As(err, &problems) {
			return tolerated(e, *tolerate, err)
		}
		return err
	}
	if *out == "" || *out == "-" {
		return damageOnly(run(e.stdout))
	}
	// -o FILE is replaced atomically, and also when the run only reports
	// problems (damaged records counted, the rest indexed).
	var runErr, fatal error
	err = fsutil.WriteFileAtomic(*out, 0o644, func(w io.Writer) error {
		runErr = run(w)
		var problems problemsError
		switch {
		case runErr != nil && !errors.As(runErr, &problems):
			fatal = runErr
		case runErr != nil && problems.lines == 0:
			// Nothing could be indexed: no output file.
			fatal = problems
		}
		return fatal
	})
	switch {
	case fatal != nil:
		return fatal
	case err != nil:
		return fmt.Errorf("cdxj: %w", err)
	}
	return damageOnly(runErr)
}

func mergeShards(w io.Writer, files []string, unique bool) error {
	var inputs []cdxj.MergeInput
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("cdxj: %w", err)
		}
		defer f.Close()
		r, err := maybeGunzip(f)
		if err != nil {
			return fmt.Errorf("cdxj: %s: %w", name, err)
		}
		inputs = append(inputs, cdxj.MergeInput{Name: name, R: r})
	}
	return cdxj.Merge(w, inputs, cdxj.MergeOptions{Unique: unique})
}

// maybeGunzip returns a reader of f's content, decompressed when f is
// gzip-compressed (shards are often kept as .cdxj.gz).
func maybeGunzip(f *os.File) (io.Reader, error) {
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// indexGC tunes the garbage collector for indexing, unless GOGC or
// GOMEMLIMIT say otherwise, and returns what restores it. Reading leaves a
// few KB of garbage per record (its headers, its index line) beside a small
// live heap, so the collector runs often: about 3% of the CPU of a run at
// the default GOGC=100 (scripts/bench-cdxj.sh). At 400 it runs a quarter as
// often. The live heap stays small and does not grow with the input: the
// sort holds its lines outside the collected heap (cdxj.Sorter), so the
// collector's goal does not either (16 MB for `cdxj -j 1` on 0.4 and 1.6 GB
// of WARC). The memory limit only guards against a live heap larger than
// expected (per job a few batches of formatted lines in flight).
func indexGC(jobs int) func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	pct := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(int64(64+16*min(jobs, 64)) << 20)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}

type indexConfig struct {
	jobs                       int
	all, unique, quiet, verify bool
	sort                       cdxj.SortOptions
	// decorate, when set, adds fields to each line before it is written.
	decorate func(*cdxj.Line)
}

// problemsError reports records that were skipped; the index of everything
// else (lines) has been written.
type problemsError struct {
	n, files int
	lines    int64
}

func (p problemsError) Error() string {
	if p.lines == 0 {
		return fmt.Sprintf("cdxj: no record could be indexed: %d unreadable records or files (listed above)", p.n)
	}
	return fmt.Sprintf("cdxj: %d unreadable records or files skipped (listed above); the index holds everything else", p.n)
}

func indexWARCs(ctx context.Context, e *env, w io.Writer, files []string, cfg indexConfig) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sorter := cdxj.NewSorter(cfg.sort)
	defer sorter.Close()

	// A batch holds formatted lines end to end (ends[i] is where line i
	// ends): one buffer per batch, not one per line.
	type batch struct {
		buf  []byte
		ends []int
	}
	batches := make(chan batch, 4*cfg.jobs)
	work := make(chan int)
	problems := make([][]error, len(files))
	var lines, filesDone, rawBytes, blocks, mism, chunked atomic.Int64

	var wg sync.WaitGroup
	for range min(cfg.jobs, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				var cur batch
				var emitted int64 // stored bytes of indexed records, for live progress
				st, err := cdxj.IndexFile(ctx, files[i], cdxj.IndexOptions{All: cfg.all, Verify: cfg.verify}, func(l *cdxj.Line) error {
					if cfg.decorate != nil {
						cfg.decorate(l)
					}
					cur.buf = l.Format(cur.buf)
					cur.ends = append(cur.ends, len(cur.buf))
					if len(cur.ends) == 4096 {
						select {
						case batches <- cur:
						case <-ctx.Done():
							return ctx.Err()
						}
						cur = batch{buf: make([]byte, 0, cap(cur.buf)), ends: make([]int, 0, 4096)}
					}
					lines.Add(1)
					rawBytes.Add(l.Length)
					emitted += l.Length
					return nil
				})
				if len(cur.ends) > 0 && err == nil {
					select {
					case batches <- cur:
					case <-ctx.Done():
						err = ctx.Err()
					}
				}
				problems[i] = st.Problems
				if err != nil && ctx.Err() == nil {
					problems[i] = append(problems[i], err)
				}
				rawBytes.Add(st.RawBytes - emitted)
				blocks.Add(int64(st.BlockDigestsVerified))
				mism.Add(int64(st.PayloadDigestMismatches))
				chunked.Add(int64(st.ChunkedDigestMismatches))
				filesDone.Add(1)
			}
		}()
	}
	go func() {
		defer close(work)
		for i := range files {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(batches)
	}()

	start := time.Now()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var sortErr error
	for running := true; running; {
		select {
		case b, ok := <-batches:
			if !ok {
				running = false
				break
			}
			start := 0
			for _, end := range b.ends {
				if sortErr == nil {
					sortErr = sorter.Add(b.buf[start:end])
				}
				start = end
			}
			if sortErr != nil {
				cancel()
			}
		case <-tick.C:
			if !cfg.quiet {
				fmt.Fprintf(e.stderr, "wayside cdxj: %d/%d files, %d lines, %.0f MB read, %s\n",
					filesDone.Load(), len(files), lines.Load(), float64(rawBytes.Load())/1e6, time.Since(start).Round(time.Second))
			}
		}
	}
	if sortErr != nil {
		return sortErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := sorter.WriteTo(w); err != nil {
		return err
	}
	if cfg.verify {
		fmt.Fprintf(e.stderr, "wayside cdxj: verify: %d block digests checked; %d payload digest headers disagree with the de-chunked payload (%d of them on chunked responses: digested over the transfer encoding)\n",
			blocks.Load(), mism.Load(), chunked.Load())
	}
	n, nfiles := 0, 0
	for _, ps := range problems {
		if len(ps) > 0 {
			nfiles++
		}
		for _, p := range ps {
			n++
			if n <= 200 {
				fmt.Fprintf(e.stderr, "wayside cdxj: %v\n", p)
			}
		}
	}
	if n > 200 {
		fmt.Fprintf(e.stderr, "wayside cdxj: … and %d more\n", n-200)
	}
	if n > 0 {
		return problemsError{n: n, files: nfiles, lines: lines.Load()}
	}
	return nil
}
