package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/zipfgen"
	"github.com/wayside-archive/wayside/mementomap"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
	"github.com/wayside-archive/wayside/warcio"
)

const mementomapUsage = `<generate|compact|lookup|merge|eval|stats|synth> [flags] [args]

A MementoMap summarises what a web archive holds: one line per URI key
(a SURT without its query, e.g. "com,example)/a/b") or per wildcard
("com,example)/a/*", "com,example,*"), with the number of mementos and of
distinct original URIs ("400/100"). "0" marks an exclusion. The format is
UKVS (sorted text), so maps can be searched, split, merged and diffed.
Maps and keys written by other tools (the reference implementation's
"com,example)" host roots, upper case, www, Heritrix's SURT form, unsorted
lines) are normalised on read: every spelling of a key answers alike.

  generate [-o OUT] [--status 200] [--mime text/html] FILE...
      build the full map (one line per key) from WARC, CDXJ, CDX files or
      plain URI lists (one URI per line); "-" reads stdin.
  compact [--w 1 | --wh 1 --wp 1] [--workers N] IN OUT
      replace crowded sub-trees by wildcards (smaller weights: smaller map,
      more false positives, never a false negative).
  lookup MAP [URI|KEY...]
      answer whether the archive may hold each URI; without arguments,
      reads one URI per line from stdin (batch mode).
  merge -o OUT MAP MAP...
      union of maps; counts of shared keys are summed.
  eval --map MAP --full FULL (--set SET | --log LOG)
      relative cost (per line and per unique URI-R), accuracy, precision
      and recall of MAP on a labelled set ("1 URI" present / "0 URI"
      absent) or a real lookup log (URIs, or an access log of Memento
      requests) labelled against FULL.
  eval --grid --full FULL (--set SET | --log LOG) [--table T.tsv] [--plot P.svg]
      compact FULL with every Wh x Wp pair of 4,2,1,0.5,0.25,0 (each from
      the next larger map) and tabulate/plot cost vs accuracy (the paper's
      Figure 9); --sweep 8,1,0.1 does the same with Wh = Wp.
  stats [--json] [--svg DEPTHS.svg] INPUT...
      the holdings tables of the MementoMap paper (mementos per URI-R,
      Gini, Pareto break point, per-year and per-depth tables) of WARC,
      CDXJ, CDX files or a map.
  synth -n 1000000 -o FULL [--set SET --absent 20000]
      write a deterministic Zipf-skewed synthetic full map (benchmarks).

Run 'wayside mementomap <command> -h' for a command's flags.`

func runMementoMap(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "mementomap", mementomapUsage, args, []subcommand{
		{"generate", runMMGenerate}, {"compact", runMMCompact}, {"lookup", runMMLookup}, {"merge", runMMMerge},
		{"eval", runMMEval}, {"stats", runMMStats}, {"synth", runMMSynth}})
}

// writeOutput writes through write to path atomically, or to stdout for
// "" and "-".
func writeOutput(e *env, path string, write func(w io.Writer) error) error {
	if path == "" || path == "-" {
		bw := bufio.NewWriterSize(e.stdout, 1<<16)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return mementomap.WriteFileAtomic(path, write)
}

func parseList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, p := range parseList(s) {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 {
			return nil, usagef("mementomap: bad weight %q", p)
		}
		out = append(out, f)
	}
	return out, nil
}

// captureInput holds the flags that choose and filter captures (generate
// and stats).
type captureInput struct {
	format, status, mime, tmp *string
	skipBad                   *bool
	memMB                     *int
	files                     []string // inputs after openWACZInputs (nil: the arguments)
}

func captureFlags(fs *flagSet) *captureInput {
	c := &captureInput{
		format:  fs.String("format", "auto", "input format: auto, warc, cdxj, cdx, uris (or map for stats)"),
		status:  fs.String("status", "", "keep only these HTTP statuses, e.g. 200 or 200,203 (the paper used 200)"),
		mime:    fs.String("mime", "", "keep only media types starting with these, e.g. text/html (the paper's filter)"),
		skipBad: fs.Bool("skip-bad", false, "skip malformed lines/records and invalid URIs (each reported) instead of stopping"),
		memMB:   fs.Int("mem", 256, "MiB of sort lines to hold in memory before spilling sorted runs to disk"),
		tmp:     fs.String("tmp", "", "directory for spill files (default: system temp)"),
	}
	fs.atLeast("mem", 1)
	fs.oneOf("format", "auto", string(mementomap.FormatWARC), string(mementomap.FormatCDXJ), string(mementomap.FormatCDX),
		string(mementomap.FormatURIList), string(mementomap.FormatMap))
	return c
}

