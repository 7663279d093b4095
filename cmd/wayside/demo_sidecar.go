package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/sidecar"
)

// demoSidecar runs the sidecar daemon (what `wayside serve` runs) in this
// process over the demo's WARC directory, as it would run beside Heritrix:
// it ingests the WARCs the two crawls wrote, then answers a CDX query the
// way Heritrix's WbmPersistLoadProcessor asks it and a MementoMap lookup.
func demoSidecar(ctx context.Context, w io.Writer, warcDir, siteURL string) error {
	data := filepath.Join(warcDir, "sidecar")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var cfg sidecar.Config
	cfg.DataDir = data
	cfg.Ingest.Dirs = []string{warcDir}
	cfg.Ingest.PollInterval = 100 * time.Millisecond
	cfg.Map.Name = "wayside-demo"
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	idx, err := cfg.OpenIndex(ctx, "", quiet)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer idx.Close()
	srv, err := sidecar.New(cfg, sidecar.Options{Index: idx, Logger: quiet, Version: buildVersion()})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()

	c, err := client.New(cfg.Listen.Unix, client.WithTimeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer c.Close()
	fmt.Fprintf(w, "sidecar listening on %s (Unix socket, mode 0600), watching %s\n", cfg.Listen.Unix, warcDir)

	st, err := waitIngested(ctx, c, len(warcPaths(warcDir)), done)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ingested %d records from %d WARC files: %d originals indexed, %d revisits (never used as originals)\n",
		st.Records, len(st.Files), st.Originals, st.Revisits)

	target := siteURL + "/about.html"
	q := url.Values{"url": {target}, "limit": {"-1"}}
	body, err := c.CDX(ctx, q)
	if err != nil {
		return fmt.Errorf("demo: cdx query: %w", err)
	}
	fmt.Fprintf(w, "\nHeritrix asks  GET /web/timemap/cdx?url=%s&limit=-1\n", url.QueryEscape(target))
	fmt.Fprintf(w, "the sidecar answers (timestamp and digest of the original, never a revisit):\n")
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}

	fmt.Fprintln(w, "\nMementoMap lookups (does the archive hold this URI?):")
	for _, u := range []string{siteURL + "/blog/2024/first-post.html", "http://example.org/not-crawled"} {
		ml, err := c.MapLookup(ctx, u)
		if err != nil {
			return fmt.Errorf("demo: mementomap lookup: %w", err)
		}
		if ml.Found {
			fmt.Fprintf(w, "  %-50s yes: key %s, %s\n", u, ml.Key, ml.Freq)
		} else {
			fmt.Fprintf(w, "  %-50s no\n", u)
		}
	}
	return nil
}

// waitIngested polls the daemon until every WARC file has been read to its
// end (bounded to 30 s).
func waitIngested(ctx context.Context, c *client.Client, files int, done <-chan error) (st api.IngestStatus, err error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err = c.Ingest(ctx)
		if err == nil && len(st.Files) >= files {
			all := true
			for _, f := range st.Files {
				all = all && f.Done
			}
			if all {
				return st, nil
			}
		}
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("stopped")
			}
			return st, fmt.Errorf("demo: sidecar: %w", err)
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("demo: sidecar did not ingest %d WARC files within 30s (last error: %v)", files, err)
		}
	}
}
