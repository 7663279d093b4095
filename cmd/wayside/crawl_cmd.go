package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcfile/s3"
	"github.com/wayside-archive/wayside/warcio"
)

const crawlUsage = `[flags] URL...   (or --seeds FILE)

Crawls the given URLs into WARC files, deduplicating payloads at crawl time:
a payload already archived becomes a revisit record pointing at the original.
WARC and CDXJ files go to --warc-dir (a WARC's CDXJ is sorted when the WARC is
closed); the dedup index (embedded pebble) lives in WARC-DIR/dedup-index
unless --index is given, so re-running the same command writes revisits for
everything unchanged. With --live-map, a MementoMap of the WARC directory is
kept current as records land. robots.txt is fetched, recorded and obeyed
unless --ignore-robots. Every URL attempted gets a line in WARC-DIR/crawl.log
in Heritrix's crawl.log layout.

--time-limit and --size-limit stop the crawl cleanly (no new fetch starts,
those in flight are recorded, files closed): exit status 0 and a summary line
"stopped: ..." saying which limit ended it.

The exit status is 1 when any fetch failed (the summary has a line per kind
of failure: connection refused, DNS lookup failed, timeout...) or a consumer
failed (the live map), after the WARC files are safely closed; 130 after
Ctrl-C, once the files are closed.`

// crawlFlags are the flags of `wayside crawl`, shared with `wayside demo`.
type crawlFlags struct {
	warcDir, index, scope, prefixes, verify, version, userAgent, match string
	warcPrefix                                                         string
	captureIndex                                                       string
	originalDirs, readScopes, dedupStatus                              string
	window                                                             time.Duration
	depth, maxPages, parallel                                          int
	delay, timeout, maxTime                                            time.Duration
	maxFileSize, maxBody, minSize, minFree                             int64
	robots, conditional, noDedup, verbose, quiet, json                 bool
	liveMap                                                            string
	characterize                                                       bool

	// crawl controls (issue 26)
	seeds                           string
	include, exclude, exHosts       stringList
	sitemap, ignoreRobots           bool
	timeLimit                       time.Duration
	sizeLimit                       int64
	sitemapFiles, sitemapURLs       int
	operator, description, isPartOf string
	rotateAfter                     time.Duration
}

