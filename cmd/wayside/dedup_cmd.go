package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/postdedup"
)

const dedupUsage = `<assess|manifest|resolve|rewrite|validate|run> [flags] [args]

Post-crawl deduplication of existing WARC collections: later copies of a
payload become revisit records of its earliest capture, after a byte-for-byte
comparison, and the result is validated before it may replace anything.

  assess   [--sample 10%] [policy flags] WARC...
      duplicate responses and bytes, same-URL vs other-URL, per MIME type,
      projected saving: the report to read before deciding.
  manifest -o FILE [--digest header|compute] [--alg sha1] [--parts N] WARC...
      one line per record, sorted by payload digest; --parts splits it so that
      no digest cluster spans two parts (resolve each part anywhere).
  resolve  -o PLAN [policy flags] [--index URL --original-dir DIR] MANIFEST...
      compare every later copy with its cluster's original byte for byte and
      write the plan of copies to rewrite.
  rewrite  -o OUTDIR --manifest M [--manifest M2] PLAN...
      write new WARC files (never in place) with the planned copies as
      revisits, every other byte copied as stored, and a CDXJ beside each.
  validate --manifest M [--deep] [--replace] OUTDIR PLAN...
      prove the outputs hold everything the inputs held; --replace then swaps
      them for the inputs (atomic per file; inputs kept in OUTDIR/.wayside-dedup/retired).
  run      -o OUTDIR [--replace] [policy flags] WARC...
      all stages with progress and a final report.

Run 'wayside dedup <stage> -h' for a stage's flags.`

func runDedup(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "dedup", dedupUsage, args, []subcommand{
		{"assess", runDedupAssess}, {"manifest", runDedupManifest}, {"resolve", runDedupResolve},
		{"rewrite", runDedupRewrite}, {"validate", runDedupValidate}, {"run", runDedupRun}})
}

// policyFlags registers the deduplication policy flags.
type policyFlags struct {
	minSize int64
	status  string
	match   string
}

func (p *policyFlags) register(fs *flagSet) {
	fs.Int64Var(&p.minSize, "min-size", postdedup.DefaultMinPayloadSize, "smallest payload `BYTES` deduplicated (empty payloads never are)")
	fs.StringVar(&p.status, "status", "2xx", `HTTP statuses deduplicated, e.g. "2xx", "200-299,404" or "all"`)
	fs.StringVar(&p.match, "match", "digest", "digest (URL-agnostic) or url (a copy refers only to an original of its own URL)")
	fs.atLeast("min-size", 1)
}

func (p *policyFlags) policy(fs *flagSet) (postdedup.Policy, error) {
	pol := postdedup.Policy{MinPayloadSize: p.minSize}
	st := p.status
	if st == "all" {
		st = "100-999"
	}
	var err error
	if pol.Statuses, err = dedupindex.ParseStatuses(st); err != nil {
		return pol, fs.usagef("%s: --status: %v", fs.name, err)
	}
	if pol.Match, err = dedupindex.ParseMatch(p.match); err != nil {
		return pol, fs.usagef("%s: --match: %v", fs.name, err)
	}
	return pol, nil
}

// manifestFlags registers the manifest stage's flags.
type manifestFlags struct {
	source, alg string
	jobs, memMB int
	cacheMB     int
	tmpDir      string
	in          inputFlags // the input WARC files (-r, --from-list)
}

