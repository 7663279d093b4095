// Package crawl records HTTP traffic into WARC files with crawl-time
// deduplication: the first producer of the capture spine (package ingest
// is the second).
//
// It owns the recording http.RoundTripper (Recorder), revisit records
// (identical-payload-digest and server-not-modified), the recorder behind
// the colly v2 plug-in (crawlcolly.Attach, in package crawl/crawlcolly) and
// the bounded, polite crawler behind `wayside crawl` (Crawler),
// which counts its failed fetches by kind (CrawlStats.Failures, named by
// FailureClass: connection refused, DNS lookup failed, timeout...) so that a
// crawl never reports success for fetches it could not make.
// Open wires a warcfile.Writer, a dedup index (any dedupindex.Index the caller
// opened, e.g. with dedupindex.OpenURL; by default the embedded pebble index
// in WARC-DIR/dedup-index) and a Recorder into a Session. crawl links no
// other backend: a program that wants Redis or a running sidecar imports
// dedupindex/redis or client and passes the index it opened.
//
// # Crawl controls
//
// CrawlConfig narrows and bounds a crawl beyond its Scope: Filter
// (regular expressions on the URL, excluded hosts), Sitemaps (seeds from
// robots.txt Sitemap: lines and sitemap indexes, within SitemapLimits),
// TimeLimit and SizeLimit (the crawl stops cleanly: Run returns nil and
// CrawlStats.Stopped says why). robots.txt is fetched, recorded and obeyed
// by default (an unreachable robots.txt disallows its host, RFC 9309);
// IgnoreRobots is the explicit opt-out.
// CrawlLog writes a line per URL attempted in Heritrix 3's crawl.log
// layout (FormatLogLine), with discovery paths and duplicate annotations;
// ReadSeeds reads a seeds file.
//
// # Captures
//
// Every record written becomes a wayside.Capture through the one converter,
// warcio.Record.Capture: the warcfile.Writer serialises the record, reads those
// bytes back with warcio (without hashing the payload again when a digest
// is declared: the declared digest is the digest rule's answer) and
// converts the result, so the capture, the CDXJ line beside the WARC and
// `wayside cdxj` of the WARC cannot drift apart. The capture of a record
// goes to Config.Subscriber (the wayside.Fanout of package consumers) once
// the record is durable and its CDXJ line written, in file order, from the
// goroutine that completed the fsync (the Fanout never blocks it).
//
// # Recording
//
// The Recorder speaks HTTP/1.1 only and never decodes content: it wraps each
// connection (after TLS, via its own DialContext/DialTLSContext) and appends
// the bytes written and read to the exchange attached to the connection by
// httptrace GotConn, so request and response records hold exactly what
// crossed the wire — chunked framing, Content-Encoding and all — and
// keep-alive connections attribute every byte to its own exchange. The
// payload digest is computed over the de-chunked entity by warcio's parser
// (the same code readers use); the block digest over the exact block.
// Interim 1xx responses are not kept in the response record.
//
// # Durability and ordering
//
// Records go to a warcfile.Writer (package warcfile owns the WARC files:
// rotation, ".open" naming, the directory lock, group commit, the CDXJ
// side file and crash recovery, run by warcfile.OpenWriter). The Recorder
// commits a dedup claim only after WaitDurable: a revisit is written only
// for a committed original. A fetch that meets a pending claim of another
// fetch of the same Recorder waits until that claim is committed or
// cancelled and decides again (a revisit, usually); a pending claim of
// another process yields a full response.
//
// The Crawler does not wait in line for durability: RoundTrip returns its
// response as soon as the records are written, the worker extracts links
// and fetches on, and the fetch's crawl.log line and counts follow once
// warcfile.Writer.WaitDurableBatched returns, after a group commit that
// makes the records of many fetches durable with one fsync (within
// warcfile.DefaultCommitWindow, or at once when 64 waiters or 16 MiB
// gather); the dedup commits that follow run concurrently and share the
// index's own sync. Run returns once every written record is durable and
// logged. The order claim → write → fsync → commit is unchanged. Payloads
// that are compressed already (content-coded, images, fonts, media,
// archives) are stored in their record's gzip member as they are
// (warcio.Draft.IncompressibleFrom), not deflated again.
//
// # A full disk
//
// A Write that would leave less than warcfile.WriterOptions.MinFreeBytes free on
// the WARC directory's file system fails before writing anything (an error
// wrapping fsutil.ErrLowSpace), so the indexes and CDXJ files that share
// the disk keep room to finish and the files close cleanly. A write that
// meets ENOSPC anyway is cut off its WARC file (undo) or, for a CDXJ
// append, truncated back to the last whole line (the WARC file then stays
// ".open" and recovery rebuilds its CDXJ). The Crawler stops at the first
// fetch that could not be stored for want of space and Run returns that
// error; a later run continues.
//
// # Why not gowarc's writer
//
// gowarc v1.6.0's WarcFileWriter digests the chunk framing of chunked
// responses, can only fsync after every record (WithFlush), not once per
// group of concurrent records, and reports uncompressed bytes written rather
// than the stored (gzip member) length CDX/CDXJ need; the record
// serialisation (warcio.Draft) is small and exact. gowarc is used in tests
// only, as the strict independent reader.
package crawl