func (f *crawlFlags) register(fs *flagSet) {
	fs.StringVar(&f.warcDir, "warc-dir", "warcs", "directory for WARC and CDXJ files")
	fs.StringVar(&f.warcPrefix, "warc-prefix", warcfile.DefaultPrefix, "start of WARC file names; give each crawler of a fleet its own, so the file an index entry names is unique")
	fs.StringVar(&f.index, "index", "", "dedup index: a directory (embedded pebble) or a URL: pebble:///DIR, redis://HOST:PORT,HOST:PORT/ (Redis Cluster shared by a fleet), sidecar:///SOCKET or sidecar://HOST:PORT (token in WAYSIDE_TOKEN) (default WARC-DIR/"+crawl.IndexSubdir+")")
	fs.StringVar(&f.scope, "scope", dedupindex.DefaultScope, "dedup scope (collection) captures are filed under")
	fs.StringVar(&f.prefixes, "prefix", "", "comma-separated URL prefixes to stay within (default: the seeds' hosts)")
	fs.IntVar(&f.depth, "depth", -1, "link hops to follow from the seeds (-1: no limit)")
	fs.IntVar(&f.maxPages, "max-pages", 10000, "maximum URLs to fetch (0: no limit)")
	fs.DurationVar(&f.delay, "delay", 250*time.Millisecond, "pause between requests to the same host (politeness)")
	fs.StringVar(&f.userAgent, "user-agent", crawl.DefaultUserAgent, "User-Agent header")
	fs.BoolVar(&f.robots, "robots", true, "accepted for old scripts: robots.txt is obeyed by default now (see --ignore-robots)")
	fs.BoolVar(&f.ignoreRobots, "ignore-robots", false, "do not obey robots.txt (it is still fetched and recorded with --sitemap)")
	fs.StringVar(&f.seeds, "seeds", "", "read seed URLs from `FILE`, one a line (# comments and blank lines skipped; \"-\": stdin), besides any given as arguments")
	fs.Var(&f.include, "include", "fetch only URLs matching this regular expression `RE` (repeatable: any of them)")
	fs.Var(&f.exclude, "exclude", "never fetch URLs matching this regular expression `RE` (repeatable)")
	fs.Var(&f.exHosts, "exclude-host", "never fetch URLs on this `HOST` or its subdomains (HOST:PORT: that port only; repeatable, or comma-separated)")
	fs.BoolVar(&f.sitemap, "sitemap", false, "also take seeds from the sitemaps (and sitemap indexes) named by Sitemap: lines of each seed host's robots.txt")
	fs.IntVar(&f.sitemapFiles, "sitemap-max-files", 100, "sitemap files read per crawl at most")
	fs.IntVar(&f.sitemapURLs, "sitemap-max-urls", 50000, "URLs taken from one sitemap at most (the sitemaps.org limit; files are read up to 50 MiB)")
	fs.DurationVar(&f.timeLimit, "time-limit", 0, "stop cleanly after this long (exit 0, summary says so; 0: no limit)")
	fs.Int64Var(&f.sizeLimit, "size-limit", 0, "stop cleanly once the records written reach this many `BYTES` (stored, compressed; fetches in flight still land; 0: no limit)")
	fs.StringVar(&f.verify, "verify", "size", "collision check on a digest match: size (lengths equal) or bytes (re-read the original)")
	fs.StringVar(&f.originalDirs, "original-dirs", "", "comma-separated directories holding WARC files of originals from earlier crawls (for --verify=bytes)")
	fs.BoolVar(&f.conditional, "conditional", false, "send If-None-Match/If-Modified-Since for URLs archived before; 304 → server-not-modified revisit")
	fs.StringVar(&f.version, "warc-version", "1.1", "WARC version to write: 1.0 or 1.1")
	fs.Int64Var(&f.maxFileSize, "max-file-size", warcfile.DefaultMaxFileSize, "rotate WARC files at this size in bytes")
	fs.DurationVar(&f.rotateAfter, "rotate-after", 0, "also rotate a WARC file once it has been open this long, e.g. 1h (0: by size only)")
	fs.StringVar(&f.operator, "operator", "", "warcinfo operator: who ran the crawl (a person or an institution, e.g. with a contact address)")
	fs.StringVar(&f.description, "description", "", "warcinfo description of the crawl")
	fs.StringVar(&f.isPartOf, "is-part-of", "", "warcinfo isPartOf: the collection the WARCs belong to (default the --scope)")
	fs.Int64Var(&f.maxBody, "max-body", 100<<20, "record at most this many body bytes per response (WARC-Truncated: length; 0: no limit); bodies are held in memory")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "connect and response-header timeout")
	fs.DurationVar(&f.maxTime, "max-time", 5*time.Minute, "cut a fetch still receiving after this long (WARC-Truncated: time; 0: no limit)")
	fs.IntVar(&f.parallel, "parallel", 4, "concurrent fetches")
	fs.StringVar(&f.match, "match", "digest", "dedup matching: digest (URL-agnostic) or url (same URL only)")
	fs.Int64Var(&f.minSize, "min-size", 1, "smallest payload in bytes that is deduplicated")
	fs.Int64Var(&f.minFree, "min-free", 64<<20, "bytes kept free on the WARC directory's disk: the crawl stops cleanly (exit 1) before a record would leave less, so the indexes and CDXJ files beside the WARCs can finish (0: none; a full disk then stops the embedded indexes as a crash would, and the next run recovers)")
	fs.StringVar(&f.readScopes, "read-scopes", "", "comma-separated scopes consulted for duplicates but never written (earlier collections, like warcprox read-only buckets)")
	fs.StringVar(&f.dedupStatus, "dedup-status", "2xx", `HTTP statuses whose payloads are deduplicated, e.g. "2xx" or "200,203,2xx"`)
	fs.DurationVar(&f.window, "window", 0, "ignore originals older than this (e.g. 8760h: re-store a full copy yearly; 0: no limit)")
	fs.BoolVar(&f.noDedup, "no-dedup", false, "write every response in full")
	fs.StringVar(&f.captureIndex, "capture-index", "", "keep a capture index of every capture in `DIR`, served by the access routes of wayside serve (default WARC-DIR/"+consumers.CaptureIndexSubdir+`; "-": none)`)
	fs.StringVar(&f.liveMap, "live-map", "", "keep a live MementoMap of the WARC directory in `FILE` as records land (merged every minute and at the end; caught up from the CDXJ files after a crash)")
	fs.BoolVar(&f.verbose, "v", false, "verbose logging")
	fs.BoolVar(&f.quiet, "q", false, "quiet: no progress line")
	fs.BoolVar(&f.quiet, "quiet", false, "same as -q")
	fs.BoolVar(&f.json, "json", false, "print the summary as JSON on stdout")
	fs.atLeast("depth", -1)
	fs.atLeast("max-pages", 0)
	fs.atLeast("delay", 0)
	fs.atLeast("max-file-size", 1)
	fs.atLeast("rotate-after", 0)
	fs.atLeast("max-body", 0)
	fs.atLeast("timeout", float64(time.Millisecond))
	fs.atLeast("max-time", 0)
	fs.atLeast("parallel", 1)
	fs.atLeast("min-size", 1)
	fs.atLeast("window", 0)
	fs.atLeast("min-free", 0)
	fs.atLeast("time-limit", 0)
	fs.atLeast("size-limit", 0)
	fs.atLeast("sitemap-max-files", 1)
	fs.atLeast("sitemap-max-urls", 1)
	fs.oneOf("warc-version", warcio.Version10, warcio.Version11)
	fs.existingDirs("original-dirs")
	fs.BoolVar(&f.characterize, "characterize", false, "identify the format of every capture as it lands (off the write path), into WARC-DIR/"+characterizationSubdir+" (query it with wayside characterize query --store)")
}