func (m *manifestFlags) register(fs *flagSet) {
	m.in.register(fs)
	fs.StringVar(&m.source, "digest", postdedup.SourceHeader, "header (the digest each record declares, checked against its bytes) or compute (recomputed with --alg)")
	fs.StringVar(&m.alg, "alg", "sha1", "digest algorithm with --digest compute: md5, sha1, sha256 or sha512")
	fs.IntVar(&m.jobs, "j", runtime.NumCPU(), "read `N` files in parallel")
	fs.IntVar(&m.memMB, "mem-mb", 200, "`MB` of memory: the heap's soft limit, of which a 32nd holds lines sorted in memory before spilling runs to temporary files (each sort), an eighth the compare cache and an eighth the reference payloads resolve loads (the process's resident size adds the program and windows of the mapped inputs, about 60 MB)")
	fs.IntVar(&m.cacheMB, "cache-mb", -1, "`MB` of payloads kept to compare later copies as they are read (0: none, compared by resolve; -1: an eighth of --mem-mb; payloads pushed out are read back from the input for a later copy)")
	fs.StringVar(&m.tmpDir, "tmpdir", "", "`DIR` for sort runs (default: the system temporary directory)")
	fs.atLeast("j", 1)
	fs.atLeast("mem-mb", 1)
	fs.atLeast("cache-mb", -1)
	fs.oneOf("digest", postdedup.SourceHeader, postdedup.SourceCompute)
	fs.oneOf("alg", "md5", "sha1", "sha256", "sha512")
}

func (m *manifestFlags) options(fs *flagSet) (postdedup.ManifestOptions, error) {
	o := postdedup.ManifestOptions{Source: m.source, Alg: m.alg, Jobs: m.jobs, MaxMemory: int64(m.memMB) << 20, TempDir: m.tmpDir}
	switch {
	case m.cacheMB == 0:
		o.CompareCache = -1
	case m.cacheMB > 0:
		o.CompareCache = int64(m.cacheMB) << 20
	}
	return o, nil
}

// limitHeap makes --mem-mb (plus the compare cache when it has its own
// budget) the Go runtime's soft memory limit, unless GOMEMLIMIT sets one, so that
// garbage is collected before the heap outgrows the buffers it bounds
// (by default the heap may grow to twice what is live); it returns the
// function that restores the previous limit.
func (m *manifestFlags) limitHeap(e *env) (restore func()) {
	if e.getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	lim := int64(m.memMB) << 20
	if m.cacheMB > 0 {
		lim += int64(m.cacheMB) << 20
	}
	old := debug.SetMemoryLimit(lim)
	return func() { debug.SetMemoryLimit(old) }
}

func runDedupManifest(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "dedup manifest", "-o FILE [flags] WARC...\n\nWrite the hash manifest of WARC files: one line per record a CDXJ index lists\n(response, resource, revisit, metadata), sorted by payload digest, then date,\nfile and offset (the copy-numbering order).")
	out := fs.String("o", "", "write the manifest to `FILE` (with --parts: FILE.part-001-of-00N, ...)")
	parts := fs.Int("parts", 1, "split the manifest by digest into `N` parts (at most 256)")
	overwrite := overwriteFlag(fs)
	quiet := fs.quietFlag()
	var mf manifestFlags
	mf.register(fs)
	fs.within("parts", 1, 256)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 && !mf.in.given() {
		return fs.usagef("dedup manifest: give -o FILE and at least one WARC file")
	}
	opts, err := mf.options(fs)
	if err != nil {
		return err
	}
	defer mf.limitHeap(e)()
	opts.Parts = *parts
	inputs, err := dedupInputs(ctx, e, fs, &mf.in)
	defer mf.in.close()
	if err != nil {
		return err
	}
	var outs []outFile
	for i := 0; i < max(opts.Parts, 1); i++ {
		outs = append(outs, outFile{"-o", postdedup.PartName(*out, i, max(opts.Parts, 1))})
	}
	if err := checkOutput("dedup manifest", inputs, *overwrite, outs...); err != nil {
		return err
	}
	if !*quiet {
		opts.Progress = fileProgress(e, "manifest")
	}
	st, err := postdedup.WriteManifest(ctx, inputs, *out, opts)
	if err != nil {
		return err
	}
	if st.Entries == 0 && len(st.Problems) > 0 {
		// Every input was unreadable: no manifest, not an empty one.
		for i := 0; i < max(opts.Parts, 1); i++ {
			os.Remove(postdedup.PartName(*out, i, max(opts.Parts, 1)))
		}
		os.RemoveAll(postdedup.FramingDir(*out))
		problemsErr("manifest", st.Problems, e)
		return fmt.Errorf("dedup manifest: no record could be read (%d unreadable, listed above); no manifest written", len(st.Problems))
	}
	fmt.Fprintf(e.stdout, "manifest: %d files, %d lines, %d unreadable records\n", len(st.Files), st.Entries, len(st.Problems))
	for i := 0; i < max(opts.Parts, 1); i++ {
		fmt.Fprintf(e.stdout, "  %s\n", postdedup.PartName(*out, i, max(opts.Parts, 1)))
	}
	return problemsErr("manifest", st.Problems, e)
}