// options returns the generator options the flags give.
func (c *captureInput) options(e *env, fs *flagSet, cmd string) (mementomap.GenerateOptions, error) {
	opts := mementomap.GenerateOptions{MIMEs: parseList(*c.mime), SkipBad: *c.skipBad, MemLimit: int64(*c.memMB) << 20, TempDir: *c.tmp}
	for _, s := range parseList(*c.status) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return opts, fs.usagef("mementomap %s: bad status %q", cmd, s)
		}
		opts.Statuses = append(opts.Statuses, n)
	}
	opts.OnSkip = func(err error) { fmt.Fprintln(e.stderr, "skipped:", err) }
	return opts, nil
}

// formatOf returns the format of an input: --format, or guessed from its name.
func (c *captureInput) formatOf(p string) mementomap.Format {
	if *c.format != "auto" {
		return mementomap.Format(*c.format)
	}
	f := mementomap.DetectFormat(p)
	if f == mementomap.FormatURIList && p != "-" {
		// A WARC or ARC file under another name (directory inputs are
		// chosen by content): read it as one.
		if kind, err := sniffArchive(p); err == nil && kind != "" {
			return mementomap.FormatWARC
		}
	}
	return f
}

// addAll feeds every input file (or stdin for "-") to g.
func (c *captureInput) addAll(ctx context.Context, e *env, fs *flagSet, files []string, g *mementomap.Generator, cmd string, quiet bool) error {
	if err := c.checkCountedTwice(fs, files, cmd); err != nil {
		return err
	}
	for _, p := range files {
		if !quiet {
			fmt.Fprintf(e.stderr, "%s: reading %s\n", cmd, p)
		}
		f := c.formatOf(p)
		var err error
		switch {
		case f == mementomap.FormatMap:
			return fs.usagef("mementomap %s: %s is a map, not a list of captures", cmd, p)
		case p == "-" && *c.format == "auto":
			return fs.usagef("mementomap %s: give --format to read stdin", cmd)
		case p == "-":
			err = g.AddLines(ctx, e.stdin, "stdin", f)
		default:
			err = g.AddFile(ctx, p, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkCountedTwice refuses a CDX or CDXJ input that indexes a WARC (or
// ARC) file also given as an input (`generate index.cdxj warcs/*.warc.gz`):
// every capture of that file would be counted twice. Only when both kinds
// of input are given are the index files read for their filename fields.
func (c *captureInput) checkCountedTwice(fs *flagSet, files []string, cmd string) error {
	warcs := map[string]string{}
	var indexes []string
	for _, p := range files {
		if p == "-" {
			continue
		}
		switch c.formatOf(p) {
		case mementomap.FormatWARC:
			warcs[strings.TrimSuffix(filepath.Base(p), warcio.OpenSuffix)] = p
		case mementomap.FormatCDXJ, mementomap.FormatCDX:
			indexes = append(indexes, p)
		}
	}
	if len(warcs) == 0 {
		return nil
	}
	for _, ix := range indexes {
		f, err := os.Open(ix)
		if err != nil {
			return fmt.Errorf("mementomap %s: %w", cmd, err)
		}
		r, err := maybeGunzip(f)
		if err != nil {
			f.Close()
			return fmt.Errorf("mementomap %s: %s: %w", cmd, ix, err)
		}
		rd := cdxj.NewReader(r, ix)
		for {
			l, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				continue // a bad line is the generator's to report
			}
			if w, ok := warcs[l.Filename]; ok {
				f.Close()
				return fs.usagef("mementomap %s: %s indexes %s, which is an input too: its captures would be counted twice; give the WARC files or their index, not both", cmd, ix, w)
			}
		}
		f.Close()
	}
	return nil
}

func runMMGenerate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mementomap generate", "[flags] FILE...\n\n"+
		"Builds the full MementoMap: every capture's URI is SURT-canonicalized, its\n"+
		"query dropped (the HxPx key), and mementos and distinct URIs are counted per\n"+
		"key. Input files may be WARC (.warc, .warc.gz), CDXJ (.cdxj), CDX (.cdx) or\n"+
		"URI lists (anything else); \"-\" reads stdin (give --format). Inputs larger\n"+
		"than memory are sorted on disk (--mem, --tmp).")
	out := fs.String("o", "-", "output map file (written atomically); - for stdout")
	in := captureFlags(fs)
	id := fs.String("id", "", "the archive's URI, written as the !id header")
	name := fs.String("name", "", "the archive's name, written in !meta")
	overwrite := overwriteFlag(fs)
	quiet := fs.quietFlag()
	var inf inputFlags
	inf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 && !inf.given() {
		return fs.usagef("mementomap generate: no input files")
	}
	files, err := inf.expand(ctx, e, "mementomap generate", fs.Args())
	defer inf.close()
	if err != nil {
		return err
	}
	if err := checkInputs("mementomap generate", files); err != nil {
		return err
	}
	if err := checkOutput("mementomap generate", files, *overwrite, outFile{"-o", *out}); err != nil {
		return err
	}
	files, doneWACZ, err := openWACZInputs(ctx, "mementomap generate", files, false)
	if err != nil {
		return err
	}
	defer doneWACZ()
	opts, err := in.options(e, fs, "generate")
	if err != nil {
		return err
	}
	opts.ID, opts.Name, opts.Now = *id, *name, time.Now()
	start := time.Now()
	if !*quiet {
		opts.Progress = func(n int64) {
			fmt.Fprintf(e.stderr, "generate: %d captures read (%.0f/s)\n", n, float64(n)/time.Since(start).Seconds())
		}
	}
	g := mementomap.NewGenerator(opts)
	defer g.Close()
	if err := in.addAll(ctx, e, fs, files, g, "generate", *quiet); err != nil {
		return err
	}
	var keys int64
	err = writeOutput(e, *out, func(w io.Writer) error {
		var err error
		keys, err = g.WriteTo(w)
		return err
	})
	if err != nil {
		return err
	}
	st := g.Stats()
	if !*quiet || st.Bad > 0 {
		fmt.Fprintf(e.stderr, "generate: %d captures read, %d counted in %d keys; filtered out: %d by status, %d by media type; %d not http(s); %d bad skipped; %s\n",
			st.Captures, st.Kept, keys, st.FilteredStatus, st.FilteredMIME, st.NotHTTP, st.Bad, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

func compactFlags(fs *flagSet) (w *string, wh, wp *float64, means *string, allowRoot *bool, workers *int) {
	w = fs.String("w", "", "set both weights, --wh and --wp (e.g. 8 keeps much detail, 1 is balanced, 0.1 compacts most)")
	wh = fs.Float64("wh", 1, "host weight: a host node rolls up into host,* when it has more than wh × (mean children at its depth)")
	wp = fs.Float64("wp", 1, "path weight: a path node rolls up into …/* when it has more than wp × (mean children at its depth)")
	means = fs.String("means", "", "per-depth mean child counts \"H0,H1,..;P0,P1,..\", or \"powerlaw\" for the reference implementation's fits (default: measured from the input; given means save a pass)")
	allowRoot = fs.Bool("allow-root", false, "allow rolling everything up into \"*\"")
	workers = fs.Int("workers", runtime.NumCPU(), "compact parts of the input in parallel (the output is the same for any value)")
	fs.atLeast("wh", 0)
	fs.atLeast("wp", 0)
	fs.atLeast("workers", 1)
	return
}

func compactOptions(fs *flagSet, w *string, wh, wp *float64, means *string, allowRoot *bool, workers *int) (mementomap.CompactOptions, error) {
	o := mementomap.CompactOptions{Wh: *wh, Wp: *wp, AllowRoot: *allowRoot, Workers: *workers}
	if *w != "" {
		f, err := strconv.ParseFloat(*w, 64)
		if err != nil {
			return o, fs.usagef("mementomap compact: bad weight --w %q", *w)
		}
		o.Wh, o.Wp = f, f
	}
	if !(o.Wh >= 0) || !(o.Wp >= 0) || math.IsInf(o.Wh, 0) || math.IsInf(o.Wp, 0) {
		return o, fs.usagef("mementomap compact: weights must be finite numbers >= 0")
	}
	if *means == "powerlaw" {
		m := mementomap.PowerLawMeans()
		o.Means = &m
	} else if *means != "" {
		m, err := mementomap.ParseMeans(*means)
		if err != nil {
			return o, fs.usagef("%v", err)
		}
		o.Means = &m
	}
	return o, nil
}

func runMMCompact(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mementomap compact", "[flags] IN OUT\n\n"+
		"Compacts a sorted map in one pass (after a validating pass that also measures\n"+
		"the mean number of children per depth): a node with more children than\n"+
		"weight × mean is replaced by a wildcard carrying the summed counts. Public\n"+
		"suffixes (com, co.uk, github.io...) and the root are never rolled up, so\n"+
		"unseen domains stay absent; exclusions are kept. Compacting a compacted map\n"+
		"compacts further. OUT is replaced atomically; - writes to stdout.")
	w, wh, wp, means, allowRoot, workers := compactFlags(fs)
	skipBad := fs.Bool("skip-bad", false, "skip malformed and out-of-order lines (each reported) instead of stopping")
	overwrite := overwriteFlag(fs)
	quiet := fs.quietFlag()
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fs.usagef("mementomap compact: want IN and OUT")
	}
	if err := checkInputs("mementomap compact", fs.Args()[:1]); err != nil {
		return err
	}
	if err := checkOutput("mementomap compact", fs.Args()[:1], *overwrite, outFile{"OUT", fs.Arg(1)}); err != nil {
		return err
	}
	opts, err := compactOptions(fs, w, wh, wp, means, allowRoot, workers)
	if err != nil {
		return err
	}
	opts.SkipBad = *skipBad
	opts.OnSkip = func(err *ukvs.Error) { fmt.Fprintln(e.stderr, "skipped:", err) }
	start := time.Now()
	if !*quiet {
		opts.Progress = func(pass string, n int64) {
			fmt.Fprintf(e.stderr, "compact: %s pass: %d lines (%.0f/s)\n", pass, n, float64(n)/time.Since(start).Seconds())
		}
	}
	in, out := fs.Arg(0), fs.Arg(1)
	var st mementomap.CompactStats
	if out == "-" {
		f, err := os.Open(in)
		if err != nil {
			return fmt.Errorf("mementomap: compact: %w", err)
		}
		defer f.Close()
		opts.Name = in
		st, err = mementomap.Compact(ctx, f, e.stdout, opts)
		if err != nil {
			return err
		}
	} else if st, err = mementomap.CompactFile(ctx, in, out, opts); err != nil {
		return err
	}
	if st.Normalized.Normalized() {
		fmt.Fprintf(e.stderr, "compact: %s is not in canonical sorted form; compacted its normalised form: %s\n", in, st.Normalized)
	}
	if !*quiet || st.Skipped > 0 {
		fmt.Fprintf(e.stderr, "compact: %d lines -> %d lines (%.1f%%), %d rollups, %d bad lines skipped, %d partitions, means %s, %s (%.0f lines/s)\n",
			st.InLines, st.OutLines, 100*float64(st.OutLines)/float64(max(st.InLines, 1)), st.Rollups, st.Skipped, st.Partitions, st.Means,
			time.Since(start).Round(time.Millisecond), float64(st.InLines)/time.Since(start).Seconds())
	}
	return nil
}

// openMap opens a map, telling on stderr when it had to be normalised (a
// map written by another tool, or unsorted). A map without keys is an
// error: it would answer every lookup "absent".
func openMap(e *env, cmd, path string) (*mementomap.Map, error) {
	if err := checkInputs("mementomap "+cmd, []string{path}); err != nil {
		return nil, err
	}
	m, err := mementomap.OpenMap(path)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(m.Data())) == 0 {
		m.Close()
		return nil, fmt.Errorf("mementomap %s: %s holds no keys (only headers): it would answer every lookup \"absent\"", cmd, path)
	}
	if st := m.Normalized(); st.Normalized() {
		fmt.Fprintf(e.stderr, "%s: %s is not in canonical sorted form; normalised on open: %s\n", cmd, path, st)
	}
	return m, nil
}

func runMMLookup(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mementomap lookup", "[flags] MAP [URI|KEY...]\n\n"+
		"Prints, for each URI (or SURT key), \"present\" or \"absent\", the URI, the\n"+
		"most specific key of the map that answered and its counts, tab-separated.\n"+
		"Without URI arguments, reads one per line from stdin (batch mode). Keys may\n"+
		"be spelled as any tool writes them (\"com,example)\", upper case, www,\n"+
		"Heritrix's \"http://(com,example,)/\"); so may the map's own keys: a map\n"+
		"that is not in canonical sorted form (e.g. from the reference\n"+
		"implementation) is normalised on open. An invalid target prints an\n"+
		"\"error\" line and the batch goes on; the exit status is then 1.")
	trust := fs.Bool("trust", false, "skip parsing every line of the map first (it was written by wayside and not edited)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return fs.usagef("mementomap lookup: no map given")
	}
	m, err := openMap(e, "lookup", fs.Arg(0))
	if err != nil {
		return err
	}
	defer m.Close()
	if !*trust {
		if err := m.Check(); err != nil {
			return fmt.Errorf("mementomap: lookup: %w (sort it with 'wayside mementomap compact' or fix the line)", err)
		}
	}
	bw := bufio.NewWriterSize(e.stdout, 1<<16)
	defer bw.Flush()
	var s mementomap.Scratch
	var nPresent, nAbsent, nErr int
	one := func(target string) error {
		key, err := mementomap.ParseTarget(target)
		var got mementomap.Match
		if err == nil {
			got, err = m.Lookup(key, &s)
		}
		if err != nil {
			// One bad target never stops the batch: an error line, and
			// exit status 1 at the end.
			nErr++
			_, err = fmt.Fprintf(bw, "error\t%s\t%v\n", target, err)
			return err
		}
		ans := "absent"
		if got.Present {
			ans = "present"
			nPresent++
		} else {
			nAbsent++
		}
		matched, freq := "-", "-"
		if got.Key != nil {
			matched, freq = string(got.Key), got.Freq.String()
		}
		_, err = fmt.Fprintf(bw, "%s\t%s\t%s\t%s\n", ans, target, matched, freq)
		return err
	}
	done := func() error {
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("mementomap: lookup: %w", err)
		}
		if nErr > 0 {
			return fmt.Errorf("mementomap: lookup: %d of %d targets were invalid (see the error lines)", nErr, nPresent+nAbsent+nErr)
		}
		return nil
	}
	if fs.NArg() > 1 {
		for _, t := range fs.Args()[1:] {
			if err := one(t); err != nil {
				return err
			}
		}
		return done()
	}
	sc := bufio.NewScanner(e.stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 0; sc.Scan(); n++ {
		if n&4095 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if t := strings.TrimSpace(sc.Text()); t != "" {
			if err := one(t); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("mementomap: lookup: stdin: %w", err)
	}
	fmt.Fprintf(e.stderr, "lookup: %d present, %d absent, %d invalid\n", nPresent, nAbsent, nErr)
	return done()
}

func runMMMerge(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mementomap merge", "[flags] MAP MAP...\n\n"+
		"Writes the union of sorted maps. Counts of a key present in several maps are\n"+
		"summed (memento counts exactly; URI counts as an upper bound \"-\", since\n"+
		"archives may share URIs). An exclusion is dropped when another map holds\n"+
		"captures under it. Headers of all maps are kept. Compact the result to\n"+
		"shrink it.")
	out := fs.String("o", "-", "output map file (written atomically); - for stdout")
	overwrite := overwriteFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return fs.usagef("mementomap merge: no maps given")
	}
	if err := checkInputs("mementomap merge", fs.Args()); err != nil {
		return err
	}
	if err := checkOutput("mementomap merge", fs.Args(), *overwrite, outFile{"-o", *out}); err != nil {
		return err
	}
	var maps []*mementomap.Map
	for _, p := range fs.Args() {
		m, err := openMap(e, "merge", p)
		if err != nil {
			return err
		}
		defer m.Close()
		if err := m.Check(); err != nil {
			return fmt.Errorf("mementomap: merge: %w", err)
		}
		maps = append(maps, m)
	}
	var st mementomap.MergeStats
	err := writeOutput(e, *out, func(w io.Writer) error {
		var err error
		st, err = mementomap.Merge(w, maps, fs.Args())
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "merge: %d maps -> %d lines, %d keys summed, %d exclusions resolved\n", len(maps), st.Lines, st.Summed, st.ExclusionsResolved)
	return nil
}

func runMMEval(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mementomap eval", "[flags]\n\n"+
		"Evaluates maps on lookups: a labelled set (--set, lines \"1 URI\" for archived,\n"+
		"\"0 URI\" for not archived; SURT keys in any spelling work too) or a real\n"+
		"lookup log (--log: URIs one per line, or a web server access log of Memento\n"+
		"requests such as \"GET /web/20190101000000/http://example.com/ HTTP/1.1\",\n"+
		"TimeGate and TimeMap requests), labelled against the full key list (--full:\n"+
		"present when the full map holds the key).\n\n"+
		"Relative cost is the map's number of lines over the full map's, and (the\n"+
		"MementoMap paper's definition) over the number of unique URI-Rs (the sum of\n"+
		"the full map's URI-R counts, or --urirs); accuracy = (TP+TN)/N, precision =\n"+
		"TP/(TP+FP), recall = TP/(TP+FN), which must be 1.0.\n\n"+
		"  --map MAP: evaluate one map.\n"+
		"  --grid: compact FULL with every pair Wh x Wp of --weights (default the\n"+
		"    paper's 4,2,1,0.5,0.25,0: 36 pairs), each from the next larger map\n"+
		"    (same result as from FULL, faster; --scratch compacts each from FULL),\n"+
		"    and write a TSV table and an SVG plot like the paper's Figure 9.\n"+
		"  --sweep W,W,...: the same with Wh = Wp = W.")
	mapPath := fs.String("map", "", "map to evaluate")
	full := fs.String("full", "", "the full (uncompacted) map: relative cost, --log labels, --grid and --sweep input")
	set := fs.String("set", "", "labelled lookup set")
	logPath := fs.String("log", "", "lookup log (URIs, or an access log of Memento requests), labelled against --full")
	allRequests := fs.Bool("all-requests", false, "with --log: keep repeated targets (default: each distinct target once, as the paper)")
	grid := fs.Bool("grid", false, "evaluate the Wh x Wp grid of --weights")
	weights := fs.String("weights", "4,2,1,0.5,0.25,0", "with --grid: the host and path weights")
	scratch := fs.Bool("scratch", false, "with --grid: compact every pair from --full instead of chaining")
	keep := fs.String("keep", "", "with --grid: keep the compacted maps in this directory")
	urirs := fs.Int64("urirs", 0, "number of unique URI-Rs behind --full (default: the sum of its URI-R counts)")
	fs.atLeast("urirs", 0)
	sweep := fs.String("sweep", "", "comma-separated weights to compact --full with (Wh = Wp), e.g. 8,4,2,1,0.5,0.1")
	table := fs.String("table", "", "with --grid or --sweep: write the table (TSV) here (default: stdout)")
	plot := fs.String("plot", "", "with --grid or --sweep: write an SVG plot of cost vs accuracy here")
	tmp := fs.String("tmp", "", "directory for the compacted maps (default: system temp)")
	overwrite := overwriteFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	modes := 0
	for _, b := range []bool{*mapPath != "", *grid, *sweep != ""} {
		if b {
			modes++
		}
	}
	switch {
	case (*set == "") == (*logPath == ""):
		return fs.usagef("mementomap eval: give one of --set and --log")
	case modes != 1:
		return fs.usagef("mementomap eval: give one of --map, --grid and --sweep")
	case *full == "" && (*logPath != "" || *grid || *sweep != ""):
		return fs.usagef("mementomap eval: --log, --grid and --sweep need --full")
	}
	var inputs []string
	for _, p := range []string{*mapPath, *full, *set, *logPath} {
		if p != "" {
			inputs = append(inputs, p)
		}
	}
	if err := checkInputs("mementomap eval", inputs); err != nil {
		return err
	}
	if err := checkOutput("mementomap eval", inputs, *overwrite, outFile{"--table", *table}, outFile{"--plot", *plot}); err != nil {
		return err
	}
	var fm *mementomap.Map
	if *full != "" {
		var err error
		if fm, err = openMap(e, "eval", *full); err != nil {
			return err
		}
		defer fm.Close()
	}
	skipped := 0
	onBad := func(err error) {
		if skipped++; skipped <= 10 {
			fmt.Fprintln(e.stderr, "skipped:", err)
		}
	}
	labelled, err := readEvalSet(e, *set, *logPath, !*allRequests, fm, onBad)
	if err != nil {
		return err
	}
	if skipped > 10 {
		fmt.Fprintf(e.stderr, "eval: %d lines skipped in all (the first 10 shown)\n", skipped)
	}
	if len(labelled) == 0 {
		return fmt.Errorf("mementomap: eval: no lookups to evaluate")
	}
	present := 0
	for _, l := range labelled {
		if l.Present {
			present++
		}
	}
	fmt.Fprintf(e.stderr, "eval: %d lookups (%d present, %d absent)\n", len(labelled), present, len(labelled)-present)
	switch {
	case *mapPath != "":
		return evalOne(e, *mapPath, fm, labelled, *urirs)
	case *grid:
		ws, err := parseFloats(*weights)
		if err != nil {
			return err
		}
		if len(ws) == 0 {
			return fs.usagef("mementomap eval: --weights is empty")
		}
		start := time.Now()
		pts, err := mementomap.Grid(ctx, *full, labelled, mementomap.GridOptions{Weights: ws, Scratch: *scratch, URIRs: *urirs,
			Workers: runtime.NumCPU(), TempDir: *tmp, KeepDir: *keep,
			Progress: func(p mementomap.GridPoint) {
				fmt.Fprintf(e.stderr, "grid: wh=%g wp=%g from %s: %d lines, accuracy %.4f, recall %.4f\n", p.Wh, p.Wp, p.From, p.Lines, p.Accuracy, p.Recall)
			}})
		if err != nil {
			return err
		}
		var compaction time.Duration
		for _, p := range pts {
			compaction += p.Compaction
		}
		fmt.Fprintf(e.stderr, "grid: %d pairs in %s (compaction %s, %s)\n", len(pts), time.Since(start).Round(time.Millisecond),
			compaction.Round(time.Millisecond), map[bool]string{true: "each from the full map", false: "chained"}[*scratch])
		return writeGrid(e, pts, *table, *plot, fmt.Sprintf("MementoMap: relative cost vs accuracy, Wh x Wp (%d lookups)", len(labelled)))
	}
	ws, err := parseFloats(*sweep)
	if err != nil {
		return err
	}
	pts, err := mementomap.Grid(ctx, *full, labelled, mementomap.GridOptions{Weights: ws, Diagonal: true, URIRs: *urirs,
		Workers: runtime.NumCPU(), TempDir: *tmp})
	if err != nil {
		return err
	}
	return writeGrid(e, pts, *table, *plot, fmt.Sprintf("MementoMap: relative cost vs accuracy, Wh = Wp (%d lookups)", len(labelled)))
}

