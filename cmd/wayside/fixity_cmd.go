package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/wayside-archive/wayside/fixity"
	"github.com/wayside-archive/wayside/fixity/merkle"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

const fixityUsage = `<command> [flags] [args]

commands:
  replay  URI-M              replay one memento in headless Chromium and print its manifest (--evidence DIR keeps WARCs)
  compare A.json B.json      classify the change between two manifests of one URI-M (--bytes: what differs, from evidence)
  verify  MANIFEST...        recompute both roots offline (no browser), check them and any evidence digests
  sweep   [URI-M...]         replay a list (args, --list FILE, or stdin) into a history store
  report                     write an HTML (or --json) report of a history store
  accept  URI-M ROOT         add a root to the accepted-state set of a memento

Archives come from --config FILE (YAML or JSON: archives: [{name, hosts, exclude: [{pattern, reason}], no_raw}])
or from --archive [name=]host[,alias...] (repeatable).`

// runFixity dispatches the fixity subcommands.
func runFixity(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(e.stdout, "usage: wayside fixity %s\n", fixityUsage)
		if len(args) == 0 {
			return usagef("fixity: no command given")
		}
		return nil
	}
	switch args[0] {
	case "replay":
		return fixityReplayCmd(ctx, e, args[1:])
	case "compare":
		return fixityCompareCmd(e, args[1:])
	case "verify":
		return fixityVerifyCmd(e, args[1:])
	case "sweep":
		return fixitySweepCmd(ctx, e, args[1:])
	case "report":
		return fixityReportCmd(e, args[1:])
	case "accept":
		return fixityAcceptCmd(e, args[1:])
	}
	return usagef("fixity: unknown command %q (want replay, compare, verify, sweep, report or accept)", args[0])
}

// fixityArchiveFlags are the flags that configure archives and the browser.
type fixityArchiveFlags struct {
	config   string
	archives fixityListFlag
	chromium string
	quiet    time.Duration
	hardCap  time.Duration
	rawWait  time.Duration
	fresh    bool
	verbose  bool
}

type fixityListFlag []string

func (l *fixityListFlag) String() string     { return strings.Join(*l, " ") }
func (l *fixityListFlag) Set(s string) error { *l = append(*l, s); return nil }

func (f *fixityArchiveFlags) register(fs *flagSet) {
	fs.StringVar(&f.config, "config", "", "archive configuration file (YAML or JSON)")
	fs.Var(&f.archives, "archive", "archive as [name=]host[,alias...] (repeatable)")
	fs.StringVar(&f.chromium, "chromium", "", "Chromium binary (default: from PATH, else /usr/bin/chromium)")
	fs.DurationVar(&f.quiet, "quiet", 750*time.Millisecond, "network quiet period that ends a page load")
	fs.DurationVar(&f.hardCap, "cap", 30*time.Second, "hard cap on one page load")
	fs.DurationVar(&f.rawWait, "raw-timeout", 20*time.Second, "timeout of each raw (id_) fetch")
	fs.BoolVar(&f.fresh, "fresh-browser", false, "start a new browser process per replay (default: a new incognito profile per replay)")
	fs.BoolVar(&f.verbose, "v", false, "debug logging")
}

func (f *fixityArchiveFlags) configure() (*fixity.Config, error) {
	if f.config != "" && len(f.archives) > 0 {
		return nil, usagef("fixity: give --config or --archive, not both")
	}
	if f.config != "" {
		return fixity.LoadConfig(f.config)
	}
	if len(f.archives) == 0 {
		return nil, usagef("fixity: no archive configured: give --config FILE or --archive HOST")
	}
	var as []fixity.Archive
	for _, a := range f.archives {
		name, hosts, ok := strings.Cut(a, "=")
		if !ok {
			name, hosts = "", a
		}
		var hs []string
		for _, h := range strings.Split(hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hs = append(hs, h)
			}
		}
		as = append(as, fixity.Archive{Name: name, Hosts: hs})
	}
	return fixity.NewConfig(as...)
}

func (f *fixityArchiveFlags) replayer(e *env, cfg *fixity.Config) (*fixity.Replayer, error) {
	return fixity.NewReplayer(fixity.ReplayOptions{
		Config: cfg, ExecPath: f.chromium, Quiet: f.quiet, HardCap: f.hardCap, RawTimeout: f.rawWait,
		FreshBrowser: f.fresh, Logger: e.logger(f.verbose),
	})
}

func fixityReplayCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "fixity replay", "[flags] URI-M")
	var af fixityArchiveFlags
	af.register(fs)
	out := fs.String("o", "", "write the manifest to this file (default stdout)")
	evidence := fs.String("evidence", "", "keep the replay as evidence WARCs in this new directory (rewritten/ and raw/)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("fixity replay: want exactly one URI-M")
	}
	var opts []fixity.ReplayOption
	if *evidence != "" {
		if ents, err := os.ReadDir(*evidence); err == nil && len(ents) > 0 {
			return usagef("fixity replay: --evidence %s: directory is not empty", *evidence)
		}
		abs, err := filepath.Abs(*evidence)
		if err != nil {
			return fmt.Errorf("fixity replay: %w", err)
		}
		opts = append(opts, fixity.WithEvidence(abs))
	}
	cfg, err := af.configure()
	if err != nil {
		return err
	}
	rep, err := af.replayer(e, cfg)
	if err != nil {
		return err
	}
	defer rep.Close()
	m, err := rep.Replay(ctx, fs.Arg(0), opts...)
	if err != nil {
		return err
	}
	if m.Evidence != nil && *out != "" {
		// Evidence is referenced relative to the manifest file.
		od, err := filepath.Abs(filepath.Dir(*out))
		if err != nil {
			return fmt.Errorf("fixity replay: %w", err)
		}
		if rel, err := filepath.Rel(od, m.Evidence.Dir); err == nil {
			m.Evidence.Dir = filepath.ToSlash(rel)
		}
	}
	if *out != "" {
		if err := os.WriteFile(*out, m.Marshal(), 0o644); err != nil {
			return fmt.Errorf("fixity replay: %w", err)
		}
		fmt.Fprintf(e.stdout, "%s %s\n", m.Root, *out)
	} else {
		e.stdout.Write(m.Marshal())
	}
	if m.Context.Transient {
		fmt.Fprintf(e.stderr, "fixity replay: transient errors, do not compare this root: %s\n", strings.Join(m.Context.Errors, "; "))
	}
	return nil
}