// dedupInputs checks the input WARC files of a stage before anything is
// written: each readable and not empty (checkInputs), none named twice.
func dedupInputs(ctx context.Context, e *env, fs *flagSet, in *inputFlags) ([]string, error) {
	files, err := in.expand(ctx, e, fs.name, fs.Args())
	if err != nil {
		return nil, err
	}
	if err := checkInputs(fs.name, files); err != nil {
		return nil, err
	}
	inputs, err := postdedup.CheckInputs(files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fs.name, err)
	}
	return inputs, nil
}

// problemsErr lists unreadable records and makes the command fail.
func problemsErr(stage string, ps []postdedup.Problem, e *env) error {
	if len(ps) == 0 {
		return nil
	}
	for _, p := range ps {
		fmt.Fprintf(e.stderr, "unreadable: %s\n", p)
	}
	return fmt.Errorf("dedup %s: %d unreadable records (listed above; everything else was processed)", stage, len(ps))
}

func fileProgress(e *env, stage string) func(done, total int, f postdedup.FileInfo) {
	return func(done, total int, f postdedup.FileInfo) {
		fmt.Fprintf(e.stderr, "%s: %d/%d files, %s: %d records\n", stage, done, total, f.Path, f.Records)
	}
}

func runDedupResolve(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "dedup resolve", "-o PLAN [flags] MANIFEST...\n\nCompare copies within each digest cluster byte for byte and write the plan.\nThe earliest capture of a cluster (WARC-Date, then input path, then offset)\nis its original and is never rewritten; a copy whose payload differs\n(a true collision) is kept in full.")
	out := fs.String("o", "", "write the plan to `FILE`")
	var pf policyFlags
	pf.register(fs)
	ix := indexFlags(fs)
	jsonOut := fs.Bool("json", false, "print the statistics as JSON")
	memMB := fs.Int("mem-mb", 256, "`MB` of lines sorted in memory")
	tmpDir := fs.String("tmpdir", "", "`DIR` for sort runs")
	overwrite := overwriteFlag(fs)
	fs.atLeast("mem-mb", 1)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		return fs.usagef("dedup resolve: give -o PLAN and at least one manifest")
	}
	if err := checkInputs("dedup resolve", fs.Args()); err != nil {
		return err
	}
	if err := checkOutput("dedup resolve", fs.Args(), *overwrite, outFile{"-o", *out}); err != nil {
		return err
	}
	pol, err := pf.policy(fs)
	if err != nil {
		return err
	}
	opts := postdedup.ResolveOptions{Policy: pol, MaxMemory: int64(*memMB) << 20, TempDir: *tmpDir}
	closeIx, err := ix.open(ctx, e, fs, &opts)
	if err != nil {
		return err
	}
	defer closeIx()
	st, err := postdedup.Resolve(ctx, fs.Args(), *out, opts)
	if err != nil {
		return err
	}
	if *jsonOut {
		return printJSON(e.stdout, st)
	}
	printResolve(e.stdout, st)
	return nil
}

// indexFlagSet holds the cross-collection flags.
type indexFlagSet struct {
	url, scope, tokenFile string
	dirs                  stringList
}

