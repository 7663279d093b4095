package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/sidecar"
)

const aggregateUsage = `<eval|timemap|timegate> -config SERVE.yaml [flags] [args]

Asks the archives of the serve config's "aggregate:" section — only those
whose MementoMap may hold the URI-R — as 'wayside serve' answers at
/aggregate/... Maps are fetched once at start.

  eval -config C --set SET [--all] [--parallel N] [--json]
      replay a labelled lookup set ("<archive,archive|-> <URI-R>" per line)
      and report requests avoided and recall (exit 1 unless recall is 1.0);
      --all also asks every archive and checks the merged TimeMaps are equal.
  timemap -config C [--format link|json] URI-R
      print the merged TimeMap.
  timegate -config C URI-R [YYYYMMDDhhmmss]
      print the memento closest to the time (default: now).

Run 'wayside aggregate <command> -h' for a command's flags.`

func runAggregate(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "aggregate", aggregateUsage, args, map[string]func(context.Context, *env, []string) error{
		"eval":     runAggEval,
		"timemap":  func(ctx context.Context, e *env, args []string) error { return runAggLookup(ctx, e, "timemap", args) },
		"timegate": func(ctx context.Context, e *env, args []string) error { return runAggLookup(ctx, e, "timegate", args) },
	})
}

// openAggregator reads the aggregate section of a serve config and builds
// an aggregator (its maps downloaded into a temporary directory, removed by
// the returned cleanup).
func openAggregator(e *env, cfgPath string, opts ...aggregate.Option) (*aggregate.Aggregator, func(), error) {
	cfg, err := sidecar.LoadConfig(cfgPath, e.getenv)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "wayside-aggregate-")
	if err != nil {
		return nil, nil, fmt.Errorf("aggregate: %w", err)
	}
	cfg.Aggregate.MapDir = dir
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if !cfg.Aggregate.Enabled() {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("aggregate: %s lists no archives (aggregate.archives)", cfgPath)
	}
	a, err := aggregate.New(cfg.Aggregate, opts...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return a, func() { a.Close(); os.RemoveAll(dir) }, nil
}

func runAggLookup(ctx context.Context, e *env, cmd string, args []string) error {
	usage := "-config SERVE.yaml [flags] URI-R"
	if cmd == "timegate" {
		usage += " [YYYYMMDDhhmmss]"
	}
	fs := newFlagSet(e, "aggregate "+cmd, usage)
	cfgPath := fs.String("config", "", "serve config (YAML) whose aggregate section lists the archives")
	format := fs.String("format", "link", "timemap: link or json")
	verbose := fs.Bool("v", false, "log map fetches and archive failures on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cfgPath == "" {
		return fs.usagef("aggregate %s: -config is required", cmd)
	}
	if fs.NArg() < 1 || fs.NArg() > 2 || (cmd == "timemap" && fs.NArg() != 1) {
		return fs.usagef("aggregate %s: want %s", cmd, usage)
	}
	if *format != "link" && *format != "json" {
		return fs.usagef("aggregate %s: --format %q: want link or json", cmd, *format)
	}
	uriR, err := aggregate.ParseURIR(fs.Arg(0))
	if err != nil {
		return fs.usagef("aggregate %s: %v", cmd, err)
	}
	at := time.Now().UTC()
	if fs.NArg() == 2 {
		if at, err = replay.ParseTimestamp(fs.Arg(1), false); err != nil {
			return fs.usagef("aggregate %s: %v", cmd, err)
		}
	}
	var opts []aggregate.Option
	if *verbose {
		opts = append(opts, aggregate.WithLogger(e.logger(true)))
	}
	a, cleanup, err := openAggregator(e, *cfgPath, opts...)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := a.RefreshMaps(ctx); err != nil {
		fmt.Fprintf(e.stderr, "aggregate: %v (those archives are asked for everything)\n", oneLine(err.Error()))
	}
	var res *aggregate.Result
	if cmd == "timemap" {
		res, err = a.TimeMap(ctx, uriR)
	} else {
		res, err = a.TimeGate(ctx, uriR, at)
	}
	if err != nil {
		return err
	}
	for _, o := range res.Archives {
		switch {
		case !o.Asked:
			fmt.Fprintf(e.stderr, "%s: not asked (its MementoMap holds nothing of the URI-R)\n", o.Archive)
		case o.Error != "":
			fmt.Fprintf(e.stderr, "%s: FAILED: %s\n", o.Archive, o.Error)
		default:
			fmt.Fprintf(e.stderr, "%s: %d mementos\n", o.Archive, o.Mementos)
		}
	}
	if cmd == "timegate" {
		c := aggregate.Closest(res.Mementos, at)
		if c >= 0 {
			m := res.Mementos[c]
			fmt.Fprintf(e.stdout, "%s %s %s\n", replay.Timestamp(m.Datetime), m.URI, m.Archive)
		}
	} else if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			URIR     string              `json:"original_uri"`
			Mementos []aggregate.Memento `json:"mementos"`
			Partial  bool                `json:"partial"`
			Archives []aggregate.Outcome `json:"archives"`
		}{res.URIR, res.Mementos, res.Partial(), res.Archives}); err != nil {
			return err
		}
	} else {
		for _, m := range res.Mementos {
			fmt.Fprintf(e.stdout, "<%s>; rel=\"memento\"; datetime=\"%s\"; archive=\"%s\"\n", m.URI, replay.HTTPDate(m.Datetime), m.Archive)
		}
	}
	if res.Partial() {
		return fmt.Errorf("aggregate %s: partial answer: %d archive(s) did not answer", cmd, len(res.Archives)-countOK(res))
	}
	if len(res.Mementos) == 0 {
		return fmt.Errorf("aggregate %s: no mementos of %s in any archive", cmd, uriR)
	}
	return nil
}

