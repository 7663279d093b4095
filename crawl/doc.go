// Package crawl records HTTP traffic into WARC files with crawl-time
// deduplication.
//
// It owns the recording http.RoundTripper (wire-exact request and response
// records, WARC-IP-Address, WARC-Concurrent-To, truncation), the WARC file
// writer (warcinfo per file, one gzip member per record, size-based rotation,
// ".open" while written), revisit records (identical-payload-digest and
// server-not-modified), the colly v2 plug-in (Attach) and the `wayside crawl`
// crawler built on them. It emits a wayside.Capture for every record once the
// record is durable.
package crawl