func indexFlags(fs *flagSet) *indexFlagSet {
	x := &indexFlagSet{}
	fs.StringVar(&x.url, "index", "", "also refer to originals in other collections found in this Wayside dedup index `URL` (pebble path, redis://, sidecar://)")
	fs.StringVar(&x.scope, "scope", dedupindex.DefaultScope, "index scope to look originals up in")
	fs.Var(&x.dirs, "original-dir", "`DIR` holding the WARC files of originals in other collections (repeatable); an original is used only if its record can be read back and matches byte for byte")
	fs.existingDirs("original-dir")
	return x
}

func (x *indexFlagSet) open(ctx context.Context, e *env, fs *flagSet, opts *postdedup.ResolveOptions) (func(), error) {
	if x.url == "" {
		return func() {}, nil
	}
	if len(x.dirs) == 0 {
		return nil, fs.usagef("%s: --index needs --original-dir (originals are read back and compared before any revisit refers to them)", fs.name)
	}
	ix, err := dedupindex.OpenURL(ctx, x.url, dedupindex.OpenOptions{Token: e.getenv("WAYSIDE_TOKEN")})
	if err != nil {
		return nil, err
	}
	opts.Index, opts.Scope, opts.OriginalDirs = ix, x.scope, x.dirs
	return func() { ix.Close() }, nil
}

func printResolve(w io.Writer, st postdedup.ResolveStats) {
	fmt.Fprintf(w, "resolve: %d records in %d digest clusters\n", st.Entries, st.Clusters)
	fmt.Fprintf(w, "  copies to rewrite as revisits  %d (%d refer to other collections)\n", st.Duplicates, st.External)
	fmt.Fprintf(w, "  payload bytes no longer stored %d\n", st.SavedPayload)
	fmt.Fprintf(w, "  bytes compared byte for byte   %d\n", st.BytesCompared)
	fmt.Fprintf(w, "  collisions (kept in full)      %d\n", st.Collisions)
	fmt.Fprintf(w, "  pinned by existing revisits    %d\n", st.Pinned)
	for _, k := range sortedKeys(st.Kept) {
		fmt.Fprintf(w, "  kept as is: %-18s %d\n", k, st.Kept[k])
	}
	for _, p := range st.CollisionList {
		fmt.Fprintf(w, "  collision: %s\n", p)
	}
	for _, p := range st.BadInput {
		fmt.Fprintf(w, "  bad input: %s\n", p)
	}
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runDedupRewrite(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "dedup rewrite", "-o OUTDIR --manifest M [--manifest M2 ...] PLAN...\n\nWrite new WARC files into OUTDIR (never over the inputs) where the plan's\ncopies are revisit records and every other byte is copied as stored, with a\nsorted CDXJ beside each file. Validate before using them.")
	out := fs.String("o", "", "output `DIR` (must not hold any input)")
	var mans stringList
	fs.Var(&mans, "manifest", "manifest `FILE` (part) the plan was resolved from (repeatable)")
	jobs := fs.Int("j", runtime.NumCPU(), "rewrite `N` files in parallel")
	overwrite := overwriteFlag(fs)
	quiet := fs.quietFlag()
	fs.atLeast("j", 1)
	if err := fs.Parse(args); err != nil {
		return err
	}
	plans := moreManifests(&mans, fs.Args())
	if *out == "" || len(mans) == 0 || len(plans) == 0 {
		return fs.usagef("dedup rewrite: give -o OUTDIR, --manifest and at least one plan")
	}
	if err := checkInputs("dedup rewrite", append(append([]string(nil), mans...), plans...)); err != nil {
		return err
	}
	var inputs []string
	for _, m := range mans {
		if mr, err := postdedup.OpenManifest(m); err == nil {
			for _, f := range mr.Files {
				inputs = append(inputs, f.Path)
			}
			mr.Close()
		}
	}
	if err := checkOutDir("dedup rewrite", *out, inputs, *overwrite); err != nil {
		return err
	}
	opts := postdedup.RewriteOptions{Jobs: *jobs}
	if !*quiet {
		opts.Progress = func(done, total int, l postdedup.Layout) {
			fmt.Fprintf(e.stderr, "rewrite: %d/%d files, %s: %d revisits, %d → %d bytes\n", done, total, l.Output, l.Revisits, l.InputSize, l.OutputSize)
		}
	}
	st, err := postdedup.Rewrite(ctx, mans, plans, *out, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "rewrite: %d files, %d revisits, %d → %d bytes (%s); run 'wayside dedup validate' before using them\n",
		st.Files, st.Revisits, st.InputBytes, st.OutputBytes, percent(st.InputBytes, st.OutputBytes))
	return nil
}

