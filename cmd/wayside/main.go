// Command wayside is the single Wayside binary: a crawler with crawl-time
// deduplication, WARC indexing, MementoMaps, replay fixity and the sidecar
// daemon, as subcommands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/wayside-archive/wayside/consumers"
)

func main() {
	os.Exit(runProcess(os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}))
}

// runProcess runs one command as the process does, SIGINT and SIGTERM
// cancelling its context, and returns the exit status (report).
func runProcess(args []string, e *env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, args, e)
	interrupted := ctx.Err() != nil
	stop()
	return report(e.stderr, err, interrupted)
}

// Exit statuses, the same for every subcommand.
const (
	exitOK          = 0
	exitFailure     = 1 // failure or partial failure (a summary says what failed)
	exitUsage       = 2 // bad command line
	exitInterrupted = 130
)

// errCleanStop is returned by a daemon that a signal told to stop and that
// shut down cleanly: that is its normal end, exit 0.
var errCleanStop = errors.New("stopped cleanly")

// report prints the outcome of run as one line on w (and, for usage errors,
// a hint to -h) and returns the exit status.
func report(w io.Writer, err error, interrupted bool) int {
	var ue usageError
	switch {
	case err == nil && !interrupted, errors.Is(err, flag.ErrHelp), errors.Is(err, errCleanStop):
		return exitOK
	case interrupted:
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(w, "wayside: interrupted:", err)
		} else {
			fmt.Fprintln(w, "wayside: interrupted")
		}
		return exitInterrupted
	case errors.As(err, &ue):
		fmt.Fprintln(w, "wayside:", oneLine(err.Error()))
		if ue.cmd != "" {
			fmt.Fprintf(w, "Run 'wayside %s -h' for usage.\n", ue.cmd)
		} else {
			fmt.Fprintln(w, "Run 'wayside -h' for usage.")
		}
		return exitUsage
	default:
		fmt.Fprintln(w, "wayside:", oneLine(err.Error()))
		return exitFailure
	}
}

// oneLine keeps an error message on one line (multi-line summaries are
// printed by the subcommand itself before it returns).
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// env is what a subcommand may touch of the process: no subcommand reads
// os.Args, os.Stdout or the environment directly, so tests run them in-process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string

	// consumers, set by tests only, adds consumers (Extra) to those a
	// crawl runs and sets their queue size and drain timeout.
	consumers consumers.Config

	// flagAudit, set by tests only, is called by every flag set's Parse
	// with the numeric flags that declared no range and the flags whose
	// default breaks their own rule (see flagcheck.go).
	flagAudit func(cmd string, unranged, badDefaults []string)
}

// logger returns a text logger on stderr at the given level.
func (e *env) logger(verbose bool) *slog.Logger {
	lvl := slog.LevelInfo
	if verbose {
		lvl = slog.LevelDebug
	}
	return e.loggerAt(lvl)
}

// loggerAt returns a text logger on stderr at level lvl.
func (e *env) loggerAt(lvl slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: lvl}))
}

// usageError marks errors caused by bad command-line usage (exit status 2).
// cmd names the subcommand whose -h the hint points to.
type usageError struct{ msg, cmd string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, a ...any) error { return usageError{msg: fmt.Sprintf(format, a...)} }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	cs := []command{
		{"access", "manage and check access rules (pywb .aclj): allow, block, exclude, embargo", runAccess},
		{"aggregate", "ask only the archives whose MementoMap may hold a URI-R; evaluate the routing", runAggregate},
		{"backup", "take a consistent snapshot of every store of a running daemon", runBackup},
		{"crawl", "crawl URLs into WARC files with crawl-time deduplication", runCrawl},
		{"dedup", "post-crawl deduplication of existing WARC collections, validated before anything is replaced", runDedup},
		{"demo", "crawl a built-in example site twice and show the revisits (no network needed)", runDemo},
		{"index", "manage the dedup and capture indexes: import, stats, lookup, delete, export, scopes, verify", runIndex},
		{"cdxj", "write a sorted CDXJ index of WARC (and ARC) files", runCDXJ},
		{"validate", "check WARC and ARC files: structure, fields, block and payload digests, revisits", runValidate},
		{"characterize", "identify the format of every payload in WARC and ARC files; query by format", runCharacterize},
		{"convert", "convert ARC files to WARC and verify conversions", runConvert},
		{"migrate", "convert payloads in formats at risk with real tools, validate, write conversion records or migrated copies", runMigrate},
		{"mementomap", "generate, compact, look up, merge and evaluate MementoMaps", runMementoMap},
		{"fixity", "replay archived pages, hash them and track changes", runFixity},
		{"serve", "run the sidecar daemon beside a crawler", runServe},
		{"status", "query a running sidecar daemon", runStatus},
		{"upload", "copy closed WARC files to S3-compatible object storage, each copy proved before the local file goes", runUpload},
		{"version", "print the version of this binary", runVersion},
		{"wacz", "package WARC files as a signed WACZ; verify a WACZ", runWACZ},
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return cs
}