func countOK(r *aggregate.Result) int {
	n := 0
	for _, o := range r.Archives {
		if o.Error == "" {
			n++
		}
	}
	return n
}

func runAggEval(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "aggregate eval", "-config SERVE.yaml --set SET [flags]\n\n"+
		"Replays a labelled lookup set against the configured archives: each line is\n"+
		"\"<holders> <URI-R>\", holders the archives known to hold mementos of the URI-R\n"+
		"(comma-separated names) or \"-\". Reports the requests the MementoMaps avoided,\n"+
		"recall (labelled holdings the routing asked for: must be 1.0, else exit 1),\n"+
		"precision and latency. --all also asks every archive for every URI-R and\n"+
		"checks the merged TimeMaps are the same (exit 1 otherwise).")
	cfgPath := fs.String("config", "", "serve config (YAML) whose aggregate section lists the archives")
	setPath := fs.String("set", "", "labelled lookup set")
	all := fs.Bool("all", false, "also ask every archive (no routing) and compare the merged TimeMaps and latencies")
	parallel := fs.Int("parallel", 1, "lookups at once")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	quiet := fs.Bool("q", false, "no progress on stderr")
	fs.BoolVar(quiet, "quiet", false, "same as -q")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cfgPath == "" || *setPath == "" {
		return fs.usagef("aggregate eval: -config and --set are required")
	}
	if fs.NArg() > 0 {
		return fs.usagef("aggregate eval: unexpected argument %q", fs.Arg(0))
	}
	if *parallel < 1 || *parallel > 256 {
		return fs.usagef("aggregate eval: --parallel %d: want 1..256", *parallel)
	}
	a, cleanup, err := openAggregator(e, *cfgPath)
	if err != nil {
		return err
	}
	defer cleanup()
	f, err := os.Open(*setPath)
	if err != nil {
		return fmt.Errorf("aggregate eval: %w", err)
	}
	set, err := aggregate.ReadLabelled(f, *setPath, a.Archives())
	f.Close()
	if err != nil {
		return err
	}
	if len(set) == 0 {
		return fmt.Errorf("aggregate eval: %s holds no lookups", *setPath)
	}
	if err := a.RefreshMaps(ctx); err != nil {
		fmt.Fprintf(e.stderr, "aggregate eval: %v (those archives are asked for everything)\n", oneLine(err.Error()))
	}
	opts := aggregate.EvalOptions{Parallel: *parallel}
	if *all {
		b, cleanupAll, err := openAggregator(e, *cfgPath, aggregate.WithoutRouting())
		if err != nil {
			return err
		}
		defer cleanupAll()
		opts.All = b
	}
	if !*quiet {
		opts.Progress = func(n int) { fmt.Fprintf(e.stderr, "aggregate eval: %d/%d lookups\n", n, len(set)) }
	}
	res, err := aggregate.Eval(ctx, a, set, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(jsonSafe(res)); err != nil {
			return err
		}
	} else {
		printEval(e, res, mapStates(a))
	}
	var fails []string
	if res.Holdings > 0 && res.Routed != res.Holdings {
		fails = append(fails, fmt.Sprintf("recall %.4f < 1: %d labelled holdings were not asked for", res.Recall, res.Holdings-res.Routed))
	}
	if res.Differ > 0 {
		fails = append(fails, fmt.Sprintf("%d of %d merged TimeMaps differ from asking every archive", res.Differ, res.Compared))
	}
	if len(fails) > 0 {
		return fmt.Errorf("aggregate eval: %s", strings.Join(fails, "; "))
	}
	return nil
}