func percent(before, after int64) string {
	if before == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*(1-float64(after)/float64(before)), 'f', 1, 64) + "% saved"
}

func runDedupValidate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "dedup validate", "--manifest M [flags] OUTDIR PLAN...\n\nProve that the outputs in OUTDIR hold everything the inputs held (see the\npackage documentation of postdedup for each check). With --replace, swap the\nvalidated outputs for the inputs afterwards.")
	var mans, dirs stringList
	fs.Var(&mans, "manifest", "manifest `FILE` (part) of the inputs (repeatable)")
	fs.Var(&dirs, "original-dir", "`DIR` holding originals in other collections (repeatable)")
	deep := fs.Bool("deep", false, "also re-read every output record and compare it with the manifest")
	replace := fs.Bool("replace", false, "after validation, replace each input with its output (atomically per file)")
	jobs := fs.Int("j", runtime.NumCPU(), "validate `N` files in parallel")
	jsonOut := fs.Bool("json", false, "print the statistics as JSON")
	independent := independentInflateFlag(fs)
	var rif replaceIndexFlags
	rif.register(fs)
	fs.atLeast("j", 1)
	fs.existingDirs("original-dir")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := moreManifests(&mans, fs.Args())
	if len(mans) == 0 || len(rest) < 2 {
		return fs.usagef("dedup validate: give --manifest, the output directory and the plan")
	}
	outDir, plans := rest[0], rest[1:]
	if err := checkInputs("dedup validate", append(append([]string(nil), mans...), plans...)); err != nil {
		return err
	}
	if err := checkInputDir("dedup validate", "OUTDIR", outDir); err != nil {
		return err
	}
	st, err := postdedup.Validate(ctx, mans, plans, outDir, postdedup.ValidateOptions{Deep: *deep, OriginalDirs: dirs, Jobs: *jobs, IndependentInflate: *independent})
	if *jsonOut {
		printJSON(e.stdout, st)
	} else {
		printValidate(e.stdout, st)
	}
	if err != nil {
		return err
	}
	if *replace {
		stamp, err := postdedup.ReadStamp(outDir)
		if err != nil {
			return err
		}
		var inputs []string
		for _, f := range stamp.Files {
			inputs = append(inputs, f.Input)
		}
		ups, closeUps, err := rif.open(ctx, e, "dedup validate", inputs)
		if err != nil {
			return err
		}
		defer closeUps()
		rs, err := postdedup.Replace(ctx, outDir, postdedup.ReplaceOptions{Indexes: ups})
		printReplace(e.stdout, rs)
		return err
	}
	return nil
}

func printValidate(w io.Writer, st postdedup.ValidateStats) {
	mode := "fast"
	if st.Deep {
		mode = "deep"
	}
	fmt.Fprintf(w, "validate (%s): %d files, %d revisits checked, %d originals checked (%d in other collections), %d clusters with revisits\n",
		mode, st.Files, st.Revisits, st.Originals, st.External, st.Clusters)
	fmt.Fprintf(w, "  copied bytes compared with the input  %d\n", st.CopiedBytes)
	if st.Deep {
		fmt.Fprintf(w, "  records read back                     %d (input: %d)\n", st.Records, st.InputRecords)
	}
	for _, p := range st.Problems {
		fmt.Fprintf(w, "  FAILED: %s\n", p)
	}
}