// writeGrid writes grid results as a table (stdout when table is "") and
// a plot, and fails when a map hid holdings.
func writeGrid(e *env, pts []mementomap.GridPoint, table, plot, title string) error {
	if err := writeOutput(e, table, func(w io.Writer) error { return mementomap.WriteGridTable(w, pts) }); err != nil {
		return err
	}
	if plot != "" {
		if err := mementomap.WriteFileAtomic(plot, func(w io.Writer) error { return mementomap.WriteGridSVG(w, pts, title) }); err != nil {
			return err
		}
	}
	var fn int64
	for _, p := range pts {
		fn += p.FN
	}
	if fn > 0 {
		return fmt.Errorf("mementomap: eval: %d false negatives: a map hides holdings", fn)
	}
	return nil
}

// readEvalSet reads a labelled set, or a lookup log labelled against full.
func readEvalSet(e *env, set, logPath string, unique bool, full *mementomap.Map, onBad func(error)) ([]mementomap.Labelled, error) {
	path := set
	if path == "" {
		path = logPath
	}
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("mementomap: eval: %w", err)
		}
		defer f.Close()
		r = f
	}
	if set != "" {
		return mementomap.ReadLabelled(r, path, onBad)
	}
	targets, st, err := mementomap.ReadLookupLog(r, path, mementomap.LogOptions{KeepDuplicates: !unique, OnBad: onBad})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "eval: %s: %d lines, %d access-log requests, %d targets (%d repeated%s), %d without a target\n",
		path, st.Lines, st.Requests, st.Targets, st.Duplicates, map[bool]string{true: ", kept once", false: ""}[unique], st.Skipped)
	return mementomap.LabelAgainst(full, targets, onBad)
}

