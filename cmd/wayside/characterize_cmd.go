package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/warcio"
)

const characterizeUsage = `[flags] FILE...
       wayside characterize query [flags] --format PUID[,PUID] | --container FILE | --risk LIST | --files

Identifies the format (PRONOM PUID, with siegfried's embedded signatures) of
every payload in the WARC files — response, resource and conversion records;
revisits inherit their original's — opening zip, gzip and tar containers and
WARC files found inside payloads, and prints a summary table per file.
Objects that are truncated, corrupt or over a limit get a note; UNKNOWN is a
result. With --store the results are kept (durably) for queries and later
runs skip records already stored.

--write-metadata writes, beside each WARC file (or in --metadata-dir), a WARC
file NAME.characterization.warc.gz holding one metadata record per
characterized response, resource and conversion record (WARC 1.1 Annex A):
WARC-Refers-To the record, the identification in an application/warc-fields
block. Revisits (their original has one) and ARC records (no record ID to
refer to) get none.

query answers from a store (--store) or a running daemon (--addr):
  --format fmt/18,fmt/19    WARC files holding these formats, with counts and bytes
  --container FILE          the formats inside one WARC file (--records: per record)
  --risk LIST               WARC files holding any format on LIST (PUIDs, or @FILE with one per line)
  --files                   every WARC file with its totals`

// charFlags are the identification limits shared by characterize and
// `cdxj --puid`.
type charFlags struct {
	maxDepth           int
	maxObjectMB, ratio float64
	workers            int
}

func (f *charFlags) register(fs *flagSet) {
	fs.IntVar(&f.maxDepth, "max-depth", characterize.DefaultLimits.MaxDepth, "container levels opened inside a payload")
	fs.Float64Var(&f.maxObjectMB, "max-object-mb", float64(characterize.DefaultLimits.MaxObject>>20), "`MB` of one object held and identified (larger ones are identified from their start)")
	fs.Float64Var(&f.ratio, "max-ratio", characterize.DefaultLimits.MaxRatio, "largest decompressed:compressed ratio accepted (decompression bombs)")
	fs.IntVar(&f.workers, "workers", runtime.NumCPU(), "identification goroutines")
	fs.atLeast("max-depth", 0)
	fs.atLeast("max-object-mb", 1.0/(1<<20)) // one byte
	fs.atLeast("max-ratio", 1)
	fs.atLeast("workers", 1)
}

// limits are the identification limits the flags give (checked by Parse).
func (f *charFlags) limits() characterize.Limits {
	return characterize.Limits{MaxDepth: f.maxDepth, MaxObject: int64(f.maxObjectMB * (1 << 20)), MaxRatio: f.ratio}
}

// openCharacterizer opens the engine, the store (dir "" = memory) and a
// Characterizer reading from dirs.
func openCharacterizer(f *charFlags, storeDir string, dirs []string, opts characterize.Options) (*characterize.Characterizer, *characterize.Store, error) {
	lim := f.limits()
	eng, err := characterize.NewEngine()
	if err != nil {
		return nil, nil, err
	}
	st, err := characterize.OpenStore(storeDir, characterize.StoreOptions{})
	if err != nil {
		return nil, nil, err
	}
	opts.Store, opts.Identifier, opts.Dirs, opts.Workers = st, characterize.NewIdentifier(eng, lim), dirs, f.workers
	c, err := characterize.New(opts)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return c, st, nil
}