func printReplace(w io.Writer, st postdedup.ReplaceStats) {
	fmt.Fprintf(w, "replace: %d inputs replaced (%d already), %d → %d bytes; CDXJ replaced beside %d\n", st.Replaced, st.Already, st.BytesBefore, st.BytesAfter, st.CDXJReplaced)
	if st.Retired != "" {
		fmt.Fprintf(w, "  the replaced inputs are kept in %s: delete it once satisfied\n", st.Retired)
	}
	for _, ix := range st.IndexesUpdated {
		fmt.Fprintf(w, "  %s updated to the new offsets\n", ix)
	}
}

// independentInflateFlag registers --independent-inflate: validation's
// second framing inflates each input on its own again.
func independentInflateFlag(fs *flagSet) *bool {
	return fs.Bool("independent-inflate", false, "frame each input a second time with its own inflation (framescan.File) instead of using the framing the manifest scan made from the members it inflated, each proved against its gzip trailer")
}

func runDedupRun(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "dedup run", "-o OUTDIR [flags] WARC...\n\nManifest, resolve, rewrite and validate in one go (state in OUTDIR/.wayside-dedup).\nRun again after an interruption: it starts over, or finishes an interrupted --replace.")
	out := fs.String("o", "", "output `DIR` for the new WARC files (must not hold any input)")
	tolerate := tolerateFlag(fs)
	replace := fs.Bool("replace", false, "after validation, replace each input with its output (atomically per file)")
	deep := fs.Bool("deep", false, "validate by re-reading every output record too")
	independent := independentInflateFlag(fs)
	quiet := fs.quietFlag()
	jsonOut := fs.Bool("json", false, "print the final report as JSON")
	overwrite := overwriteFlag(fs)
	var pf policyFlags
	pf.register(fs)
	var mf manifestFlags
	mf.register(fs)
	ix := indexFlags(fs)
	var rif replaceIndexFlags
	rif.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 && !mf.in.given() {
		return fs.usagef("dedup run: give -o OUTDIR and at least one WARC file")
	}
	runInputs, err := dedupInputs(ctx, e, fs, &mf.in)
	defer mf.in.close()
	if err != nil {
		return err
	}
	if err := checkOutDir("dedup run", *out, runInputs, *overwrite); err != nil {
		return err
	}
	pol, err := pf.policy(fs)
	if err != nil {
		return err
	}
	mopts, err := mf.options(fs)
	if err != nil {
		return err
	}
	defer mf.limitHeap(e)()
	opts := postdedup.RunOptions{Manifest: mopts, Resolve: postdedup.ResolveOptions{Policy: pol, MaxMemory: mopts.MaxMemory, TempDir: mopts.TempDir},
		Rewrite: postdedup.RewriteOptions{Jobs: mopts.Jobs, MaxMemory: mopts.MaxMemory, TempDir: mopts.TempDir},
		Validate: postdedup.ValidateOptions{Deep: *deep, Jobs: mopts.Jobs, MaxMemory: mopts.MaxMemory, TempDir: mopts.TempDir, OriginalDirs: ix.dirs,
			IndependentInflate: *independent},
		Replace: *replace}
	closeIx, err := ix.open(ctx, e, fs, &opts.Resolve)
	if err != nil {
		return err
	}
	defer closeIx()
	if *replace {
		ups, closeUps, err := rif.open(ctx, e, "dedup run", fs.Args())
		if err != nil {
			return err
		}
		defer closeUps()
		opts.ReplaceOptions.Indexes = ups
	}
	t0 := time.Now()
	if !*quiet {
		opts.Stage = func(name string) {
			fmt.Fprintf(e.stderr, "dedup: %s (%s)\n", name, time.Since(t0).Round(time.Millisecond))
		}
		opts.Manifest.Progress = fileProgress(e, "manifest")
		opts.Rewrite.Progress = func(done, total int, l postdedup.Layout) {
			fmt.Fprintf(e.stderr, "rewrite: %d/%d files, %s: %d revisits\n", done, total, l.Output, l.Revisits)
		}
	}
	if *replace && hasWACZ(runInputs) {
		return fs.usagef("dedup run: --replace cannot replace the WARC files inside a WACZ input")
	}
	runInputs, doneWACZ, err := openWACZInputs(ctx, "dedup run", runInputs, true)
	if err != nil {
		return err
	}
	defer doneWACZ()
	rep, err := postdedup.Run(ctx, runInputs, *out, opts)
	if *jsonOut {
		printJSON(e.stdout, rep)
	} else {
		printRun(e.stdout, rep, time.Since(t0))
	}
	if err != nil {
		return err
	}
	return tolerated(e, *tolerate, problemsErr("run", rep.Problems, e))
}