func runCrawl(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "crawl", crawlUsage)
	var f crawlFlags
	f.register(fs)
	waczOut := fs.String("wacz", "", "at the end, package the WARC directory's closed WARC files as a signed WACZ `FILE` (see wayside wacz create)")
	upload := fs.String("upload", "", "copy each closed WARC file (and its CDXJ) to `s3://BUCKET/PREFIX?endpoint=…` at the end, proved before the local copy goes (see wayside upload)")
	keepLocal := fs.Bool("keep-local", false, "with --upload, keep the local WARC files too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keepLocal && *upload == "" {
		return fs.usagef("crawl: --keep-local needs --upload")
	}
	if err := checkWACZOutput(fs, *waczOut); err != nil {
		return err
	}
	if fs.NArg() == 0 && f.seeds == "" {
		return fs.usagef("crawl: no URL given (arguments or --seeds FILE)")
	}
	if !validWARCPrefix(f.warcPrefix) {
		return usagef("crawl: --warc-prefix %q: use letters, digits, '.', '_' and '-' only", f.warcPrefix)
	}
	var bucket *s3.Bucket
	if *upload != "" {
		// Checked before the crawl: a bucket that cannot be reached is
		// said at once, not after the work. Files an earlier run left
		// (crash, failed upload) go first.
		var err error
		if bucket, err = s3.Open(ctx, *upload); err != nil {
			return fmt.Errorf("crawl: --upload: %w", err)
		}
		if _, err := os.Stat(f.warcDir); err == nil {
			if err := mirrorDirs(ctx, e, bucket, []string{f.warcDir}, *keepLocal, f.quiet, "crawl: upload"); err != nil {
				return err
			}
		}
	}
	_, err := crawlOnce(ctx, e, &f, fs.Args(), "crawl")
	if err != nil || ctx.Err() != nil {
		return err
	}
	if *waczOut != "" {
		if err := crawlWACZ(ctx, e, *waczOut, f.warcDir, fs.Args(), f.liveMap, f.quiet); err != nil {
			return err
		}
	}
	if bucket != nil {
		return mirrorDirs(ctx, e, bucket, []string{f.warcDir}, *keepLocal, f.quiet, "crawl: upload")
	}
	return nil
}

// crawlSummary is what one crawl did.
type crawlSummary struct {
	rec       crawl.Stats
	crawler   crawl.CrawlStats
	writer    warcfile.WriterStats
	consumers []wayside.ConsumerStats
	elapsed   time.Duration
}

