// Package captureindex is the index of every capture an archive holds:
// responses, resources, conversions and revisits (with their originals
// resolved), by collection, urlkey (SURT) and time. It is what the access
// routes of `wayside serve` answer from: the pywb/OutbackCDX-style CDX API,
// Memento TimeMaps and TimeGates, and raw and rewritten replay (package
// replay).
//
// # Feeding it
//
// An Index is a wayside.Subscriber: added to the Fanout of the crawler or
// the WARC ingester, it receives every capture once its record is durable,
// converted by the one converter (warcio.Record.Capture). It is also a
// wayside.Resyncer: Resync reads the CDXJ files written beside the WARCs
// (WithCDXJDirs; cdxj.Line.Capture converts their lines) and adds what the
// index missed, whether the Fanout dropped captures for it or the process
// died between a CDXJ line and its index entry; its owner calls it once at
// start too (package consumers does, after the producer's own recovery),
// so the index always covers the CDXJ files. A per-file watermark (size
// and modification time) keeps unchanged files from being read again.
//
// # Storage
//
// The store is Pebble (as the embedded dedup index). Keys sort like the
// lines of a CDXJ file — collection, urlkey, then time — so an exact URL, a
// prefix, a host or a domain is one range scan, read in either direction,
// and "closest to a time" is two iterators walking outwards:
//
//	0x10 uvarint(scope) escaped(urlkey) 0x00 seconds(8, big-endian, sign flipped) uvarint(file) uvarint(offset)
//
// File names, MIME types and collection names are interned (0x02 name → id,
// 0x03 id → name). The value holds the record type, stored length, target
// URI, status, MIME, payload digest (binary), payload length, sub-second
// date, WARC-Truncated, the revisit's profile and WARC-Refers-To fields,
// and — once found — its original's file, offset and length. A revisit
// whose original is not (yet) held has a marker key (0x11 + its key) and is
// tried again by every Resync; Resolve tries again at read time.
//
// Originals are found as replay tools find them: the capture of
// WARC-Refers-To-Target-URI at WARC-Refers-To-Date with the revisit's
// payload digest, else the latest capture of that URL (or the revisit's own
// URL) at or before the revisit with that digest; the revisit's collection
// first, then the others.
//
// Writes are atomic batches, fsynced together once a second
// (WithSyncInterval) rather than one by one: a killed process loses nothing
// the kernel has, and after a power loss the catch-up at start reads what
// the last interval lost from the CDXJ files (the producers write CDXJ
// lines on their durable path, before they deliver the captures). No entry
// can point at a record that is not durable: captures are delivered, and
// CDXJ lines written, only after their records are synced.
//
// # Maintenance
//
// Delete removes the captures a dedupindex.Selector picks in durable
// batches; revisits whose original it removes become unresolved first
// (and are looked for again), so no entry ever points at a removed
// capture, and a delete killed half-way leaves each capture before or
// after with Check passing. ReplaceFiles swaps all rows of rewritten WARC
// files (`wayside dedup run --replace`: same names, records at new
// offsets) for their new captures in one atomic batch; re-adding the same
// captures afterwards (the daemon re-reading the files) adds nothing.
//
// Check verifies the invariants (bbolt style) and is run in test cleanup.
package captureindex
