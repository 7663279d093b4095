// Command colly is a small colly v2 crawler with Wayside embedded in the
// same process: every exchange is recorded into WARC files (with a CDXJ file
// beside each) and deduplicated at crawl time against an embedded pebble
// index, through crawlcolly.Attach.
//
//	go run ./examples/colly -warcs ./warcs -depth 2 https://example.org/
//
// Run it twice: the second run writes revisit records for every unchanged
// payload instead of full responses.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/gocolly/colly/v2"

	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/crawl/crawlcolly"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "colly example:", err)
		os.Exit(1)
	}
}

func run() error {
	warcs := flag.String("warcs", "warcs", "WARC output directory (the dedup index goes into warcs/dedup-index)")
	depth := flag.Int("depth", 2, "maximum link depth")
	flag.Parse()
	if flag.NArg() == 0 {
		return fmt.Errorf("usage: colly [-warcs dir] [-depth n] URL...")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	var hosts []string
	for _, s := range flag.Args() {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return fmt.Errorf("bad seed %q", s)
		}
		hosts = append(hosts, u.Hostname())
	}

	// One Session = WARC writer + embedded dedup index + recorder.
	s, err := crawl.Open(crawl.Config{WARCDir: *warcs, Recorder: crawl.Options{Logger: log}})
	if err != nil {
		return err
	}
	defer s.Close() // finalises the .open WARC file

	c := colly.NewCollector(colly.AllowedDomains(hosts...), colly.MaxDepth(*depth), colly.StdlibContext(ctx))
	crawlcolly.Attach(c, s.Recorder) // record at the transport, wire-exact
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		e.Request.Visit(e.Attr("href"))
	})
	c.OnResponse(func(r *colly.Response) {
		log.Info("fetched", "url", r.Request.URL.String(), "status", r.StatusCode)
	})
	for _, seed := range flag.Args() {
		if err := c.Visit(seed); err != nil {
			log.Warn("visit", "url", seed, "err", err)
		}
	}
	c.Wait()
	st := s.Recorder.Stats()
	fmt.Printf("responses %d, revisits %d (identical payload) + %d (not modified)\n", st.Responses, st.RevisitsDigest, st.RevisitsNotMod)
	return nil
}
