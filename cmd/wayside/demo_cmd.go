package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/warcio"
)

const demoUsage = `[flags]

Starts Wayside's example web site on 127.0.0.1 (in this process, no network
needed) and crawls it twice into --dir (default: a new temporary directory):
the first crawl writes full responses, the second, with conditional requests,
writes revisit records for everything that did not change. It prints both
summaries and the revisits of the second crawl. Then it runs the sidecar
daemon (what 'wayside serve' runs beside Heritrix) over the same WARC
directory: it ingests the files, answers a Heritrix-style CDX dedup query and
looks URIs up in the live MementoMap.`

func runDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "demo", demoUsage)
	dir := fs.String("dir", "", "directory for the demo's WARC files and index (default: a new temporary directory)")
	verbose := fs.Bool("v", false, "verbose logging")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fs.usagef("demo: unexpected arguments %q", fs.Args())
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "wayside-demo-")
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		*dir = d
	}
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer srv.Close()
	fmt.Fprintf(e.stdout, "Example site running at %s\nWARC files, CDXJ and dedup index go to %s\n\n", srv.URL, *dir)

	f := crawlFlags{warcDir: *dir, scope: "demo", depth: -1, verify: "size", version: "1.1", userAgent: "Wayside-demo/1.0",
		maxFileSize: 1 << 30, maxBody: 256 << 20, timeout: 0, parallel: 4, match: "digest", minSize: 1, robots: true, verbose: *verbose, quiet: true}
	fmt.Fprintln(e.stdout, "== Crawl 1: empty index, every payload is new (duplicates within the crawl already become revisits)")
	first, err := crawlOnce(ctx, e, &f, []string{srv.URL + "/"}, "crawl 1")
	if err != nil {
		return err
	}
	before := map[string]bool{}
	for _, p := range warcPaths(*dir) {
		before[p] = true
	}
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout, "== Crawl 2: same site, same index, conditional requests on")
	f.conditional = true
	second, err := crawlOnce(ctx, e, &f, []string{srv.URL + "/"}, "crawl 2")
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout, "Revisits written by crawl 2:")
	for _, p := range warcPaths(*dir) {
		if before[p] {
			continue
		}
		if err := listRevisits(e.stdout, p); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "\nCrawl 1 stored %s; crawl 2 stored %s and saved %s of payload.\n",
		humanBytes(first.writer.StoredBytes), humanBytes(second.writer.StoredBytes), humanBytes(second.rec.SavedBytes))
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout, "== Sidecar: what `wayside serve` does beside Heritrix, over these WARCs")
	if err := demoSidecar(ctx, e.stdout, *dir, srv.URL); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\nInspect: ls %s   (CDXJ beside each WARC: *.cdxj; sidecar state in sidecar/)\n", *dir)
	return nil
}

func warcPaths(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	return m
}

func listRevisits(w io.Writer, path string) error {
	r, err := warcio.Open(path)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if rec.Type != "revisit" {
			continue
		}
		prof := rec.Header("WARC-Profile")
		prof = prof[strings.LastIndex(prof, "/")+1:]
		fmt.Fprintf(w, "  %-26s %-40s -> %s @ %s\n", prof, rec.TargetURI, rec.Header("WARC-Refers-To-Target-URI"), rec.Header("WARC-Refers-To-Date"))
	}
}
