package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/sidecar"
	"github.com/wayside-archive/wayside/sidecar/loadgen"
)

const statusUsage = `[flags] [status | lookup <digest> | ingest | cdx <url> | aggregate | metrics | bench]

  status           daemon status: index, ingest totals, dedup counters (default)
  lookup <digest>  look a payload digest up in the dedup index
  ingest           ingest progress per WARC file
  cdx <url>        the CDX answer for a URL (as Heritrix and Zeno get it)
  aggregate        per upstream archive: requests, avoided by MementoMaps, hits, misses, errors, latency, map state
  metrics          the Prometheus metrics text
  bench            load test: seed originals, then look digests up for -duration`

// runStatus queries a running sidecar daemon.
func runStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "status", statusUsage)
	addr := fs.String("addr", "", "daemon address: Unix socket path or http://127.0.0.1:PORT (default $WAYSIDE_ADDR or wayside-data/wayside.sock)")
	tokenFile := fs.String("token-file", "", "file holding the TCP token (default $WAYSIDE_TOKEN)")
	asJSON := fs.Bool("json", false, "print the daemon's JSON answer")
	scope := fs.String("scope", "", "dedup scope (lookup, bench; default: the daemon's)")
	target := fs.String("url", "", "lookup: target URI for a same-URL key")
	duration := fs.Duration("duration", 60*time.Second, "bench: measured duration")
	workers := fs.Int("workers", 4, "bench: concurrent connections")
	seed := fs.Int("seed", 100000, "bench: originals to store before measuring")
	keys := fs.Int("keys", 0, "bench: seeded digests to draw hits from (default -seed; set with -seed 0 to reuse an earlier seeding)")
	hit := fs.Float64("hit-ratio", 0.5, "bench: share of lookups for seeded digests")
	writeRate := fs.Int("write-rate", 0, "bench: also claim and commit this many new originals per second while looking up (a crawl writing)")
	writeAddr := fs.String("write-addr", "", "bench: daemon the -write-rate writer writes to (default -addr)")
	fs.atLeast("duration", float64(time.Millisecond))
	fs.atLeast("workers", 1)
	fs.atLeast("seed", 0)
	fs.atLeast("keys", 0)
	fs.within("hit-ratio", 0, 1)
	fs.atLeast("write-rate", 0)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd, rest := "status", []string(nil)
	if fs.NArg() > 0 {
		cmd = fs.Arg(0)
		// Flags may also follow the command: "status bench -duration 10s".
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
		rest = fs.Args()
	}
	switch cmd {
	case "status", "lookup", "ingest", "cdx", "aggregate", "metrics", "bench":
	default:
		return fs.usagef("status: unknown command %q", cmd)
	}
	var opts []client.Option
	if cmd == "bench" {
		opts = append(opts, client.WithMaxIdleConns(*workers*2), client.WithTimeout(10*time.Second))
	}
	c, err := dialDaemon(e, *addr, *tokenFile, opts...)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer c.Close()
	printJSON := func(v any) error {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	switch cmd {
	case "status":
		if len(rest) > 0 {
			return fs.usagef("status: unexpected argument %q", rest[0])
		}
		var st sidecar.Status
		if err := c.Status(ctx, &st); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if *asJSON {
			return printJSON(st)
		}
		fmt.Fprintf(e.stdout, "wayside sidecar %s, up %s\n", st.Version, time.Duration(st.UptimeSeconds*float64(time.Second)).Round(time.Second))
		for _, p := range st.Problems {
			fmt.Fprintf(e.stdout, "PROBLEM:    %s\n", p)
		}
		fmt.Fprintf(e.stdout, "listening:  unix %s  tcp %s\n", orNone(st.Unix), orNone(st.TCP))
		fmt.Fprintf(e.stdout, "index:      %d originals, %d pending claims\n", st.Index.Originals, st.Index.Pending)
		fmt.Fprintf(e.stdout, "dedup:      %d lookups, %d claims, %d revisits, %d bytes saved\n", st.Lookups, st.Claims, st.Revisits, st.BytesSaved)
		fmt.Fprintf(e.stdout, "ingest:     %d files, %d records, %d originals, %d revisits, %d bytes, %d bytes behind, %d errors\n",
			len(st.Ingest.Files), st.Ingest.Records, st.Ingest.Originals, st.Ingest.Revisits, st.Ingest.Bytes, st.Ingest.LagBytes, st.Ingest.Errors)
		if c := st.Captures; c != nil {
			var parts []string
			for _, col := range c.Collections {
				parts = append(parts, fmt.Sprintf("%s %d (%d revisits, %d without original)", col.Name, col.Captures, col.Revisits, col.Unresolved))
			}
			fmt.Fprintf(e.stdout, "captures:   %s; %d bytes on disk\n", orNone(strings.Join(parts, ", ")), c.DiskBytes)
			if c.TCPReplay != "" {
				fmt.Fprintf(e.stdout, "tcp replay: %s\n", c.TCPReplay)
			}
		}
		if cl := st.CrawlLog; cl != nil {
			fmt.Fprintf(e.stdout, "crawl.log:  %d lines, %d duplicates, %d bytes, by status %v\n", cl.Lines, cl.Duplicates, cl.Bytes, cl.ByStatus)
		}
		if st.Ingest.LastError != "" {
			fmt.Fprintf(e.stdout, "last error: %s\n", st.Ingest.LastError)
		}
		for _, c := range st.Consumers {
			state := "ok"
			switch {
			case c.Failed > 0:
				state = "FAILING, last error: " + c.LastError
			case c.Behind:
				state = "BEHIND (catching up from CDXJ)"
			}
			fmt.Fprintf(e.stdout, "consumer:   %s: %d delivered, %d failed, %d dropped, %d queued: %s\n",
				c.Name, c.Delivered, c.Failed, c.Dropped, c.Queued, state)
		}
		if ag := st.Aggregate; ag != nil {
			var req, avoided, errs int64
			for _, a := range ag.Archives {
				req, avoided, errs = req+a.Requests, avoided+a.Avoided, errs+a.Errors
			}
			fmt.Fprintf(e.stdout, "aggregate:  %d lookups (%d partial), %d archives: %d requests, %d avoided by maps, %d errors\n",
				ag.Lookups, ag.Partial, len(ag.Archives), req, avoided, errs)
			printAggregate(e, ag)
		}
		return nil
	case "aggregate":
		var st sidecar.Status
		if err := c.Status(ctx, &st); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if st.Aggregate == nil {
			return fmt.Errorf("status: the daemon has no aggregate archives configured")
		}
		if *asJSON {
			return printJSON(st.Aggregate)
		}
		printAggregate(e, st.Aggregate)
		return nil
	case "lookup":
		if len(rest) != 1 {
			return fs.usagef("status lookup: want one digest")
		}
		o, found, err := c.Lookup(ctx, api.Key{Scope: *scope, Digest: rest[0], TargetURI: *target})
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if *asJSON {
			return printJSON(api.LookupResult{Found: found, Original: ptrIf(found, o)})
		}
		if !found {
			fmt.Fprintf(e.stdout, "%s: not in the index\n", rest[0])
			return nil
		}
		fmt.Fprintf(e.stdout, "%s: original %s %s %s\n  %s offset %d length %d, payload %d bytes, status %d %s\n",
			o.Digest, o.TargetURI, o.Date.Format(time.RFC3339), o.RecordID, o.File, o.Offset, o.Length, o.PayloadLength, o.Status, o.MIME)
		return nil
	case "ingest":
		st, err := c.Ingest(ctx)
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if *asJSON {
			return printJSON(st)
		}
		tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tSIZE\tOFFSET\tRECORDS\tSTATE")
		for _, f := range st.Files {
			state := "reading"
			switch {
			case f.Truncated:
				state = fmt.Sprintf("TRUNCATED at %d", f.TruncatedAt)
			case f.Done:
				state = "done"
			case f.Open:
				state = "open"
			}
			if f.Error != "" {
				state += " (" + f.Error + ")"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", f.Name, f.Size, f.Offset, f.Records, state)
		}
		tw.Flush()
		fmt.Fprintf(e.stdout, "%d records, %d originals, %d bytes behind, %d errors\n", st.Records, st.Originals, st.LagBytes, st.Errors)
		if st.Paused != "" {
			fmt.Fprintf(e.stdout, "PAUSED: %s\n", st.Paused)
		}
		return nil
	case "cdx":
		if len(rest) != 1 {
			return fs.usagef("status cdx: want one URL")
		}
		body, err := c.CDX(ctx, url.Values{"url": {rest[0]}})
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		fmt.Fprint(e.stdout, body)
		return nil
	case "metrics":
		m, err := c.Metrics(ctx)
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		fmt.Fprint(e.stdout, m)
		return nil
	case "bench":
		fmt.Fprintf(e.stderr, "bench: seeding %d originals, then %d workers look digests up for %s\n", *seed, *workers, *duration)
		o := loadgen.Options{Seed: *seed, Keys: *keys, Workers: *workers, Duration: *duration, Scope: *scope, HitRatio: *hit, Progress: e.stderr, WriteRate: *writeRate}
		if *writeAddr != "" {
			wc, err := dialDaemon(e, *writeAddr, *tokenFile, client.WithTimeout(10*time.Second))
			if err != nil {
				return fmt.Errorf("status: bench: -write-addr: %w", err)
			}
			defer wc.Close()
			o.WriteTo = wc
		}
		r, err := loadgen.Run(ctx, c, o)
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if *asJSON {
			return printJSON(r)
		}
		fmt.Fprintln(e.stdout, r)
		if r.FirstError != "" {
			fmt.Fprintln(e.stdout, "first error:", r.FirstError)
		}
		return nil
	}
	return fs.usagef("status: unknown command %q", cmd)
}

// printAggregate prints one line per upstream archive of the aggregator.
func printAggregate(e *env, ag *api.AggregateStatus) {
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ARCHIVE\tREQUESTS\tAVOIDED\tHITS\tMISSES\tERRORS\tTIMEOUTS\tMEAN ms\tP99 ms\tMAP")
	for _, a := range ag.Archives {
		m := a.MapState
		if a.MapState == "loaded" {
			m = fmt.Sprintf("loaded, %d lines, %s ago", a.MapLines, time.Since(a.MapFetchedAt).Round(time.Second))
		}
		if a.MapError != "" {
			m += ": " + a.MapError
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t≤%g\t%s\n", a.Name, a.Requests, a.Avoided, a.Hits, a.Misses, a.Errors, a.Timeouts, a.LatencyMeanMs, a.LatencyP99Ms, m)
	}
	tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ptrIf[T any](ok bool, v T) *T {
	if !ok {
		return nil
	}
	return &v
}

// dialDaemon returns a client of the daemon at addr (default $WAYSIDE_ADDR,
// then wayside-data/wayside.sock) with the token from tokenFile (default
// $WAYSIDE_TOKEN).
func dialDaemon(e *env, addr, tokenFile string, opts ...client.Option) (*client.Client, error) {
	if addr == "" {
		addr = e.getenv("WAYSIDE_ADDR")
	}
	if addr == "" {
		addr = "wayside-data/wayside.sock"
	}
	if !strings.Contains(addr, "://") {
		if _, err := os.Stat(addr); errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("no daemon socket at %s (is 'wayside serve' running? give its socket with -addr)", addr)
		}
	}
	token := e.getenv("WAYSIDE_TOKEN")
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, err
		}
		token = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	return client.New(addr, append([]client.Option{client.WithToken(token)}, opts...)...)
}