func runCharacterize(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "query" {
		return runCharacterizeQuery(ctx, e, args[1:])
	}
	fs := newFlagSet(e, "characterize", characterizeUsage)
	var cf charFlags
	cf.register(fs)
	store := fs.String("store", "", "keep the results in `DIR` (created if needed) for queries; records already there are skipped")
	force := fs.Bool("force", false, "with --store, characterize records already stored again")
	jobs := fs.Int("j", 2, "read `N` files in parallel")
	quiet := fs.quietFlag()
	tolerate := tolerateFlag(fs)
	fs.atLeast("j", 1)
	asJSON := fs.Bool("json", false, "print the per-file reports as JSON")
	records := fs.Bool("records", false, "list every record (and nested object) with its format")
	writeMeta := fs.Bool("write-metadata", false, "write the identifications as WARC metadata records, to NAME"+characterize.MetadataSuffix+" beside each file")
	metaDir := fs.String("metadata-dir", "", "with --write-metadata, write the metadata files to `DIR` instead of beside the WARC files")
	var in inputFlags
	in.register(fs)
	overwrite := overwriteFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *metaDir != "" && !*writeMeta {
		return fs.usagef("characterize: --metadata-dir needs --write-metadata")
	}
	if fs.NArg() == 0 && !in.given() {
		return fs.usagef("characterize: no input files")
	}
	files, err := in.expand(ctx, e, "characterize", fs.Args())
	defer in.close()
	if err != nil {
		return err
	}
	if err := checkInputs("characterize", files); err != nil {
		return err
	}
	if *writeMeta && *metaDir == "" && hasWACZ(files) {
		return fs.usagef("characterize: --write-metadata of a WACZ input needs --metadata-dir (its WARC files are read from a temporary copy)")
	}
	if *writeMeta {
		// The metadata files are checked before the work, not after it.
		if *metaDir != "" {
			if err := checkInputDir("characterize", "--metadata-dir", *metaDir); err != nil {
				return err
			}
		}
		var outs []outFile
		for _, f := range files {
			outs = append(outs, outFile{"metadata of " + f, metadataPath(f, *metaDir)})
		}
		if err := checkOutput("characterize", files, *overwrite, uniqueOuts(outs)...); err != nil {
			return err
		}
	}
	files, doneWACZ, err := openWACZInputs(ctx, "characterize", files, false)
	if err != nil {
		return err
	}
	defer doneWACZ()
	c, st, err := openCharacterizer(&cf, *store, nil, characterize.Options{})
	if err != nil {
		return err
	}
	stats, problems, runErr := scanWARCs(ctx, e, c, files, *jobs, *quiet, *store != "" && !*force)
	if err := c.Close(); err != nil && runErr == nil {
		runErr = err
	}
	defer st.Close()
	if runErr != nil {
		return runErr
	}
	if err := printReports(e.stdout, st, stats, *asJSON, *records); err != nil {
		return err
	}
	if *writeMeta {
		tool := c.Identifier().Engine().Tool()
		if mp := writeMetadata(e, st, files, stats, *metaDir, tool, *asJSON); len(mp) > 0 {
			return reportProblems(e, "characterize", append(problems, mp...))
		}
	}
	return tolerated(e, *tolerate, reportProblems(e, "characterize", problems))
}

// writeMetadata writes the metadata file of each input file that was read,
// listing them on stdout (unless the reports are JSON); it returns the
// files it could not write.
func writeMetadata(e *env, st *characterize.Store, files []string, stats []characterize.FileStats, dir, tool string, quiet bool) []error {
	var problems []error
	done := map[string]bool{}
	for i, f := range files {
		name := stats[i].File
		if stats[i].Records == 0 || done[name] {
			continue // nothing read (or read under the same name already)
		}
		done[name] = true
		path := metadataPath(f, dir)
		ms, err := characterize.WriteMetadata(st, name, path, characterize.MetadataOptions{Identifier: tool})
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if !quiet {
			fmt.Fprintf(e.stdout, "%s: %d metadata records written to %s (left out: %d revisits, %d records without a record ID, %d empty payloads)\n",
				name, ms.Records, path, ms.Revisits, ms.NoID, ms.Empty)
		}
	}
	return problems
}

// scanWARCs characterizes files, jobs at a time, printing progress.
func scanWARCs(ctx context.Context, e *env, c *characterize.Characterizer, files []string, jobs int, quiet, skipStored bool) ([]characterize.FileStats, []error, error) {
	stats := make([]characterize.FileStats, len(files))
	probs := make([][]error, len(files))
	var raw, done atomic.Int64
	var firstErr error
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				st, err := c.ScanFile(ctx, files[i], skipStored, func(n int64) { raw.Add(n) })
				stats[i], probs[i] = st, st.Problems
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, characterize.ErrStoreClosed) {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
					}
					probs[i] = append(probs[i], err)
				}
				done.Add(1)
			}
		}()
	}
	start := time.Now()
	stop := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if !quiet {
					s := c.Stats()
					el := time.Since(start).Seconds()
					fmt.Fprintf(e.stderr, "wayside characterize: %d/%d files, %d records, %.0f MB read (%.1f MB/s)\n",
						done.Load(), len(files), s.Records, float64(raw.Load())/1e6, float64(raw.Load())/1e6/el)
				}
			}
		}
	}()