// crawlOnce runs one crawl with flags f and prints progress and a summary.
func crawlOnce(ctx context.Context, e *env, f *crawlFlags, urls []string, label string) (*crawlSummary, error) {
	var seeds []*url.URL
	for _, s := range urls {
		u, err := crawl.ParseSeed(s)
		if err != nil {
			return nil, usagef("%v", err)
		}
		seeds = append(seeds, u)
	}
	if f.seeds != "" {
		more, err := readSeedsFile(e, f.seeds)
		if err != nil {
			return nil, err
		}
		seeds = append(seeds, more...)
	}
	if len(seeds) == 0 {
		return nil, usagef("crawl: no seed URL: %s holds none", f.seeds)
	}
	filter, err := f.filter()
	if err != nil {
		return nil, usagef("%v", err)
	}
	for _, u := range seeds {
		if why := filter.Check(u); why != "" {
			return nil, usagef("crawl: seed %s is excluded: %s", u, why)
		}
	}
	prefixes := splitList(f.prefixes)
	scope, err := crawl.NewScope(seeds, prefixes)
	if err != nil {
		return nil, usagef("%v", err)
	}
	for _, u := range seeds {
		if err := scope.Allow(u); err != nil {
			return nil, usagef("seed %v", err)
		}
	}
	verify, err := crawl.ParseVerify(f.verify)
	if err != nil {
		return nil, usagef("%v", err)
	}
	match, err := dedupindex.ParseMatch(f.match)
	if err != nil {
		return nil, usagef("crawl: --match: %v", err)
	}
	var statuses []dedupindex.StatusRange // nil: the policy's default, 2xx
	if f.dedupStatus != "" {
		if statuses, err = dedupindex.ParseStatuses(f.dedupStatus); err != nil {
			return nil, usagef("crawl: --dedup-status: %v", err)
		}
	}
	if f.index != "" {
		if _, err := dedupindex.ParseURL(f.index); err != nil {
			return nil, usagef("crawl: --index: %v", err)
		}
	}
	log := e.logger(f.verbose)
	// The consumers of the crawl's captures: the same assembly `wayside
	// serve` uses (package consumers), catching up from the CDXJ files
	// beside the WARCs.
	cc := e.consumers // tests add consumers here
	cc.CDXJDirs = []string{f.warcDir}
	cc.LiveMap = consumers.LiveMapConfig{Path: f.liveMap, Name: f.scope}
	if f.characterize {
		cc.Characterize = consumers.CharacterizeConfig{Store: filepath.Join(f.warcDir, characterizationSubdir), WARCDirs: []string{f.warcDir}}
	}
	cc.CaptureIndex = consumers.CaptureIndexConfig{Dir: f.captureIndex, Scope: f.scope}
	switch f.captureIndex {
	case "":
		cc.CaptureIndex.Dir = filepath.Join(f.warcDir, consumers.CaptureIndexSubdir)
	case "-":
		cc.CaptureIndex.Dir = ""
	}
	cc.Logger = log
	cons, err := consumers.Open(cc)
	if err != nil {
		return nil, err
	}
	// --index names any linked backend (backends.go); without it the
	// session opens the embedded index in WARC-DIR/dedup-index itself.
	var ix dedupindex.Index
	if f.index != "" && !f.noDedup {
		if ix, err = dedupindex.OpenURL(ctx, f.index, dedupindex.OpenOptions{Logger: log, Token: e.getenv("WAYSIDE_TOKEN")}); err != nil {
			return nil, errors.Join(fmt.Errorf("crawl: %w", err), cons.Close())
		}
		// The session does not close an index it was given: closed after
		// s.Close below (its error reported), or here on an early return.
		defer func() {
			if ix != nil {
				ix.Close()
			}
		}()
	}
	s, err := crawl.Open(crawl.Config{
		WARCDir: f.warcDir, Index: ix, NoDedup: f.noDedup,
		Policy: dedupindex.Policy{Match: match, MinPayloadSize: f.minSize, Scope: f.scope,
			ReadOnlyScopes: splitList(f.readScopes), Statuses: statuses, Window: f.window},
		Writer: warcfile.WriterOptions{Prefix: f.warcPrefix, Version: f.version, MaxFileSize: f.maxFileSize, MinFreeBytes: f.minFree,
			RotateAfter: f.rotateAfter,
			Info: append([]warcio.Field{{Name: "http-header-user-agent", Value: f.userAgent}, {Name: "isPartOf", Value: cmp.Or(f.isPartOf, f.scope)},
				{Name: "robots", Value: map[bool]string{true: "obey", false: "ignore"}[!f.ignoreRobots]}},
				warcfile.InfoFields(f.operator, f.description, "")...)},
		Recorder: crawl.Options{Verify: verify, OriginalDirs: splitList(f.originalDirs), Conditional: f.conditional, MaxBody: f.maxBody, MaxDuration: f.maxTime,
			Timeout: f.timeout, Allow: scope.Allow, MaxConnsPerHost: max(f.parallel, 1), Logger: log},
		Subscriber: cons.Fanout,
	})
	if err != nil {
		return nil, errors.Join(err, cons.Close())
	}
	if rep := s.Writer.Recovery(); len(rep.Files) > 0 {
		fmt.Fprintf(e.stderr, "recovered %d unfinished WARC file(s) from an earlier run (%d with an incomplete last record, saved as *.partial-tail)\n",
			len(rep.Files), rep.PartialTails)
	}
	// After the writer's recovery (CDXJ files rebuilt), before any capture.
	if err := cons.CatchUp(ctx); err != nil {
		return nil, errors.Join(err, s.Close(), cons.Close())
	}
	clog, err := crawl.OpenCrawlLog(filepath.Join(f.warcDir, crawl.CrawlLogName))
	if err != nil {
		return nil, errors.Join(err, s.Close(), cons.Close())
	}
	c, err := crawl.NewCrawler(crawl.CrawlConfig{Seeds: seeds, Recorder: s.Recorder, Scope: scope, MaxDepth: f.depth,
		MaxPages: f.maxPages, Delay: f.delay, UserAgent: f.userAgent, IgnoreRobots: f.ignoreRobots, Parallel: f.parallel, Logger: log,
		Filter: filter, Sitemaps: f.sitemap, SitemapLimits: crawl.SitemapLimits{MaxFiles: f.sitemapFiles, MaxURLs: f.sitemapURLs},
		TimeLimit: f.timeLimit, SizeLimit: f.sizeLimit, Log: clog})
	if err != nil {
		return nil, errors.Join(err, s.Close(), cons.Close(), clog.Close())
	}
	start := time.Now()
	stopProgress := func() {}
	if !f.quiet {
		stopProgress = progress(e.stderr, label, start, s, c)
	}
	runErr := c.Run(ctx)
	stopProgress()
	sum := &crawlSummary{rec: s.Recorder.Stats(), crawler: c.Stats(), elapsed: time.Since(start)}
	closeErr := errors.Join(s.Close(), clog.Close())
	if ix != nil {
		if err := ix.Close(); err != nil && closeErr == nil {
			closeErr = fmt.Errorf("crawl: close dedup index: %w", err)
		}
		ix = nil
	}
	sum.writer = s.Writer.Stats()
	// The WARC files are closed; now the consumers finish their queues.
	consErr := cons.Close()
	sum.consumers = cons.Stats()
	if f.json {
		if err := printJSON(e.stdout, sum.jsonView(f.warcDir)); err != nil {
			return sum, err
		}
	} else {
		printSummary(e.stdout, label, f.warcDir, sum)
		if cons.Characterizer != nil {
			printCharacterized(e.stdout, cons.Characterizer, cons.CharStore, filepath.Join(f.warcDir, characterizationSubdir))
		}
	}
	if fsutil.IsDiskFull(runErr) || fsutil.IsDiskFull(closeErr) {
		fmt.Fprintf(e.stderr, "%s: the disk holding %s is full (--min-free %d): every record reported written is in a WARC file and indexed; free space and run the same command again to continue (an unfinished .open file is recovered then)\n",
			label, f.warcDir, f.minFree)
	}
	if closeErr != nil {
		if !fsutil.IsDiskFull(runErr) {
			runErr = nil
		}
		return sum, errors.Join(runErr, closeErr, consErr)
	}
	if consErr != nil {
		return sum, fmt.Errorf("%s: the WARC files are complete, but %w", label, consErr)
	}
	if runErr != nil && ctx.Err() != nil && errors.Is(runErr, ctx.Err()) {
		fmt.Fprintln(e.stderr, label+": interrupted; files closed cleanly")
		return sum, nil
	}
	if runErr != nil {
		return sum, runErr
	}
	return sum, sum.failures(label)
}