func fixityCompareCmd(e *env, args []string) error {
	fs := newFlagSet(e, "fixity compare", "[--json] [--bytes] BEFORE.json AFTER.json")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	showBytes := fs.Bool("bytes", false, "show the bytes that differ in each changed resource, read from the replays' evidence WARCs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("fixity compare: want two manifest files")
	}
	a, err := fixity.ReadManifest(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := fixity.ReadManifest(fs.Arg(1))
	if err != nil {
		return err
	}
	for _, m := range []*fixity.Manifest{a, b} {
		if err := fixity.Verify(m); err != nil {
			return err
		}
	}
	ch := fixity.Compare(a, b)
	var diffs []fixity.BytesDiff
	if *showBytes {
		for _, r := range ch.Resources {
			diffs = append(diffs, fixity.DiffEvidence(a, fs.Arg(0), b, fs.Arg(1), r.Key)...)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if !*showBytes {
			return enc.Encode(ch)
		}
		return enc.Encode(struct {
			fixity.Change
			Bytes []fixity.BytesDiff `json:"bytes"`
		}{ch, diffs})
	}
	fmt.Fprintf(e.stdout, "class: %s\nbefore: %s\nafter:  %s\n", ch.Class, ch.Before, ch.After)
	if a.Context.Transient || b.Context.Transient {
		fmt.Fprintln(e.stdout, "note: a replay had transient errors; a sweep would not count this as a change")
	}
	for _, n := range ch.Notes {
		fmt.Fprintf(e.stdout, "note: %s\n", n)
	}
	for _, c := range ch.Checks {
		fmt.Fprintf(e.stdout, "check (%s): %s\n", c.When, c.Check)
	}
	for _, r := range ch.Resources {
		fmt.Fprintf(e.stdout, "  %-20s %s\n  %20s %s\n", r.Class, r.Key, "", r.Detail)
		for _, l := range r.Leaves {
			fmt.Fprintf(e.stdout, "  %20s leaf: %s\n", "", l)
		}
	}
	for _, d := range diffs {
		fmt.Fprintf(e.stdout, "bytes %s [%s]:\n", d.Key, d.Side)
		if d.Error != "" {
			fmt.Fprintf(e.stdout, "  no evidence to compare: %s\n", d.Error)
			continue
		}
		fmt.Fprintf(e.stdout, "  before %s: %d bytes sha256 %s\n  after  %s: %d bytes sha256 %s\n", d.Before, d.BeforeLength, d.BeforeSHA256, d.After, d.AfterLength, d.AfterSHA256)
		for _, l := range d.Headers {
			fmt.Fprintf(e.stdout, "  header %s\n", l)
		}
		if d.FirstDiff >= 0 {
			fmt.Fprintf(e.stdout, "  bodies differ from byte %d\n", d.FirstDiff)
		}
		for _, l := range append(d.Lines, d.Hex...) {
			fmt.Fprintf(e.stdout, "  %s\n", l)
		}
	}
	return nil
}

func fixityVerifyCmd(e *env, args []string) error {
	fs := newFlagSet(e, "fixity verify", "MANIFEST...")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("fixity verify: want at least one manifest file")
	}
	var errs []error
	for _, p := range fs.Args() {
		m, err := fixity.ReadManifest(p)
		if err == nil {
			err = fixity.Verify(m)
		}
		var note string
		if err == nil {
			note, err = fixity.VerifyEvidence(m, p)
		}
		if err != nil {
			errs = append(errs, err)
			fmt.Fprintf(e.stdout, "FAIL %s\n", p)
			continue
		}
		a1 := fixity.ComputeAlgorithm1(m)
		fmt.Fprintf(e.stdout, "ok   %s algorithm1 %s %s%s\n", m.Root, a1.Root, p, note)
	}
	return errors.Join(errs...)
}

// fixityReadList reads URI-Ms, one per line ('#' comments and blank lines
// skipped), naming file and line in errors.
func fixityReadList(r io.Reader, name string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if strings.ContainsAny(s, " \t") {
			return nil, fmt.Errorf("fixity sweep: %s line %d: %q is not one URI-M", name, line, s)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fixity sweep: read %s: %w", name, err)
	}
	return out, nil
}

func fixitySweepCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "fixity sweep", "--store DIR [flags] [URI-M...]")
	var af fixityArchiveFlags
	af.register(fs)
	store := fs.String("store", "", "history store directory (required)")
	list := fs.String("list", "", "file of URI-Ms, one per line ('-' for stdin; default stdin when no URI-M is given)")
	parallel := fs.Int("parallel", 2, "pages replayed at once")
	retries := fs.Int("retries", 2, "retries of a transient replay (5xx, timeout, browser crash)")
	acceptAfter := fs.Int("accept-after", 2, "accept a root as a known state once seen this many times (negative: never)")
	schedule := fs.String("schedule", "", "cron expression (e.g. \"0 3 * * *\" or \"@every 6h\"): keep sweeping until interrupted")
	reportPath := fs.String("report", "", "after each sweep, rewrite this HTML report of the store")
	evidence := fs.String("evidence", "none", "keep replays as evidence WARCs: keep-all, on-change (first replay and every root change) or none")
	evidenceMax := fs.Int64("evidence-max", fixity.DefaultEvidenceMaxBytes, "evidence budget of the store in bytes; the oldest evidence is evicted beyond it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *store == "" {
		return usagef("fixity sweep: --store is required")
	}
	retention, err := fixity.ParseRetention(*evidence)
	if err != nil {
		return usagef("fixity sweep: --evidence: %v", err)
	}
	if *evidenceMax <= 0 {
		return usagef("fixity sweep: --evidence-max must be positive")
	}
	var sched cron.Schedule
	if *schedule != "" {
		s, err := cron.ParseStandard(*schedule)
		if err != nil {
			return usagef("fixity sweep: --schedule %q: %v", *schedule, err)
		}
		sched = s
	}
	urims := fs.Args()
	if *list != "" || len(urims) == 0 {
		var r io.Reader = e.stdin
		name := "stdin"
		if *list != "" && *list != "-" {
			f, err := os.Open(*list)
			if err != nil {
				return fmt.Errorf("fixity sweep: %w", err)
			}
			defer f.Close()
			r, name = f, *list
		}
		more, err := fixityReadList(r, name)
		if err != nil {
			return err
		}
		urims = append(urims, more...)
	}
	if len(urims) == 0 {
		return usagef("fixity sweep: no URI-M to sweep")
	}
	cfg, err := af.configure()
	if err != nil {
		return err
	}
	for _, u := range urims {
		if _, _, err := cfg.CheckTarget(u); err != nil {
			return err
		}
	}
	log := e.logger(af.verbose)
	hist, err := fixity.OpenHistory(*store, log)
	if err != nil {
		return err
	}
	defer hist.Close()
	rep, err := af.replayer(e, cfg)
	if err != nil {
		return err
	}
	defer rep.Close()
	sw, err := fixity.NewSweeper(fixity.SweeperOptions{Replayer: rep, Config: cfg, History: hist,
		Parallel: *parallel, Retries: *retries, AcceptAfter: *acceptAfter, Evidence: retention, EvidenceMaxBytes: *evidenceMax, Logger: log})
	if err != nil {
		return err
	}
	once := func() error {
		res, err := sw.Run(ctx, urims)
		fmt.Fprintf(e.stdout, "sweep %s: %d mementos, %d changed, %d failed, classes %v, %.1fs, evidence kept %d bytes\n",
			res.Sweep, res.Total, res.Changed, res.Failed, res.ByClass, res.Finished.Sub(res.Started).Seconds(), hist.EvidenceBytes())
		if *reportPath != "" {
			if rerr := fixityWriteReport(hist, *reportPath); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		return err
	}
	if sched == nil {
		return once()
	}
	for {
		next := sched.Next(time.Now())
		log.Info("fixity: next sweep", "at", next.Format(time.RFC3339))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(next)):
		}
		if err := once(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("fixity: sweep ended with an error; the schedule continues", "err", err)
		}
	}
}

