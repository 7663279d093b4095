// Package dedupindex is Wayside's crawl-time payload-digest index.
//
// It owns the Index interface (claim a digest or get the existing original →
// write the full response → make it durable → commit or cancel), the dedup
// policy applied in front of any Index (URL-agnostic or same-URL matching,
// minimum payload size, status filter, read-only and read-write scopes, time
// window), and seeding an index from earlier crawls (WARC, CDX, CDXJ).
// Storage backends live in subpackages named after their dependency:
// dedupindex/pebble is the embedded default. dedupindex/indextest is the
// conformance suite every backend passes.
//
// # Why claim → write → durable → commit
//
// A revisit record must never point at a record that was not durably
// written. A crawler therefore calls Deduper.Decide before writing a
// response. WriteResponseAndCommit hands it a Ticket: it writes the full
// response, makes the WARC durable and only then commits the original.
// Meanwhile other captures of the same payload get WriteResponse (Pending):
// a missed dedup costs bytes, a dangling revisit would lose data. Once
// committed, captures of the payload get WriteRevisit with the Original
// (target URI, date, record id) the revisit refers to. Pending claims are
// held in memory by the index process and die with it.
//
// # Digests
//
// Every digest is parsed and compared in the canonical form of package
// digest ("sha1:BASE32"), so hex, Base32, labelled and unlabelled digests
// from crawlers, CDX files and APIs all match.
//
// # Seeding
//
// Import reads WARC files (HTTP response records; payload digests are
// recomputed over the de-chunked entity), IA CDX (9 or 11 fields, or as the
// " CDX" header says) and CDXJ. Revisits are never taken as originals. Bad
// records are reported with file and offset or line and skipped (or stop
// the import with Strict); originals are written in durable batches.
//
// # Maintenance
//
// Every backend is also a Maintainer: Scan, Delete and Update select
// originals with a Selector (WARC files by base name, scope, URL prefix,
// date range). Delete and Update are crash-safe per original — an
// interrupted call leaves each original as it was or as asked, and the
// backend's Check passes — and never touch pending claims. Update is
// compare-and-set on the record id: `wayside dedup run --replace` moves
// originals to their records' new offsets with it (package postdedup,
// DedupIndexUpdater).
package dedupindex
