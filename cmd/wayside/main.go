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
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "wayside:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// env is what a subcommand may touch of the process: no subcommand reads
// os.Args, os.Stdout or the environment directly, so tests run them in-process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// logger returns a text logger on stderr at the given level.
func (e *env) logger(verbose bool) *slog.Logger {
	lvl := slog.LevelInfo
	if verbose {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: lvl}))
}

// usageError marks errors caused by bad command-line usage (exit status 2).
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	cs := []command{
		{"crawl", "crawl URLs into WARC files with crawl-time deduplication", runCrawl},
		{"demo", "crawl a built-in example site twice and show the revisits (no network needed)", runDemo},
		{"index", "manage the dedup index: import, stats, lookup", runIndex},
		{"cdxj", "write a sorted CDXJ index of WARC files", runCDXJ},
		{"mementomap", "generate, compact, look up, merge and evaluate MementoMaps", runMementoMap},
		{"fixity", "replay archived pages, hash them and track changes", runFixity},
		{"serve", "run the sidecar daemon beside a crawler", runServe},
		{"status", "query a running sidecar daemon", runStatus},
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return cs
}

func run(ctx context.Context, args []string, e *env) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(e.stdout)
		if len(args) == 0 {
			return usagef("no subcommand given")
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	printUsage(e.stderr)
	return usagef("unknown subcommand %q", args[0])
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

// newFlagSet returns a flag set that writes its usage to e.stderr and returns
// errors instead of exiting.
func newFlagSet(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("wayside "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: wayside %s %s\n\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}