func fixityReportCmd(e *env, args []string) error {
	fs := newFlagSet(e, "fixity report", "--store DIR [-o FILE] [--json]")
	store := fs.String("store", "", "history store directory (required)")
	out := fs.String("o", "", "output file (default stdout)")
	asJSON := fs.Bool("json", false, "write JSON instead of HTML")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *store == "" {
		return usagef("fixity report: --store is required")
	}
	recs, err := fixity.ReadHistory(*store) // no lock: works while a sweep runs
	if err != nil {
		return err
	}
	rep := fixity.BuildReport(recs, fixity.WithManifests(fixity.StoreManifests(*store)))
	w := e.stdout
	if *out != "" {
		f, err := os.Create(filepath.Clean(*out))
		if err != nil {
			return fmt.Errorf("fixity report: %w", err)
		}
		defer f.Close()
		w = f
	}
	if *asJSON {
		return rep.WriteJSON(w)
	}
	return rep.WriteHTML(w)
}

func fixityAcceptCmd(e *env, args []string) error {
	fs := newFlagSet(e, "fixity accept", "--store DIR [flags] URI-M ROOT")
	var af fixityArchiveFlags
	af.register(fs)
	store := fs.String("store", "", "history store directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *store == "" || fs.NArg() != 2 {
		return usagef("fixity accept: want --store DIR, a URI-M and a root")
	}
	cfg, err := af.configure()
	if err != nil {
		return err
	}
	root, err := merkle.ParseHash(fs.Arg(1))
	if err != nil {
		return usagef("fixity accept: %v", err)
	}
	canon, isM := cfg.Canonical(fs.Arg(0))
	if !isM {
		return usagef("fixity accept: %q is not a URI-M of a configured archive", fs.Arg(0))
	}
	hist, err := fixity.OpenHistory(*store, e.logger(false))
	if err != nil {
		return err
	}
	defer hist.Close()
	if err := hist.Accept(canon, root, "operator"); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "accepted %s for %s\n", root, canon)
	return nil
}

// fixityWriteReport writes the HTML report of hist to path atomically.
func fixityWriteReport(hist *fixity.History, path string) error {
	recs, err := hist.ReadRecords()
	if err != nil {
		return err
	}
	rep := fixity.BuildReport(recs, fixity.WithManifests(hist.LoadManifest))
	if err := fsutil.WriteFileAtomic(path, 0o644, rep.WriteHTML); err != nil {
		return fmt.Errorf("fixity sweep: report: %w", err)
	}
	return nil
}
