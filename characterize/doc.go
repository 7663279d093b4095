// Package characterize identifies the format of every payload in a web
// archive — as captures land, or by reading existing WARC files — and keeps
// per-WARC aggregates that answer "which WARCs hold format X?" with one
// indexed query.
//
// # Identification
//
// Engine wraps siegfried (github.com/richardlehane/siegfried, pinned in
// go.mod) with its embedded PRONOM signatures: a PUID ("fmt/11"), format
// name, version, MIME type, the basis of the match and siegfried's warning.
// UNKNOWN is a result. The capture's URL and HTTP Content-Type are passed
// as hints (CSS, JavaScript and JSON have no byte signatures). The engine
// is warmed up when created, so the first capture is not delayed by
// siegfried building its matchers.
//
// Identifier characterizes one payload: it removes the Content-Encoding
// (gzip, deflate, br, zstd) and identifies the result, then opens
// containers found in it — zip, gzip and tar with the standard library, and
// WARC and ARC files with warcio (never siegfried's unpacker, which does
// not open WARC 1.0/1.1) — recursively, recording every nested object with its path
// from the record ("URI → bundle.zip → img/a.png"). Formats built on zip
// (OOXML, ODF, EPUB) are identified by siegfried's container signatures and
// not opened. Limits bound the depth, the bytes held per object, the bytes
// decompressed per record, the objects per record and the compression
// ratio (decompression bombs). What gets in the way — a truncated payload,
// a corrupt member, a limit — becomes a note on the object concerned; it
// is never an error and never stops the pipeline. Identical payloads
// (same SHA-1 computed over the bytes, same hints) reuse the earlier
// result.
//
// # Results
//
// Store keeps one Record per capture (the payload's Result and its nested
// objects), Aggregates per WARC file and PUID (payloads and nested objects
// counted and summed separately, plus the revisits that inherit the
// format) and a FileSummary per file, in go-memdb tables indexed by file
// and by format. A revisit inherits its original's identification (the
// record its WARC-Refers-To names, else the one its
// WARC-Refers-To-Target-URI and -Date name, as pywb resolves revisits,
// else the first record by file and offset with its payload digest); one
// whose original is not characterized yet stays unresolved until it is,
// and a revisit is re-resolved when an original with its digest arrives,
// so the result does not depend on the order captures arrive in (the
// consumer's workers) — Store.Check verifies it.
// Every change is appended to a checksummed log and fsynced before it is
// applied, so an acknowledged result survives kill -9; the log is folded
// into a snapshot as it grows, and a torn last line is cut at open.
// Everything can be rebuilt from the WARC files. Store.Check verifies that
// the aggregates equal what the records add up to.
//
// # The consumer
//
// Characterizer is a wayside.Subscriber: added to the Fanout of
// `wayside crawl` or `wayside serve`, it characterizes each durable
// capture's record from the bytes the crawl writer hands on
// (Capture.RecordBytes, within Options.RecordBudget) or, without them,
// reads the record back (warcfile.Locations: a WARC file in Dirs, one stored
// in a WACZ, a location URL; warcio.ReadAt) — the same Record
// either way — on its own workers and stores the results in durable batches (Options.OnCommit
// acknowledges them). It never touches the write path: behind the Fanout
// it has its own queue. As a wayside.Resyncer it catches up from the CDXJ
// files the producer writes beside its WARCs (Options.CDXJDirs: every line
// naming a file and offset the store lacks is read back and
// characterized), or without them by reading the WARC files in its
// directories (those not already read whole at their current size). Package
// consumers builds it for `wayside crawl --characterize` and `wayside serve`
// (characterize.enabled) and catches it up at start. ScanFile characterizes
// a whole WARC file (used by `wayside characterize FILE...`).
//
// # Metadata records
//
// WriteMetadata writes what the store holds about one WARC file back as
// WARC metadata records (WARC 1.1 Annex A, format identification), in a
// separate file beside it, NAME.characterization.warc.gz (MetadataName):
// a warcinfo record naming the tool and signatures (Engine.Tool), then one
// metadata record per characterized response, resource or conversion
// record, WARC-Refers-To its WARC-Record-ID, with an
// application/warc-fields block (puid, format, format-version, mime,
// basis, warning, size, content-encoding, note, one "nested" line per
// object inside it). Records are encoded with warcio.RecordHead, one gzip
// member each (warcio.MemberWriter); the file is replaced atomically. The archive's own WARC
// files are never modified. `wayside characterize --write-metadata`
// writes them.
//
//	e, _ := characterize.NewEngine()
//	st, _ := characterize.OpenStore("warcs/characterization", characterize.StoreOptions{})
//	c, _ := characterize.New(characterize.Options{Store: st, Identifier: characterize.NewIdentifier(e, characterize.Limits{}),
//		Dirs: []string{"warcs"}, CDXJDirs: []string{"warcs"}})
//	c.Resync(ctx)       // what a crash or a run without it left out
//	fanout.Add("characterize", c)
//	...
//	c.Close(); st.Close()
//	st.Formats("fmt/18")   // WARC files holding PDF 1.4, with counts and bytes
package characterize