// failures is the error of a crawl some of whose fetches failed: exit
// status 1, with the failure classes (the summary has a line for each).
func (s *crawlSummary) failures(label string) error {
	if s.crawler.Errors == 0 && s.rec.Errors == 0 {
		return nil
	}
	var parts []string
	for _, f := range s.crawler.Failures {
		parts = append(parts, fmt.Sprintf("%s %d", f.Class, f.Count))
	}
	if s.crawler.Errors == 0 {
		return fmt.Errorf("%s: %d dedup index errors (those responses were written in full; see the warnings above)", label, s.rec.Errors)
	}
	if s.rec.Errors > 0 {
		parts = append(parts, fmt.Sprintf("dedup index errors %d", s.rec.Errors))
	}
	if s.crawler.Pages == 0 {
		return fmt.Errorf("%s: nothing was fetched: %s", label, strings.Join(parts, ", "))
	}
	return fmt.Errorf("%s: %d of %d fetches failed (%s); the WARC files hold everything fetched",
		label, s.crawler.Errors, s.crawler.Errors+s.crawler.Pages, strings.Join(parts, ", "))
}

// crawlJSON is the summary of `wayside crawl --json`.
type crawlJSON struct {
	WARCDir         string                  `json:"warc_dir"`
	Seconds         float64                 `json:"seconds"`
	Pages           int64                   `json:"pages"`
	Errors          int64                   `json:"errors"`
	Failures        []crawl.Failure         `json:"failures"`
	OutOfScope      int64                   `json:"out_of_scope"`
	RobotsSkipped   int64                   `json:"robots_skipped"`
	Excluded        int64                   `json:"excluded"`
	Sitemaps        int64                   `json:"sitemaps"`
	Stopped         string                  `json:"stopped,omitempty"`
	Records         int64                   `json:"records"`
	Files           int                     `json:"files"`
	Responses       int64                   `json:"responses"`
	Truncated       int64                   `json:"truncated"`
	RevisitsDigest  int64                   `json:"revisits_identical_payload_digest"`
	RevisitsNotMod  int64                   `json:"revisits_server_not_modified"`
	RawBytes        int64                   `json:"raw_bytes"`
	StoredBytes     int64                   `json:"stored_bytes"`
	PayloadBytes    int64                   `json:"payload_bytes"`
	SavedBytes      int64                   `json:"saved_bytes"`
	Collisions      int64                   `json:"collisions"`
	PendingClaims   int64                   `json:"pending_claims"`
	IndexErrors     int64                   `json:"index_errors"`
	Conditional     int64                   `json:"conditional_requests"`
	NotDeduplicated map[string]int64        `json:"not_deduplicated,omitempty"`
	Consumers       []wayside.ConsumerStats `json:"consumers"`
}