// jsonSafe replaces NaN ratios (nothing to divide) by -1 for JSON.
func jsonSafe(r aggregate.EvalResult) aggregate.EvalResult {
	for _, p := range []*float64{&r.AvoidedShare, &r.Recall, &r.Precision} {
		if math.IsNaN(*p) {
			*p = -1
		}
	}
	return r
}

func mapStates(a *aggregate.Aggregator) map[string]string {
	out := map[string]string{}
	for _, ar := range a.Stats().Archives {
		s := ar.MapState
		if ar.MapState == "loaded" {
			s = fmt.Sprintf("loaded, %d lines", ar.MapLines)
		}
		if ar.MapError != "" {
			s += ": " + ar.MapError
		}
		out[ar.Name] = s
	}
	return out
}

func printEval(e *env, r aggregate.EvalResult, maps map[string]string) {
	w := e.stdout
	fmt.Fprintf(w, "lookups            %d URI-Rs × %d archives\n", r.Lookups, r.Archives)
	fmt.Fprintf(w, "requests           %d made, %d avoided by the maps (%.1f%%)\n", r.Asked, r.Avoided, 100*r.AvoidedShare)
	if r.Compared > 0 {
		fmt.Fprintf(w, "asking all         %d requests (routed made %.1f%% fewer)\n", r.AllAsked, 100*(1-float64(r.Asked)/float64(max(r.AllAsked, 1))))
	}
	fmt.Fprintf(w, "recall             %.4f (%d of %d labelled holdings asked for)\n", r.Recall, r.Routed, r.Holdings)
	fmt.Fprintf(w, "precision          %.4f (asks routed by a map that found mementos)\n", r.Precision)
	fmt.Fprintf(w, "archive errors     %d\n", r.Errors)
	fmt.Fprintf(w, "latency routed     p50 %s  p99 %s  mean %s\n", r.RoutedLatency.P50.Round(10*time.Microsecond), r.RoutedLatency.P99.Round(10*time.Microsecond), r.RoutedLatency.Mean.Round(10*time.Microsecond))
	if r.Compared > 0 {
		fmt.Fprintf(w, "latency all        p50 %s  p99 %s  mean %s\n", r.AllLatency.P50.Round(10*time.Microsecond), r.AllLatency.P99.Round(10*time.Microsecond), r.AllLatency.Mean.Round(10*time.Microsecond))
		fmt.Fprintf(w, "merged TimeMaps    %d of %d equal to asking every archive\n", r.Compared-r.Differ, r.Compared)
	}
	fmt.Fprintf(w, "%-16s %9s %9s %9s %9s %9s  %s\n", "ARCHIVE", "ASKED", "AVOIDED", "HOLDINGS", "ROUTED", "ERRORS", "MAP")
	for _, p := range r.PerArchive {
		fmt.Fprintf(w, "%-16s %9d %9d %9d %9d %9d  %s\n", p.Name, p.Asked, p.Avoided, p.Holdings, p.Routed, p.Errors, maps[p.Name])
	}
	for _, h := range r.Hidden {
		fmt.Fprintf(w, "HIDDEN by a map: %s\n", h)
	}
	for _, u := range r.Unconfirmed {
		fmt.Fprintf(w, "labelled holding answered no mementos: %s\n", u)
	}
	for _, d := range r.Diffs {
		fmt.Fprintf(w, "DIFFERS: %s\n", d)
	}
}
