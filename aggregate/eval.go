package aggregate

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/internal/lookupset"
)

// Labelled is one lookup of an evaluation set: a URI-R and the archives
// known to hold mementos of it.
type Labelled struct {
	URIR    string
	Holders []string
	Line    int
}

// ReadLabelled reads a labelled lookup set: one "<holders> <URI-R>" per
// line, holders a comma-separated list of archive names or "-" for none.
// Blank lines and lines starting with '#' are skipped. Names not in
// archives are an error naming the line.
func ReadLabelled(r io.Reader, name string, archives []string) ([]Labelled, error) {
	var out []Labelled
	err := lookupset.Each(r, name, "<archive,archive,...|-> <URI-R>", func(line int, lab, target string) error {
		uriR, err := ParseURIR(target)
		if err != nil {
			return err
		}
		l := Labelled{URIR: uriR, Line: line}
		if lab != "-" {
			for _, h := range strings.Split(lab, ",") {
				if !slices.Contains(archives, h) {
					return fmt.Errorf("archive %q is not configured (archives: %s)", h, strings.Join(archives, ", "))
				}
				if !slices.Contains(l.Holders, h) {
					l.Holders = append(l.Holders, h)
				}
			}
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	return out, nil
}

// Archives returns the configured archive names, in order.
func (a *Aggregator) Archives() []string {
	out := make([]string, len(a.ups))
	for i, up := range a.ups {
		out[i] = up.cfg.Name
	}
	return out
}

// EvalOptions tune Eval.
type EvalOptions struct {
	// All, when set, is an aggregator over the same archives without
	// routing (WithoutRouting): every lookup is also answered by it, and
	// the merged TimeMaps are compared.
	All *Aggregator
	// Parallel lookups at once (default 1: latencies are then those of
	// one client).
	Parallel int
	// Progress is called with the number of lookups done, now and then.
	Progress func(done int)
}

// Latency summarises lookup latencies.
type Latency struct {
	P50, P99, Mean time.Duration
}

func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)] }
	return Latency{P50: at(0.5), P99: at(0.99), Mean: sum / time.Duration(len(s))}
}

// ArchiveEval is one archive's part of an evaluation.
type ArchiveEval struct {
	Name     string `json:"name"`
	Asked    int64  `json:"asked"`
	Avoided  int64  `json:"avoided"`
	Holdings int64  `json:"holdings"`
	// Routed are the holdings it was asked for; Found those it answered
	// mementos for.
	Routed int64 `json:"routed"`
	Found  int64 `json:"found"`
	Errors int64 `json:"errors"`
}

// EvalResult is the outcome of replaying a labelled lookup set.
type EvalResult struct {
	Lookups  int `json:"lookups"`
	Archives int `json:"archives"`
	// Asked and Avoided count (archive, lookup) pairs: requests made and
	// requests the maps spared. AllAsked is what asking every archive
	// made (with EvalOptions.All).
	Asked    int64 `json:"asked"`
	Avoided  int64 `json:"avoided"`
	AllAsked int64 `json:"all_asked,omitempty"`
	// AvoidedShare is Avoided / (Asked + Avoided).
	AvoidedShare float64 `json:"avoided_share"`
	// Holdings are the labelled (archive, URI-R) pairs; Routed those the
	// routed lookup asked the archive for; Recall = Routed / Holdings
	// (1.0: no map hid a holding).
	Holdings int64   `json:"holdings"`
	Routed   int64   `json:"routed"`
	Recall   float64 `json:"recall"`
	// Precision is, among the asks to archives routed by a loaded map,
	// the share that found mementos.
	Precision float64 `json:"precision"`
	// Unconfirmed are labelled holdings whose archive was asked and
	// answered no mementos (a wrong label or a lost capture); Hidden are
	// holdings the maps hid (recall failures). First 20 of each.
	Unconfirmed []string `json:"unconfirmed,omitempty"`
	Hidden      []string `json:"hidden,omitempty"`
	// Errors are archive answers that failed (lookups marked partial).
	Errors int64 `json:"errors"`
	// Compared and Differ count the lookups answered by both aggregators
	// and those whose merged mementos differ (with EvalOptions.All).
	Compared int      `json:"compared,omitempty"`
	Differ   int      `json:"differ,omitempty"`
	Diffs    []string `json:"diffs,omitempty"`
	// Latency of the routed lookups, and of asking every archive.
	RoutedLatency Latency       `json:"routed_latency"`
	AllLatency    Latency       `json:"all_latency,omitzero"`
	PerArchive    []ArchiveEval `json:"per_archive"`
}