func (s *crawlSummary) jsonView(dir string) crawlJSON {
	r := s.rec
	fs := s.crawler.Failures
	if fs == nil {
		fs = []crawl.Failure{}
	}
	return crawlJSON{WARCDir: dir, Seconds: s.elapsed.Seconds(), Pages: s.crawler.Pages, Errors: s.crawler.Errors, Failures: fs,
		OutOfScope: s.crawler.OutOfScope, RobotsSkipped: s.crawler.Robots, Excluded: s.crawler.Excluded, Sitemaps: s.crawler.Sitemaps,
		Stopped: s.crawler.Stopped, Records: s.writer.Records, Files: s.writer.Files,
		Responses: r.Responses, Truncated: r.Truncated, RevisitsDigest: r.RevisitsDigest, RevisitsNotMod: r.RevisitsNotMod,
		RawBytes: s.writer.RawBytes, StoredBytes: s.writer.StoredBytes, PayloadBytes: r.PayloadBytes, SavedBytes: r.SavedBytes,
		Collisions: r.Collisions, PendingClaims: r.Pending, IndexErrors: r.Errors, Conditional: r.ConditionalSent,
		NotDeduplicated: r.Skipped, Consumers: s.consumers}
}

// progress prints one status line a second on w until stopped.
func progress(w io.Writer, label string, start time.Time, s *crawl.Session, c *crawl.Crawler) func() {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r, cs, ws := s.Recorder.Stats(), c.Stats(), s.Writer.Stats()
				fmt.Fprintf(w, "%s %5.0fs  pages %d  queued %d  responses %d  revisits %d  written %s  errors %d\n",
					label, time.Since(start).Seconds(), cs.Pages, cs.Queued, r.Responses, r.RevisitsDigest+r.RevisitsNotMod,
					humanBytes(ws.StoredBytes), r.Errors+cs.Errors)
			}
		}
	}()
	return func() { close(done); <-finished }
}