func printRun(w io.Writer, rep postdedup.RunReport, took time.Duration) {
	if rep.Resumed {
		fmt.Fprintln(w, "dedup run: finishing the interrupted replacement of validated outputs")
	} else {
		printResolve(w, rep.Resolve)
		fmt.Fprintf(w, "rewrite: %d files, %d revisits written\n", rep.Rewrite.Files, rep.Rewrite.Revisits)
		printValidate(w, rep.Validate)
	}
	if rep.Replace != nil {
		printReplace(w, *rep.Replace)
	}
	fmt.Fprintf(w, "dedup run: %d → %d bytes (%s), %d raw bytes read, %s\n", rep.InputBytes, rep.OutputBytes, percent(rep.InputBytes, rep.OutputBytes), rep.RawBytes, took.Round(time.Millisecond))
}

func runDedupAssess(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "dedup assess", "[--sample 10%] [flags] WARC...\n\nCount duplicate responses and bytes (same-URL and other-URL, per MIME type)\nand project the saving, without rewriting anything. Digest matches are taken\nat their word here; resolve compares bytes.")
	sample := fs.String("sample", "", "assess only this share of the digest space (whole clusters, so ratios stay unbiased), e.g. 10%")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	fs.quietFlag() // assess prints no progress; -q is taken as everywhere
	var pf policyFlags
	pf.register(fs)
	var mf manifestFlags
	mf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 && !mf.in.given() {
		return fs.usagef("dedup assess: no WARC files")
	}
	assessInputs, err := dedupInputs(ctx, e, fs, &mf.in)
	defer mf.in.close()
	if err != nil {
		return err
	}
	pol, err := pf.policy(fs)
	if err != nil {
		return err
	}
	mopts, err := mf.options(fs)
	if err != nil {
		return err
	}
	defer mf.limitHeap(e)()
	if *sample != "" {
		v, err := strconv.ParseFloat(strings.TrimSuffix(*sample, "%"), 64)
		if err != nil || v <= 0 || v > 100 {
			return fs.usagef("dedup assess: --sample %q: want a percentage in (0, 100]", *sample)
		}
		if strings.HasSuffix(*sample, "%") || v > 1 {
			v /= 100
		}
		mopts.Sample = v
	}
	a, err := postdedup.Assess(ctx, assessInputs, postdedup.AssessOptions{Manifest: mopts, Policy: pol})
	if err != nil {
		return err
	}
	if *jsonOut {
		return printJSON(e.stdout, a)
	}
	w := e.stdout
	fmt.Fprintf(w, "assess: %d files, %d stored bytes, %d raw bytes", a.Files, a.StoredBytes, a.RawBytes)
	switch {
	case a.Sample > 0 && a.Sample < 1:
		fmt.Fprintf(w, " (sample: %.1f%% of the digest space; counts below are the sample's)", a.Sample*100)
	case a.Exact:
		fmt.Fprintf(w, " (read whole, not sampled: the inputs are small; the figures are exact)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  responses                %d (%d payload bytes)\n", a.Responses, a.PayloadBytes)
	fmt.Fprintf(w, "  duplicates               %d (%d payload bytes, %d stored bytes)\n", a.Duplicates, a.DupPayload, a.DupStored)
	fmt.Fprintf(w, "    same URL / other URL   %d / %d\n", a.SameURL, a.OtherURL)
	if a.SavingError > 0 {
		fmt.Fprintf(w, "  projected saving         %d ± %d stored bytes (%.1f%% ± %.1f%%, 95%% confidence, from the sample)\n",
			a.ProjectedSaving, a.SavingError, a.ProjectedSavingRatio*100, a.SavingErrorRatio*100)
	} else {
		fmt.Fprintf(w, "  projected saving         %d stored bytes (%.1f%%)\n", a.ProjectedSaving, a.ProjectedSavingRatio*100)
	}
	mimes := make([]string, 0, len(a.ByMIME))
	for k := range a.ByMIME {
		mimes = append(mimes, k)
	}
	sort.Slice(mimes, func(i, j int) bool { return a.ByMIME[mimes[i]].PayloadBytes > a.ByMIME[mimes[j]].PayloadBytes })
	for _, k := range mimes {
		fmt.Fprintf(w, "  %-24s %6d duplicates, %d payload bytes\n", k, a.ByMIME[k].Duplicates, a.ByMIME[k].PayloadBytes)
	}
	for _, k := range sortedKeys(a.Kept) {
		fmt.Fprintf(w, "  kept as is: %-12s %d\n", k, a.Kept[k])
	}
	for _, p := range a.BadInput {
		fmt.Fprintf(w, "  bad input: %s\n", p)
	}
	return problemsErr("assess", a.Problems, e)
}

