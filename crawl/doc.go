// Package crawl records HTTP traffic into WARC files with crawl-time
// deduplication.
//
// It owns the recording http.RoundTripper (Recorder), the WARC file writer
// (Writer), crash recovery of unfinished files (Recover), revisit records
// (identical-payload-digest and server-not-modified), the colly v2 plug-in
// (Attach) and the bounded, polite crawler behind `wayside crawl` (Crawler).
// Open wires a Writer, the embedded pebble dedup index and a Recorder into a
// Session. Every record written becomes a wayside.Capture, delivered to the
// Subscriber only once the record is durable.
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
// Writer appends one gzip member per record and group-commits: WaitDurable
// returns after an fsync covering the record, shared by all concurrent
// writers. Only then are CDXJ lines appended (NAME.cdxj beside NAME.warc.gz),
// dedup claims committed and captures delivered. A revisit is written only
// for a committed original; a pending claim of another fetch yields a full
// response. Files carry ".open" until closed (fsync, rename, directory
// fsync). A directory lock keeps two writers out of one directory.
// Writer.Check verifies the writer's invariants (bbolt style).
//
// # Recovery
//
// OpenWriter first runs Recover on leftover ".open" files: the file is cut
// after the last complete, digest-verified record (the tail is saved as
// NAME.warc.gz.partial-tail, never destroyed), fsynced, renamed and its CDXJ
// rebuilt. Durable records always lie before the cut, so nothing an index
// entry or revisit refers to is removed.
//
// # Why not gowarc's writer
//
// gowarc v1.6.0's WarcFileWriter digests the chunk framing of chunked
// responses, can only fsync after every record (WithFlush), not once per
// group of concurrent records, and reports uncompressed bytes written rather
// than the stored (gzip member) length CDX/CDXJ need; the record
// serialisation here is small and exact. gowarc provides the revisit profile
// constants and, in tests, the strict independent reader.
package crawl