// Eval replays set against a's archives (routed by their maps, which the
// caller refreshed) and reports requests avoided, recall and, with
// opts.All, whether the merged TimeMaps equal those of asking every
// archive.
func Eval(ctx context.Context, a *Aggregator, set []Labelled, opts EvalOptions) (EvalResult, error) {
	ctx = WithoutCache(ctx) // every lookup asks: requests are what is measured
	names := a.Archives()
	res := EvalResult{Lookups: len(set), Archives: len(names), PerArchive: make([]ArchiveEval, len(names))}
	for i, n := range names {
		res.PerArchive[i].Name = n
	}
	type one struct {
		r, all     *Result
		dr, dall   time.Duration
		err        error
		idx        int
		loadedMaps []bool
	}
	workers := max(1, opts.Parallel)
	jobs := make(chan int)
	results := make(chan one, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				o := one{idx: i, loadedMaps: a.loadedMaps()}
				// Alternate which answers first, so that neither gains
				// from the other warming the archives' caches.
				runRouted := func() {
					start := time.Now()
					o.r, o.err = a.TimeMap(ctx, set[i].URIR)
					o.dr = time.Since(start)
				}
				runAll := func() {
					if opts.All == nil || o.err != nil {
						return
					}
					start := time.Now()
					o.all, o.err = opts.All.TimeMap(ctx, set[i].URIR)
					o.dall = time.Since(start)
				}
				if i%2 == 0 || opts.All == nil {
					runRouted()
					runAll()
				} else {
					start := time.Now()
					if o.all, o.err = opts.All.TimeMap(ctx, set[i].URIR); o.err == nil {
						o.dall = time.Since(start)
						runRouted()
					}
				}
				results <- o
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range set {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	var routedD, allD []time.Duration
	var mapAsks, mapHits int64
	done := 0
	var firstErr error
	for o := range results {
		done++
		if opts.Progress != nil && done%1000 == 0 {
			opts.Progress(done)
		}
		if o.err != nil {
			if firstErr == nil {
				firstErr = o.err
			}
			continue
		}
		l := set[o.idx]
		routedD = append(routedD, o.dr)
		for i, out := range o.r.Archives {
			pa := &res.PerArchive[i]
			held := slices.Contains(l.Holders, out.Archive)
			if held {
				pa.Holdings++
				res.Holdings++
			}
			if !out.Asked {
				pa.Avoided++
				res.Avoided++
				if held && len(res.Hidden) < 20 {
					res.Hidden = append(res.Hidden, fmt.Sprintf("%s %s (line %d)", out.Archive, l.URIR, l.Line))
				}
				continue
			}
			pa.Asked++
			res.Asked++
			if out.Error != "" {
				pa.Errors++
				res.Errors++
			}
			if o.loadedMaps[i] {
				mapAsks++
				if out.Mementos > 0 {
					mapHits++
				}
			}
			if held {
				pa.Routed++
				res.Routed++
				if out.Mementos > 0 {
					pa.Found++
				} else if out.Error == "" && len(res.Unconfirmed) < 20 {
					res.Unconfirmed = append(res.Unconfirmed, fmt.Sprintf("%s %s (line %d)", out.Archive, l.URIR, l.Line))
				}
			}
		}
		if o.all != nil {
			allD = append(allD, o.dall)
			res.AllAsked += int64(o.all.Asked())
			res.Compared++
			if d := diffMementos(o.r.Mementos, o.all.Mementos); d != "" {
				res.Differ++
				if len(res.Diffs) < 20 {
					res.Diffs = append(res.Diffs, fmt.Sprintf("%s (line %d): %s", l.URIR, l.Line, d))
				}
			}
		}
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	div := func(a, b int64) float64 {
		if b == 0 {
			return math.NaN()
		}
		return float64(a) / float64(b)
	}
	res.AvoidedShare = div(res.Avoided, res.Asked+res.Avoided)
	res.Recall = div(res.Routed, res.Holdings)
	res.Precision = div(mapHits, mapAsks)
	res.RoutedLatency, res.AllLatency = summarize(routedD), summarize(allD)
	sort.Strings(res.Hidden)
	if firstErr != nil {
		return res, fmt.Errorf("aggregate: eval: %w", firstErr)
	}
	return res, nil
}

// loadedMaps reports, per archive, whether a loaded map routes it.
func (a *Aggregator) loadedMaps() []bool {
	out := make([]bool, len(a.ups))
	for i, up := range a.ups {
		out[i] = a.routing && up.amap.loaded()
	}
	return out
}

// diffMementos describes how two merged memento lists differ ("" when
// they list the same URI-Ms at the same datetimes in the same order).
func diffMementos(a, b []Memento) string {
	key := func(m Memento) string { return m.Datetime.UTC().Format(time.RFC3339) + " " + m.URI }
	if len(a) == len(b) {
		same := true
		for i := range a {
			if key(a[i]) != key(b[i]) {
				same = false
				break
			}
		}
		if same {
			return ""
		}
	}
	in := map[string]int{}
	for _, m := range a {
		in[key(m)]++
	}
	for _, m := range b {
		in[key(m)]--
	}
	var only []string
	for k, n := range in {
		switch {
		case n > 0:
			only = append(only, "routed only: "+k)
		case n < 0:
			only = append(only, "all only: "+k)
		}
	}
	sort.Strings(only)
	if len(only) == 0 {
		return "same mementos in another order"
	}
	if len(only) > 3 {
		only = append(only[:3], fmt.Sprintf("… %d more", len(only)-3))
	}
	return fmt.Sprintf("%d routed vs %d asking all: %s", len(a), len(b), strings.Join(only, "; "))
}