// evalOne evaluates one map and prints the result.
func evalOne(e *env, mapPath string, fm *mementomap.Map, labelled []mementomap.Labelled, urirs int64) error {
	m, err := openMap(e, "eval", mapPath)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Check(); err != nil {
		return fmt.Errorf("mementomap: eval: %w", err)
	}
	r, err := mementomap.Evaluate(m, fm, labelled)
	if err != nil {
		return err
	}
	if urirs == 0 && fm != nil {
		urirs = mementomap.SumURIRs(fm)
	}
	fmt.Fprintf(e.stdout, "lookups\t%d (%d present, %d absent)\n", len(labelled), r.TP+r.FN, r.TN+r.FP)
	fmt.Fprintf(e.stdout, "relative cost\t%.4f lines (%d/%d), %.4f bytes (%d/%d)\n", r.RelLines, r.Lines, r.FullLines, r.RelBytes, r.Bytes, r.FullBytes)
	if urirs > 0 {
		fmt.Fprintf(e.stdout, "relative cost per URI-R\t%.6f (%d lines / %d unique URI-Rs)\n", float64(r.Lines)/float64(urirs), r.Lines, urirs)
	} else {
		fmt.Fprintf(e.stdout, "relative cost per URI-R\t- (the full map does not give its URI-R counts; see --urirs)\n")
	}
	fmt.Fprintf(e.stdout, "accuracy\t%.4f\nprecision\t%.4f\nrecall\t%.4f\n", r.Accuracy, r.Precision, r.Recall)
	fmt.Fprintf(e.stdout, "TP %d  FP %d  TN %d  FN %d\n", r.TP, r.FP, r.TN, r.FN)
	if r.FN > 0 {
		return fmt.Errorf("mementomap: eval: %d false negatives: the map hides holdings", r.FN)
	}
	return nil
}