// moreManifests moves the manifest files among args into mans and returns
// the other arguments, in order: `--manifest A B C plan1 plan2` (the
// README's form for the parts of one manifest) works as well as
// `--manifest A --manifest B ...`. A manifest is told by its content (its
// first line is a manifest header line), never by its name.
func moreManifests(mans *stringList, args []string) []string {
	if len(*mans) == 0 {
		return args
	}
	var rest []string
	for _, a := range args {
		if isManifest(a) {
			*mans = append(*mans, a)
		} else {
			rest = append(rest, a)
		}
	}
	return rest
}

// isManifest reports whether the file at path starts as a dedup manifest:
// "#wayside-dedup-manifest", or the "#file"/"#problem" lines sorted
// before it.
func isManifest(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, _ := io.ReadFull(f, buf)
	head := string(buf[:n])
	for _, p := range []string{"#wayside-dedup-manifest\t", "#file\t", "#problem\t"} {
		if strings.HasPrefix(head, p) {
			return true
		}
	}
	return false
}

// checkOutDir checks the files a rewrite will write into outDir (one per
// input, of the same base name) with the one output check: none may be an
// input (an outDir that is the inputs' directory under another name
// included), and a file already there is replaced only if an earlier dedup
// run or rewrite made it (outDir holds its state directory) or with
// --overwrite.
func checkOutDir(cmd, outDir string, inputs []string, overwrite bool) error {
	if fi, err := os.Stat(outDir); err != nil || !fi.IsDir() {
		return nil // created by the stage (or refused by it: not a directory)
	}
	if _, err := os.Stat(filepath.Join(outDir, postdedup.StateDir)); err == nil {
		overwrite = true // outputs of an earlier run of the stage
	}
	outs := make([]outFile, 0, len(inputs))
	seen := map[string]bool{}
	for _, in := range inputs {
		p := filepath.Join(outDir, filepath.Base(in))
		if !seen[p] {
			seen[p] = true
			outs = append(outs, outFile{"-o " + outDir + ":", p})
		}
	}
	return checkOutput(cmd, inputs, overwrite, outs...)
}
