// Command sidecar-client is a Go crawler that writes its own WARC files and
// deduplicates against a running Wayside sidecar (`wayside serve`) over the
// daemon's Unix socket. The sidecar's index is shared by every crawler on
// the machine (Heritrix, warcprox, this one); the crawler keeps the claim →
// write → durable → commit discipline through dedupindex.Deduper, so no
// revisit can ever point at a record that was not written.
//
//	wayside serve -data-dir /var/lib/wayside &
//	go run ./examples/sidecar-client -socket /var/lib/wayside/wayside.sock -warcs ./warcs https://example.org/
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/warcfile"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sidecar-client example:", err)
		os.Exit(1)
	}
}

func run() error {
	socket := flag.String("socket", "wayside-data/wayside.sock", "the sidecar's Unix socket")
	warcs := flag.String("warcs", "warcs", "WARC output directory")
	scope := flag.String("scope", "", "dedup scope (default: the sidecar's index.scope)")
	flag.Parse()
	if flag.NArg() == 0 {
		return fmt.Errorf("usage: sidecar-client [-socket path] [-warcs dir] URL...")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	c, err := client.New(*socket)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Healthz(ctx); err != nil {
		return fmt.Errorf("is `wayside serve` running? %w", err)
	}
	// The sidecar's index behind the usual dedup policy.
	policy := dedupindex.Policy{Match: dedupindex.MatchDigest}
	if *scope != "" {
		policy.Scope = *scope
	}
	d, err := dedupindex.NewDeduper(c.Index(), policy)
	if err != nil {
		return err
	}
	w, err := warcfile.OpenWriter(warcfile.WriterOptions{Dir: *warcs, Logger: log})
	if err != nil {
		return err
	}
	defer w.Close()
	rec, err := crawl.NewRecorder(crawl.Options{Writer: w, Dedup: d, Logger: log})
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: rec}
	for _, u := range flag.Args() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			log.Warn("fetch", "url", u, "err", err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		log.Info("fetched", "url", u, "status", resp.StatusCode)
	}
	st := rec.Stats()
	fmt.Printf("responses %d, revisits %d\n", st.Responses, st.RevisitsDigest+st.RevisitsNotMod)
	return nil
}
