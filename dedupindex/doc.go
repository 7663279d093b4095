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
// # Index URLs
//
// OpenURL opens an index by URL through a registry of schemes (the way
// database/sql finds drivers and litestream its replica clients): each
// backend package registers its scheme with RegisterScheme when it is
// linked, so this package imports no backend and a program links only the
// backends it imports. cmd/wayside and the daemon link all of them:
//
//	pebble:///var/lib/wayside/index   embedded pebble (dedupindex/pebble;
//	                                  a bare path means the same)
//	redis://h1:6379,h2:6379/?prefix=wayside:&wait=1&wait_timeout=500ms
//	                                  Redis Cluster shared by a fleet
//	                                  (dedupindex/redis); also lease=10m,
//	                                  capacity=N and byurl=0 (when the index
//	                                  is created), password=…, cluster=0
//	sidecar:///run/wayside/wayside.sock
//	sidecar://127.0.0.1:8181          a running `wayside serve` (package
//	                                  client; token from OpenOptions.Token
//	                                  or WAYSIDE_TOKEN)
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