feed:
	for i := range files {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(stop)
	<-progressDone
	if err := ctx.Err(); err != nil {
		return stats, nil, err
	}
	var problems []error
	for _, p := range probs {
		problems = append(problems, p...)
	}
	return stats, problems, firstErr
}

// reportProblems lists problems on stderr and turns them into the exit
// status: the rest was done.
func reportProblems(e *env, cmd string, problems []error) error {
	for i, p := range problems {
		if i == 200 {
			fmt.Fprintf(e.stderr, "wayside %s: … and %d more\n", cmd, len(problems)-200)
			break
		}
		fmt.Fprintf(e.stderr, "wayside %s: %v\n", cmd, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %d unreadable records or files (listed above); everything else was characterized", cmd, len(problems))
	}
	return nil
}

func printReports(w io.Writer, st *characterize.Store, stats []characterize.FileStats, asJSON, records bool) error {
	var reps []characterize.ContainerReport
	seen := map[string]bool{}
	for _, s := range stats {
		if seen[s.File] {
			continue
		}
		seen[s.File] = true
		rep, ok := st.Report(s.File, records)
		if !ok {
			rep.Summary.File = s.File
		}
		reps = append(reps, rep)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(reps)
	}
	for _, r := range reps {
		printContainer(w, r)
	}
	if len(reps) > 1 {
		printTotals(w, st.Totals())
	}
	return nil
}

func printContainer(w io.Writer, r characterize.ContainerReport) {
	s := r.Summary
	fmt.Fprintf(w, "%s: %d records, %s of payloads, %d nested objects, %d empty, %d revisits (%d unresolved), %d with notes\n",
		s.File, s.Records, humanBytes(s.Bytes), s.Nested, s.Empty, s.Revisits, s.Unresolved, s.Noted)
	printAggregates(w, r.Formats, false)
	for _, rec := range r.Records {
		for _, o := range rec.Objects() {
			puid := o.PUID
			if puid == "" {
				puid = "-"
			}
			line := fmt.Sprintf("  %d\t%s\t%s", rec.Offset, puid, rec.DisplayPath(o))
			if rec.Unresolved {
				line += "\t(revisit: original not characterized)"
			} else if rec.Original != "" {
				line += "\t(revisit of " + rec.Original + ")"
			}
			if o.Note != "" {
				line += "\t[" + o.Note + "]"
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w)
}

func printAggregates(w io.Writer, aggs []characterize.Aggregate, withFile bool) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	if withFile {
		fmt.Fprint(tw, "FILE\t")
	}
	fmt.Fprintln(tw, "PUID\tFORMAT\tOBJECTS\tBYTES\tNESTED\tNESTED BYTES\tREVISITS\t")
	for _, a := range aggs {
		if withFile {
			fmt.Fprintf(tw, "%s\t", a.File)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", a.PUID, formatName(a), a.Objects, a.Bytes, a.NestedObjects, a.NestedBytes, a.Revisits)
	}
	tw.Flush()
}

func formatName(a characterize.Aggregate) string {
	n := strings.TrimSpace(a.Name + " " + a.Version)
	if len(n) > 40 {
		n = n[:39] + "…"
	}
	if n == "" {
		n = "-"
	}
	return n
}

func printTotals(w io.Writer, aggs []characterize.Aggregate) {
	fmt.Fprintln(w, "all files:")
	printAggregates(w, aggs, false)
}

// charQuerier answers characterization queries from a local store or a
// daemon.
type charQuerier interface {
	Formats(ctx context.Context, puids []string) ([]characterize.Aggregate, error)
	Container(ctx context.Context, file string, records bool) (characterize.ContainerReport, bool, error)
	Risk(ctx context.Context, puids []string) ([]characterize.RiskHit, error)
	Files(ctx context.Context) ([]characterize.FileSummary, error)
}

type localQuerier struct{ st *characterize.Store }

func (q localQuerier) Formats(_ context.Context, p []string) ([]characterize.Aggregate, error) {
	return q.st.Formats(p...), nil
}

func (q localQuerier) Container(_ context.Context, f string, rec bool) (characterize.ContainerReport, bool, error) {
	r, ok := q.st.Report(f, rec)
	return r, ok, nil
}

func (q localQuerier) Risk(_ context.Context, p []string) ([]characterize.RiskHit, error) {
	return q.st.Risk(p...), nil
}

func (q localQuerier) Files(context.Context) ([]characterize.FileSummary, error) {
	return q.st.Files(), nil
}

func runCharacterizeQuery(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "characterize query", "[flags] --format PUID[,PUID] | --container FILE | --risk LIST | --files")
	store := fs.String("store", "", "read the results kept in `DIR` by wayside characterize --store or wayside crawl --characterize")
	addr := fs.String("addr", "", "ask a running daemon instead: Unix socket path or http://127.0.0.1:PORT")
	tokenFile := fs.String("token-file", "", "file holding the daemon's TCP token (default $WAYSIDE_TOKEN)")
	format := fs.String("format", "", "comma-separated `PUIDs`: the WARC files holding them")
	container := fs.String("container", "", "a WARC `FILE` name: the formats inside it")
	risk := fs.String("risk", "", "comma-separated PUIDs, or @FILE (one a line, # comments): the WARC files holding any of them")
	files := fs.Bool("files", false, "every WARC file with its totals")
	records := fs.Bool("records", false, "with --container: list every record and nested object")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{*format != "", *container != "", *risk != "", *files} {
		if set {
			n++
		}
	}
	if n != 1 || fs.NArg() > 0 {
		return fs.usagef("characterize query: give exactly one of --format, --container, --risk, --files")
	}
	if (*store == "") == (*addr == "") {
		return fs.usagef("characterize query: give --store DIR or --addr ADDRESS")
	}
	var q charQuerier
	if *store != "" {
		if err := checkInputDir("characterize query", "--store", *store); err != nil {
			return err
		}
		st, err := characterize.OpenStore(*store, characterize.StoreOptions{})
		if err != nil {
			return err
		}
		defer st.Close()
		q = localQuerier{st}
	} else {
		c, err := dialDaemon(e, *addr, *tokenFile)
		if err != nil {
			return fmt.Errorf("characterize query: %w", err)
		}
		defer c.Close()
		q = remoteQuerier{c}
	}
	printJSON := func(v any) error {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	switch {
	case *format != "":
		puids := splitList(*format)
		aggs, err := q.Formats(ctx, puids)
		if err != nil {
			return fmt.Errorf("characterize query: %w", err)
		}
		if *asJSON {
			return printJSON(nonNil(aggs))
		}
		if len(aggs) == 0 {
			fmt.Fprintf(e.stdout, "no characterized WARC file holds %s\n", strings.Join(puids, ", "))
			return nil
		}
		printAggregates(e.stdout, aggs, true)
	case *container != "":
		rep, ok, err := q.Container(ctx, *container, *records)
		if err != nil {
			return fmt.Errorf("characterize query: %w", err)
		}
		if !ok {
			return fmt.Errorf("characterize query: %s has not been characterized", *container)
		}
		if *asJSON {
			return printJSON(rep)
		}
		printContainer(e.stdout, rep)
	case *risk != "":
		puids, err := riskList(*risk)
		if err != nil {
			return err
		}
		hits, err := q.Risk(ctx, puids)
		if err != nil {
			return fmt.Errorf("characterize query: %w", err)
		}
		if *asJSON {
			return printJSON(nonNil(hits))
		}
		if len(hits) == 0 {
			fmt.Fprintf(e.stdout, "no characterized WARC file holds any of the %d formats listed\n", len(puids))
			return nil
		}
		for _, h := range hits {
			parts := make([]string, 0, len(h.Formats))
			for _, a := range h.Formats {
				parts = append(parts, fmt.Sprintf("%s ×%d", a.PUID, a.Objects+a.NestedObjects+a.Revisits))
			}
			fmt.Fprintf(e.stdout, "%s\t%s\n", h.File, strings.Join(parts, ", "))
		}
	case *files:
		sums, err := q.Files(ctx)
		if err != nil {
			return fmt.Errorf("characterize query: %w", err)
		}
		if *asJSON {
			return printJSON(nonNil(sums))
		}
		tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "FILE\tRECORDS\tBYTES\tNESTED\tEMPTY\tREVISITS\tUNRESOLVED\tNOTED\t")
		for _, s := range sums {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.File, s.Records, s.Bytes, s.Nested, s.Empty, s.Revisits, s.Unresolved, s.Noted)
		}
		tw.Flush()
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// riskList reads a risk list: comma-separated PUIDs, or @FILE with one
// PUID a line (text after # ignored).
func riskList(v string) ([]string, error) {
	name, ok := strings.CutPrefix(v, "@")
	if !ok {
		return splitList(v), nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("characterize query: risk list: %w", err)
	}
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			if !strings.Contains(f, "/") && f != characterize.Unknown {
				return nil, fmt.Errorf("characterize query: risk list %s line %d: %q is not a PUID (fmt/N, x-fmt/N or UNKNOWN)", name, i+1, f)
			}
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("characterize query: risk list %s holds no PUID", name)
	}
	sort.Strings(out)
	return out, nil
}

// remoteQuerier asks a daemon's characterization routes.
type remoteQuerier struct{ c *client.Client }

func (q remoteQuerier) Formats(ctx context.Context, p []string) ([]characterize.Aggregate, error) {
	var res []characterize.Aggregate
	return res, q.c.GetJSON(ctx, api.PathCharFormats+"?"+url.Values{"puid": p}.Encode(), &res)
}

func (q remoteQuerier) Container(ctx context.Context, f string, rec bool) (characterize.ContainerReport, bool, error) {
	v := url.Values{"file": {f}}
	if rec {
		v.Set("records", "1")
	}
	var res characterize.ContainerReport
	err := q.c.GetJSON(ctx, api.PathCharContainer+"?"+v.Encode(), &res)
	return res, err == nil && res.Summary.File != "", err
}

func (q remoteQuerier) Risk(ctx context.Context, p []string) ([]characterize.RiskHit, error) {
	var res []characterize.RiskHit
	return res, q.c.GetJSON(ctx, api.PathCharRisk+"?"+url.Values{"puid": p}.Encode(), &res)
}

func (q remoteQuerier) Files(ctx context.Context) ([]characterize.FileSummary, error) {
	var res []characterize.FileSummary
	return res, q.c.GetJSON(ctx, api.PathCharFiles, &res)
}

// puidDecorator characterizes files in memory and returns a function
// adding each capture's PUID to its CDXJ line as an extra "puid" field
// (lines of records that are not characterized captures get none).
func puidDecorator(ctx context.Context, e *env, cf *charFlags, files []string, jobs int, quiet bool) (func(*cdxj.Line), error) {
	c, st, err := openCharacterizer(cf, "", nil, characterize.Options{})
	if err != nil {
		return nil, err
	}
	// Unreadable records are reported by the indexing pass that follows.
	_, _, err = scanWARCs(ctx, e, c, files, jobs, quiet, false)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return func(l *cdxj.Line) {
		r, ok := st.Get(l.Filename, l.Offset)
		if !ok || r.PUID == "" {
			return
		}
		v, _ := json.Marshal(r.PUID)
		l.Extra = append(l.Extra, cdxj.Field{Key: "puid", Value: v})
	}, nil
}

// characterizationSubdir is where `wayside crawl --characterize` keeps its
// results: beside the WARC files they describe.
const characterizationSubdir = "characterization"

// printCharacterized prints the crawl summary's characterization line.
func printCharacterized(w io.Writer, c *characterize.Characterizer, st *characterize.Store, dir string) {
	s := c.Stats()
	fmt.Fprintf(w, "  characterized        %d captures (%s), %d read back from their WARC files, %d formats in the store, %d failed; results in %s\n",
		s.Records, humanBytes(s.Bytes), s.ReadBack, len(st.Totals()), s.Failed, dir)
}

// metadataPath is where --write-metadata writes the metadata file of the
// input file f: beside it, or in dir.
func metadataPath(f, dir string) string {
	if dir == "" {
		dir = filepath.Dir(f)
	}
	return filepath.Join(dir, characterize.MetadataName(strings.TrimSuffix(filepath.Base(f), warcio.OpenSuffix)))
}

// uniqueOuts drops repeated paths (an input named twice has one metadata
// file).
func uniqueOuts(outs []outFile) []outFile {
	seen := map[string]bool{}
	var u []outFile
	for _, o := range outs {
		if !seen[o.path] {
			seen[o.path] = true
			u = append(u, o)
		}
	}
	return u
}