func run(ctx context.Context, args []string, e *env) (err error) {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(e.stdout, versionString())
		return nil
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(e.stdout)
		if len(args) == 0 {
			return usagef("no subcommand given")
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			if path := e.getenv(cpuProfileEnv); path != "" {
				stop, err := startCPUProfile(path)
				if err != nil {
					return err
				}
				defer func() {
					if serr := stop(); serr != nil && err == nil {
						err = serr
					}
				}()
			}
			err := c.run(ctx, e, args[1:])
			var ue usageError
			if errors.As(err, &ue) && ue.cmd == "" {
				ue.cmd = c.name
				return ue
			}
			return err
		}
	}
	return usageError{msg: fmt.Sprintf("unknown subcommand %q", args[0])}
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: wayside <subcommand> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "subcommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'wayside <subcommand> -h' for a subcommand's flags.")
}

// flagSet is a flag.FlagSet with Wayside's conventions: -h prints the usage
// on stdout and succeeds; a bad flag is a usage error (exit 2) reported in
// one line, not buried under the usage text.
type flagSet struct {
	*flag.FlagSet
	e     *env
	name  string
	rules []flagRule // checked by Parse (flagcheck.go)
}

// newFlagSet returns a flag set for the subcommand name ("index import").
func newFlagSet(e *env, name, usage string) *flagSet {
	fs := flag.NewFlagSet("wayside "+name, flag.ContinueOnError)
	f := &flagSet{FlagSet: fs, e: e, name: name}
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: wayside %s %s\n\n", name, usage)
		fs.PrintDefaults()
	}
	return f
}

// Parse parses args with the conventions above, then checks every flag
// against the rule it declared (flagcheck.go).
func (f *flagSet) Parse(args []string) error {
	f.SetOutput(io.Discard)
	err := f.FlagSet.Parse(args)
	f.SetOutput(f.e.stdout)
	if errors.Is(err, flag.ErrHelp) {
		if f.e.flagAudit != nil {
			f.e.flagAudit(f.name, f.unranged(), f.checkDefaults())
		}
		f.Usage()
		return flag.ErrHelp
	}
	if err != nil {
		return usageError{msg: f.name + ": " + err.Error(), cmd: f.name}
	}
	return f.checkRules()
}

// usagef returns a usage error pointing at this subcommand's -h.
func (f *flagSet) usagef(format string, a ...any) error {
	return usageError{msg: fmt.Sprintf(format, a...), cmd: f.name}
}

// quietFlag registers -q and --quiet, the same everywhere: less output —
// no progress reports (errors and warnings always appear). what says what
// else it leaves out, if anything.
func (f *flagSet) quietFlag(what ...string) *bool {
	usage := "quiet: no progress reports on stderr"
	if len(what) > 0 {
		usage = "quiet: " + what[0]
	}
	q := f.Bool("q", false, usage)
	f.BoolVar(q, "quiet", false, "same as -q")
	return q
}

// subcommand is one command of a group (`wayside index import`).
type subcommand struct {
	name string
	run  func(ctx context.Context, e *env, args []string) error
}

// runGroup dispatches args[0] to one of a group's subcommands. -h prints
// the group's usage on stdout; a missing or unknown subcommand is a usage
// error in one line (the hint points at the group's -h), never the whole
// usage text on stderr.
func runGroup(ctx context.Context, e *env, group, usage string, args []string, subs []subcommand) error {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if len(args) == 0 {
		return usageError{msg: fmt.Sprintf("%s: no subcommand given (%s)", group, want), cmd: group}
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Fprintf(e.stdout, "usage: wayside %s %s\n", group, usage)
		return nil
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, e, args[1:])
		}
	}
	return usageError{msg: fmt.Sprintf("%s: unknown subcommand %q (want %s)", group, args[0], want), cmd: group}
}