func printSummary(w io.Writer, label, dir string, s *crawlSummary) {
	r := s.rec
	fmt.Fprintf(w, "%s summary (%s, WARCs in %s)\n", label, s.elapsed.Round(time.Millisecond), dir)
	fmt.Fprintf(w, "  pages fetched        %d (failed %d, out of scope %d, excluded %d, robots.txt skipped %d, sitemaps %d)\n",
		s.crawler.Pages, s.crawler.Errors, s.crawler.OutOfScope, s.crawler.Excluded, s.crawler.Robots, s.crawler.Sitemaps)
	if s.crawler.Stopped != "" {
		fmt.Fprintf(w, "  stopped:             %s (%d URLs left in the queue)\n", s.crawler.Stopped, s.crawler.Queued)
	}
	for _, f := range s.crawler.Failures {
		fmt.Fprintf(w, "  FAILED               %s: %d, e.g. %s\n", f.Class, f.Count, oneLine(f.Example))
	}
	if r.Errors > 0 {
		fmt.Fprintf(w, "  dedup index errors   %d (those responses were written in full; see the warnings above)\n", r.Errors)
	}
	fmt.Fprintf(w, "  records              %d in %d file(s)\n", s.writer.Records, s.writer.Files)
	fmt.Fprintf(w, "  responses            %d (truncated %d)\n", r.Responses, r.Truncated)
	fmt.Fprintf(w, "  revisits             %d identical-payload-digest, %d server-not-modified\n", r.RevisitsDigest, r.RevisitsNotMod)
	fmt.Fprintf(w, "  bytes written        %s raw, %s stored (gzip)\n", humanBytes(s.writer.RawBytes), humanBytes(s.writer.StoredBytes))
	fmt.Fprintf(w, "  payload not stored   %s thanks to revisits (payload received %s)\n", humanBytes(r.SavedBytes), humanBytes(r.PayloadBytes))
	fmt.Fprintf(w, "  collisions           %d   pending claims %d   conditional requests %d\n", r.Collisions, r.Pending, r.ConditionalSent)
	if len(r.Skipped) > 0 {
		var ks []string
		for k := range r.Skipped {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		var parts []string
		for _, k := range ks {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Skipped[k]))
		}
		fmt.Fprintf(w, "  not deduplicated     %s\n", strings.Join(parts, ", "))
	}
	for _, c := range s.consumers {
		state := "ok"
		switch {
		case c.Failed > 0:
			state = "FAILED (" + c.LastError + ")"
		case c.Behind:
			state = "BEHIND"
		}
		fmt.Fprintf(w, "  consumer %-11s %d captures delivered, %d failed, %d dropped (caught up %d times): %s\n",
			c.Name, c.Delivered, c.Failed, c.Dropped, c.Resyncs, state)
	}
}

func humanBytes(n int64) string { return fsutil.HumanBytes(n) }

// validWARCPrefix reports whether p can start a file name on every
// system: letters, digits, '.', '_' and '-', not starting with '.'.
func validWARCPrefix(p string) bool {
	if p == "" || p[0] == '.' {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// filter is the crawl's URL filter from --include, --exclude and
// --exclude-host.
func (f *crawlFlags) filter() (*crawl.Filter, error) {
	inc, err := crawl.CompilePatterns("--include", f.include)
	if err != nil {
		return nil, err
	}
	exc, err := crawl.CompilePatterns("--exclude", f.exclude)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, h := range f.exHosts {
		hosts = append(hosts, splitList(h)...)
	}
	if len(inc) == 0 && len(exc) == 0 && len(hosts) == 0 {
		return nil, nil
	}
	return &crawl.Filter{Include: inc, Exclude: exc, ExcludeHosts: hosts}, nil
}

// readSeedsFile reads --seeds (a file, or "-" for stdin).
func readSeedsFile(e *env, path string) ([]*url.URL, error) {
	if path == "-" {
		return crawl.ReadSeeds(e.stdin, "(stdin)")
	}
	if err := checkInputs("crawl: --seeds", []string{path}); err != nil {
		return nil, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("crawl: --seeds: %w", err)
	}
	defer fh.Close()
	return crawl.ReadSeeds(fh, path)
}