func runMMStats(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mementomap stats", "[flags] INPUT...\n\n"+
		"Prints the holdings tables of the MementoMap paper for WARC, CDXJ, CDX files\n"+
		"(or URI lists), or for one map (.ukvs or --format map):\n"+
		"  - summary: URI-Ms, URI-Rs, keys, hosts, domains, TLDs, gamma (URI-Ms per\n"+
		"    URI-R), mementos per URI-R (min/median/max), Gini coefficient, Pareto\n"+
		"    break point;\n"+
		"  - per year: URI-Ms, URI-Rs, new URI-Rs, status classes (captures only);\n"+
		"  - per host depth (H1 = TLDs) and path depth (P0 = host roots): Count,\n"+
		"    Sum, Max, Mean, Median, StdDev of the URI-Rs below each node, RedQ,\n"+
		"    Parents, Children, MeanChld (the compaction thresholds' means).\n"+
		"A map only knows its keys' counts: no years, and the distribution\n"+
		"statistics are per key. Definitions: the package doc of mementomap\n"+
		"(type Holdings).")
	in := captureFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON instead of text tables")
	svg := fs.String("svg", "", "also write an SVG plot of the depth distribution here")
	overwrite := overwriteFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fs.usagef("mementomap stats: no input files")
	}
	if err := checkInputs("mementomap stats", fs.Args()); err != nil {
		return err
	}
	if err := checkOutput("mementomap stats", fs.Args(), *overwrite, outFile{"--svg", *svg}); err != nil {
		return err
	}
	opts, err := in.options(e, fs, "stats")
	if err != nil {
		return err
	}
	var h *mementomap.Holdings
	if in.formatOf(fs.Arg(0)) == mementomap.FormatMap {
		if fs.NArg() != 1 {
			return fs.usagef("mementomap stats: give one map, or capture files only")
		}
		if len(opts.Statuses) > 0 || len(opts.MIMEs) > 0 {
			return fs.usagef("mementomap stats: --status and --mime filter captures; a map has none")
		}
		m, err := openMap(e, "stats", fs.Arg(0))
		if err != nil {
			return err
		}
		defer m.Close()
		if h, err = mementomap.MapHoldings(ctx, m, *in.tmp); err != nil {
			return err
		}
	} else {
		g := mementomap.NewHoldings(opts)
		defer g.Close()
		if err := in.addAll(ctx, e, fs, fs.Args(), g, "stats", true); err != nil {
			return err
		}
		if h, err = g.Holdings(); err != nil {
			return err
		}
		if st := g.Stats(); st.Bad > 0 {
			fmt.Fprintf(e.stderr, "stats: %d bad lines or records skipped\n", st.Bad)
		}
	}
	if *svg != "" {
		title := fmt.Sprintf("Depth distribution: %d URI-Rs, %d keys", h.URIRs, h.Keys)
		if err := mementomap.WriteFileAtomic(*svg, func(w io.Writer) error { return h.WriteDepthSVG(w, title) }); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(h)
	}
	return h.WriteText(e.stdout)
}

