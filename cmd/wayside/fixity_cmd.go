package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"

	"github.com/wayside-archive/wayside/fixity"
	"github.com/wayside-archive/wayside/fixity/merkle"
	"github.com/wayside-archive/wayside/internal/excerpt"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/wacz"
)

const fixityUsage = `<command> [flags] [args]

commands:
  replay  URI-M              replay one memento in headless Chromium and print its manifest (--evidence DIR keeps WARCs)
  compare A.json B.json      classify the change between two manifests of one URI-M (--bytes: what differs, from evidence)
  verify  MANIFEST...        recompute both roots offline (no browser), check them and any evidence digests (FILE.wacz: the manifest it carries)
  sweep   [URI-M...]         replay a list (args, --list FILE, or stdin) into a history store
  report                     write an HTML (or --json) report of a history store
  accept  URI-M ROOT         add a root to the accepted-state set of a memento

Archives come from --config FILE (YAML or JSON: archives: [{name, hosts, exclude: [{pattern, reason}], no_raw}])
or from --archive [name=]host[,alias...] (repeatable).`

// runFixity dispatches the fixity subcommands.
func runFixity(ctx context.Context, e *env, args []string) error {
	noCtx := func(f func(*env, []string) error) func(context.Context, *env, []string) error {
		return func(_ context.Context, e *env, args []string) error { return f(e, args) }
	}
	return runGroup(ctx, e, "fixity", fixityUsage, args, []subcommand{
		{"replay", fixityReplayCmd}, {"compare", noCtx(fixityCompareCmd)}, {"verify", noCtx(fixityVerifyCmd)},
		{"sweep", fixitySweepCmd}, {"report", noCtx(fixityReportCmd)}, {"accept", noCtx(fixityAcceptCmd)}})
}

// fixityArchiveFlags are the flags that configure archives and the browser.
type fixityArchiveFlags struct {
	config   string
	archives fixityListFlag
	chromium string
	idle     time.Duration
	hardCap  time.Duration
	rawWait  time.Duration
	fresh    bool
	verbose  bool
	quiet    quietOrIdle
}

// quietOrIdle is fixity's -q/--quiet. It is quiet as everywhere else
// (Info logs off); before, --quiet was the network idle period, now --idle.
// A duration given to --quiet still sets --idle, with a deprecation note.
type quietOrIdle struct {
	quiet      bool
	idle       *time.Duration
	deprecated string // the duration given to --quiet, if any
}

func (q *quietOrIdle) IsBoolFlag() bool { return true }
func (q *quietOrIdle) String() string {
	if q == nil {
		return "false"
	}
	return strconv.FormatBool(q.quiet)
}
func (q *quietOrIdle) Set(s string) error {
	if b, err := strconv.ParseBool(s); err == nil {
		q.quiet = b
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want true or false (a duration is the deprecated spelling of --idle)")
	}
	*q.idle, q.deprecated = d, s
	return nil
}

// fixityArgs rewrites the deprecated "--quiet DURATION" (the duration as
// the next argument) into "--quiet=DURATION", which quietOrIdle takes.
func fixityArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--quiet" || a == "-quiet" || a == "-q" || a == "--q") && i+1 < len(args) {
			if _, err := time.ParseDuration(args[i+1]); err == nil {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// parse parses a fixity subcommand's flags and notes the deprecated
// --quiet DURATION.
func (f *fixityArchiveFlags) parse(e *env, fs *flagSet, args []string) error {
	if err := fs.Parse(fixityArgs(args)); err != nil {
		return err
	}
	if f.quiet.deprecated != "" {
		fmt.Fprintf(e.stderr, "wayside: %s: --quiet %s is deprecated: use --idle %s (--quiet now means -q, as in every command)\n",
			fs.name, f.quiet.deprecated, f.quiet.deprecated)
	}
	return nil
}

// logger is the replays' logger: Info and up, Debug with -v, Warn and up
// with -q.
func (f *fixityArchiveFlags) logger(e *env) *slog.Logger {
	switch {
	case f.verbose:
		return e.loggerAt(slog.LevelDebug)
	case f.quiet.quiet:
		return e.loggerAt(slog.LevelWarn)
	}
	return e.loggerAt(slog.LevelInfo)
}

type fixityListFlag []string

func (l *fixityListFlag) String() string     { return strings.Join(*l, " ") }
func (l *fixityListFlag) Set(s string) error { *l = append(*l, s); return nil }

func (f *fixityArchiveFlags) register(fs *flagSet) {
	fs.StringVar(&f.config, "config", "", "archive configuration file (YAML or JSON)")
	fs.Var(&f.archives, "archive", "archive as [name=]host[,alias...] (repeatable)")
	fs.StringVar(&f.chromium, "chromium", "", "Chromium binary (default: from PATH, else /usr/bin/chromium)")
	fs.DurationVar(&f.idle, "idle", 750*time.Millisecond, "network idle period that ends a page load")
	fs.DurationVar(&f.hardCap, "cap", 30*time.Second, "hard cap on one page load")
	fs.DurationVar(&f.rawWait, "raw-timeout", 20*time.Second, "timeout of each raw (id_) fetch")
	fs.BoolVar(&f.fresh, "fresh-browser", false, "start a new browser process per replay (default: a new incognito profile per replay)")
	fs.BoolVar(&f.verbose, "v", false, "debug logging")
	f.quiet.idle = &f.idle
	fs.Var(&f.quiet, "q", "quiet: warnings and errors only")
	fs.Var(&f.quiet, "quiet", "same as -q (a duration here is the deprecated spelling of --idle)")
	fs.atLeast("idle", float64(time.Millisecond))
	fs.atLeast("cap", float64(time.Millisecond))
	fs.atLeast("raw-timeout", float64(time.Millisecond))
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
		Config: cfg, ExecPath: f.chromium, Quiet: f.idle, HardCap: f.hardCap, RawTimeout: f.rawWait,
		FreshBrowser: f.fresh, Logger: f.logger(e),
	})
}

func fixityReplayCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "fixity replay", "[flags] URI-M\n\n"+
		"Replays one memento and prints (or writes, -o) its manifest. The exit status\n"+
		"is 1, after the manifest is written, when the archive answered the URI-M\n"+
		"with an error status (404: no memento there) or the replay met transient\n"+
		"errors (5xx, timeouts): such a root must not be compared.")
	var af fixityArchiveFlags
	af.register(fs)
	out := fs.String("o", "", "write the manifest to this file (atomically; default stdout)")
	evidence := fs.String("evidence", "", "keep the replay as evidence WARCs in this new directory (rewritten/ and raw/)")
	overwrite := overwriteFlag(fs)
	if err := af.parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fs.usagef("fixity replay: want exactly one URI-M")
	}
	if err := checkOutput("fixity replay", []string{af.config}, *overwrite, outFile{"-o", *out}); err != nil {
		return err
	}
	var opts []fixity.ReplayOption
	if *evidence != "" {
		if ents, err := os.ReadDir(*evidence); err == nil && len(ents) > 0 {
			return fs.usagef("fixity replay: --evidence %s: directory is not empty", *evidence)
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
	where := "stdout"
	if *out != "" {
		if err := fsutil.WriteFileAtomic(*out, 0o644, func(w io.Writer) error { _, err := w.Write(m.Marshal()); return err }); err != nil {
			return fmt.Errorf("fixity replay: %w", err)
		}
		fmt.Fprintf(e.stdout, "%s %s\n", m.Root, *out)
		where = *out
	} else if _, err := e.stdout.Write(m.Marshal()); err != nil {
		return err
	}
	return replayOutcome(m, where)
}

// replayOutcome is the error of a replay whose root must not be trusted:
// the URI-M itself answered with an error status, or the replay met
// transient errors. The manifest (written to where) records it.
func replayOutcome(m *fixity.Manifest, where string) error {
	if why, _ := m.Unusable(); why != "" {
		return fmt.Errorf("fixity replay: %s: %s; do not compare this root (manifest: %s)", m.URIM, why, where)
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
		return fs.usagef("fixity compare: want two manifest files")
	}
	if err := checkInputs("fixity compare", fs.Args()); err != nil {
		return err
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
	fs := newFlagSet(e, "fixity verify", "[--json] MANIFEST...\n\nA FILE.wacz stands for the fixity manifest it carries (wayside/fixity-manifest.json).")
	asJSON := fs.Bool("json", false, "print one JSON result per manifest")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fs.usagef("fixity verify: want at least one manifest file")
	}
	if err := checkInputs("fixity verify", fs.Args()); err != nil {
		return err
	}
	enc := json.NewEncoder(e.stdout)
	var errs []error
	for _, p := range fs.Args() {
		var m *fixity.Manifest
		var err error
		var note string
		if hasWACZ([]string{p}) {
			m, err = waczFixityManifest(p)
			note = " (the manifest of a WACZ: its evidence is not in it)"
		} else {
			m, err = fixity.ReadManifest(p)
		}
		if err == nil {
			err = fixity.Verify(m)
		}
		if err == nil && !hasWACZ([]string{p}) {
			note, err = fixity.VerifyEvidence(m, p)
		}
		if err != nil {
			errs = append(errs, err)
			if *asJSON {
				enc.Encode(verifyResult{Manifest: p, OK: false, Error: err.Error()})
			} else {
				fmt.Fprintf(e.stdout, "FAIL %s\n", p)
			}
			continue
		}
		a1 := fixity.ComputeAlgorithm1(m)
		if *asJSON {
			enc.Encode(verifyResult{Manifest: p, OK: true, Root: m.Root.String(), Algorithm1: a1.Root.String(), Evidence: strings.TrimSpace(note)})
		} else {
			fmt.Fprintf(e.stdout, "ok   %s algorithm1 %s %s%s\n", m.Root, a1.Root, p, note)
		}
	}
	if len(errs) > 0 && len(errs) < fs.NArg() {
		return fmt.Errorf("fixity verify: %d of %d manifests failed: %w", len(errs), fs.NArg(), errors.Join(errs...))
	}
	return errors.Join(errs...)
}

// waczFixityManifest reads the fixity manifest a WACZ carries
// (wayside/fixity-manifest.json, `wacz create --fixity`), after wacz.Open's
// checks.
func waczFixityManifest(p string) (*fixity.Manifest, error) {
	a, err := wacz.Open(p, wacz.Limits{})
	if err != nil {
		return nil, fmt.Errorf("fixity verify: %w", err)
	}
	defer a.Close()
	const member = "wayside/fixity-manifest.json"
	if !a.Has(member) {
		return nil, fmt.Errorf("fixity verify: %s: no fixity manifest in the WACZ (%s: wacz create --fixity adds one)", p, member)
	}
	b, err := a.ReadSmall(member)
	if err != nil {
		return nil, fmt.Errorf("fixity verify: %w", err)
	}
	return fixity.ParseManifest(b, p+"#"+member)
}

// verifyResult is one line of `fixity verify --json`.
type verifyResult struct {
	Manifest   string `json:"manifest"`
	OK         bool   `json:"ok"`
	Root       string `json:"root,omitempty"`
	Algorithm1 string `json:"algorithm1,omitempty"`
	Evidence   string `json:"evidence,omitempty"`
	Error      string `json:"error,omitempty"`
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
		if strings.ContainsAny(s, " \t") || strings.ContainsFunc(s, unicode.IsControl) {
			return nil, fmt.Errorf("fixity sweep: %s line %d: %s is not one URI-M", name, line, excerpt.Quote(s, 120))
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
	asJSON := fs.Bool("json", false, "print each sweep's result as JSON")
	overwrite := overwriteFlag(fs)
	fs.within("parallel", 1, 64)
	fs.atLeast("retries", 0)
	fs.rule("accept-after", func(fl *flag.Flag) error {
		if fl.Value.String() == "0" {
			return fmt.Errorf("must be at least 1, or negative for never, not 0")
		}
		return nil
	})
	fs.atLeast("evidence-max", 1)
	if err := af.parse(e, fs, args); err != nil {
		return err
	}
	if *store == "" {
		return fs.usagef("fixity sweep: --store is required")
	}
	retention, err := fixity.ParseRetention(*evidence)
	if err != nil {
		return fs.usagef("fixity sweep: --evidence: %v", err)
	}
	if *retries == 0 {
		*retries = -1 // the sweeper's "no retries" (0 is its default, 2)
	}
	if err := checkOutput("fixity sweep", append(storeFiles(*store), af.config, *list), *overwrite, outFile{"--report", *reportPath}); err != nil {
		return err
	}
	var sched cron.Schedule
	if *schedule != "" {
		s, err := cron.ParseStandard(*schedule)
		if err != nil {
			return fs.usagef("fixity sweep: --schedule %q: %v", *schedule, err)
		}
		sched = s
	}
	urims := fs.Args()
	if *list != "" {
		if err := checkInputs("fixity sweep", []string{*list}); err != nil {
			return err
		}
	}
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
		return fs.usagef("fixity sweep: no URI-M to sweep")
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
	log := af.logger(e)
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
		if *asJSON {
			if jerr := printJSON(e.stdout, res); jerr != nil {
				return jerr
			}
		} else {
			fmt.Fprintf(e.stdout, "sweep %s: %d mementos, %d changed, %d failed, classes: %s, %.1fs, evidence kept %d bytes\n",
				res.Sweep, res.Total, res.Changed, res.Failed, classCounts(res.ByClass), res.Finished.Sub(res.Started).Seconds(), hist.EvidenceBytes())
		}
		if *reportPath != "" {
			if rerr := fixityWriteReport(hist, *reportPath); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		if ctx.Err() == nil {
			if oerr := sweepOutcome(e, res); err == nil {
				err = oerr
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

// classCounts spells a sweep's class counts: "none 3, transient 1".
func classCounts(m map[fixity.Class]int) string {
	if len(m) == 0 {
		return "(no replays)"
	}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, string(k))
	}
	sort.Strings(ks)
	for i, k := range ks {
		ks[i] = fmt.Sprintf("%s %d", k, m[fixity.Class(k)])
	}
	return strings.Join(ks, ", ")
}

// sweepOutcome is the error of a sweep some of whose mementos could not be
// replayed (failed, or still transient after the retries): their roots
// were not compared, so the sweep did not do what was asked for them.
func sweepOutcome(e *env, res fixity.SweepResult) error {
	transient, missing := res.ByClass[fixity.ClassTransient], res.ByClass[fixity.ClassMissing]
	bad := res.Failed + transient + missing
	if bad == 0 {
		return nil
	}
	for _, u := range res.Unchecked {
		class := string(u.Class)
		if class == "" {
			class = "failed"
		}
		fmt.Fprintf(e.stderr, "fixity sweep: not checked (%s): %s: %s\n", class, u.URIM, u.Reason)
	}
	what := "could not be checked (listed above)"
	if bad == res.Total {
		what = "could not be checked (listed above): no memento was checked"
	}
	return fmt.Errorf("fixity sweep: %d of %d mementos %s (failed %d, missing %d, transient %d after the retries)",
		bad, res.Total, what, res.Failed, missing, transient)
}

func fixityReportCmd(e *env, args []string) error {
	fs := newFlagSet(e, "fixity report", "--store DIR [-o FILE] [--json]")
	store := fs.String("store", "", "history store directory (required)")
	out := fs.String("o", "", "output file (written atomically; default stdout)")
	asJSON := fs.Bool("json", false, "write JSON instead of HTML")
	overwrite := overwriteFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *store == "" {
		return fs.usagef("fixity report: --store is required")
	}
	if err := checkInputDir("fixity report", "--store", *store); err != nil {
		return err
	}
	if err := checkOutput("fixity report", storeFiles(*store), *overwrite, outFile{"-o", *out}); err != nil {
		return err
	}
	recs, err := fixity.ReadHistory(*store) // no lock: works while a sweep runs
	if err != nil {
		return err
	}
	rep := fixity.BuildReport(recs, fixity.WithManifests(fixity.StoreManifests(*store)))
	write := rep.WriteHTML
	if *asJSON {
		write = rep.WriteJSON
	}
	if *out == "" {
		return write(e.stdout)
	}
	if err := fsutil.WriteFileAtomic(*out, 0o644, write); err != nil {
		return fmt.Errorf("fixity report: %w", err)
	}
	return nil
}

func fixityAcceptCmd(e *env, args []string) error {
	fs := newFlagSet(e, "fixity accept", "--store DIR [flags] URI-M ROOT")
	var af fixityArchiveFlags
	af.register(fs)
	store := fs.String("store", "", "history store directory (required)")
	if err := af.parse(e, fs, args); err != nil {
		return err
	}
	if *store == "" || fs.NArg() != 2 {
		return fs.usagef("fixity accept: want --store DIR, a URI-M and a root")
	}
	if err := checkInputDir("fixity accept", "--store", *store); err != nil {
		return err
	}
	cfg, err := af.configure()
	if err != nil {
		return err
	}
	root, err := merkle.ParseHash(fs.Arg(1))
	if err != nil {
		return fs.usagef("fixity accept: %v", err)
	}
	canon, isM := cfg.Canonical(fs.Arg(0))
	if !isM {
		return fs.usagef("fixity accept: %q is not a URI-M of a configured archive", fs.Arg(0))
	}
	hist, err := fixity.OpenHistory(*store, af.logger(e))
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

// storeFiles lists the files directly in the history store dir: inputs an
// output must not replace.
func storeFiles(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, d := range ents {
		if d.Type().IsRegular() {
			out = append(out, filepath.Join(dir, d.Name()))
		}
	}
	return out
}