func runMMSynth(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mementomap synth", "[flags]\n\n"+
		"Writes a deterministic synthetic full map with Zipf-skewed hosts (many with\n"+
		"one key, a few huge), multi-label public suffixes and realistic path depths,\n"+
		"for benchmarks; --set also writes a labelled lookup set of URIs (present\n"+
		"keys and --absent unseen ones).")
	n := fs.Int("n", 1000000, "number of keys")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same output)")
	out := fs.String("o", "-", "output map file; - for stdout")
	set := fs.String("set", "", "also write a labelled lookup set here")
	absent := fs.Int("absent", 20000, "absent lookups in the set (as many present ones are sampled)")
	fs.atLeast("n", 1)
	fs.atLeast("seed", 0)
	fs.atLeast("absent", 0)
	overwrite := overwriteFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkOutput("mementomap synth", nil, *overwrite, outFile{"-o", *out}, outFile{"--set", *set}); err != nil {
		return err
	}
	abs := *absent
	if *set == "" {
		abs = 0
	}
	present, absentKeys := zipfgen.Generate(zipfgen.Config{Keys: *n, Seed: *seed, Absent: abs})
	err := writeOutput(e, *out, func(w io.Writer) error {
		uw := ukvs.NewWriter(w)
		for _, h := range []ukvs.Header{
			{Name: "context", Value: []byte(`["http://oduwsdl.github.io/contexts/ukvs"]`)},
			{Name: "fields", Value: []byte(`{"keys":["surt"],"values":["frequency"]}`)},
			{Name: "meta", Value: []byte(fmt.Sprintf(`{"type":"MementoMap","name":"synthetic","keys":%d,"seed":%d}`, *n, *seed))},
		} {
			if err := uw.WriteHeader(h); err != nil {
				return err
			}
		}
		for _, p := range present {
			if err := uw.Write(ukvs.Record{Key: []byte(p.Key), Freq: ukvs.Freq{M: ukvs.Exactly(p.M), R: ukvs.Exactly(p.R)}}); err != nil {
				return err
			}
		}
		return uw.Flush()
	})
	if err != nil {
		return err
	}
	if *set != "" {
		err := mementomap.WriteFileAtomic(*set, func(w io.Writer) error {
			step := max(1, len(present)/max(1, len(absentKeys)))
			for i := 0; i < len(present); i += step {
				fmt.Fprintf(w, "1 %s\n", zipfgen.URI(present[i].Key))
			}
			for _, k := range absentKeys {
				fmt.Fprintf(w, "0 %s\n", zipfgen.URI(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stderr, "synth: %d keys, %d absent lookups\n", len(present), len(absentKeys))
	return nil
}
