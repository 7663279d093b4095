// Package ingest follows WARC directories that other crawlers write
// (Heritrix, warcprox, Zeno, wget, a Wayside crawl) and turns every complete
// record into a wayside.Capture: the second producer of the capture spine,
// beside package crawl. `wayside serve` runs it (package sidecar).
//
// An Ingester polls its directories for *.warc, *.warc.gz and their ".open"
// forms, and *.wacz files (each WARC file stored in one is read in place,
// by range through the zip, and named "NAME.wacz#WARC" in captures, CDXJ
// files and the checkpoint: warcio.MemberName), and reads each file from
// where it stopped, in batches of complete
// records (a partial record at the end of a growing file is read on a later
// poll). Each batch is made durable in order:
//
//  1. fsync of the crawler's WARC file (no index entry may outlive a power
//     loss of the record it points at);
//  2. the originals it provides into the dedup index, one key each, under
//     the configured dedupindex.Policy (Deduper.SeedEntry: complete, 2xx,
//     non-empty, http(s); the rule import applies too); revisits never;
//  3. its CDXJ lines (cdxj.HasLine records, cdxj.FromCapture) appended to
//     CDXJDir/NAME.cdxj for the WARC file NAME (cdxj.SideFileName:
//     NAME.warc.gz.cdxj for NAME.warc.gz), and fsynced;
//  4. its captures to the Subscriber (a wayside.Fanout);
//  5. the checkpoint: per file (keyed by the name without ".open", with
//     device and inode to notice a replaced file), the offset after the
//     last complete record and the CDXJ size at that point, written
//     atomically. A record in a gzip member that holds several (a WARC
//     compressed as one gzip stream) has no stored offset of its own: it
//     is checkpointed as the offset reading started from and the
//     uncompressed bytes from there already ingested, and a file read to
//     a clean end is checkpointed at its end, so such a file is read once
//     and no record of it is ingested twice. Such a record has no offset
//     and length of its own, so (as `wayside cdxj` does) it gets no CDXJ
//     line and is not delivered as a capture: the capture index equals
//     one rebuilt from the CDXJ files, and every entry is readable. The
//     ingester reports it (Status.Errors, one report per file read).
//
// After a crash the CDXJ files are cut back to their checkpointed sizes
// and the batch in flight is read again: the index Puts are no-ops, its
// CDXJ lines are written once, and consumers may see its captures a second
// time (at least once; (File, Offset) identifies a capture). Config.
// Recovered runs between that repair and the first new capture: consumers
// catch up from the CDXJ files there.
//
// When a WARC file is closed (it lost its ".open" suffix, or was written
// without one and has been read to its end) its CDXJ file, appended in
// durable order so far, is rewritten sorted in byte order (cdxj.SortFile:
// temporary file, fsync, rename), then the checkpoint records it Done; a
// crash in between sorts it again. A closed file ending in a partial
// record is reported truncated (Status) once it has been quiet for three
// polls, and its CDXJ is sorted too; if it grows after all, reading goes
// on and the file is finished again.
//
// A full disk pauses ingest rather than stopping it: before each file it
// checks that the file systems it writes to keep Config.MinFreeBytes free,
// and a write that fails for want of space (ENOSPC, EDQUOT) leaves nothing
// half-written (the CDXJ file is cut back, the checkpoint is replaced
// atomically) and the batch is read again later. Status.Paused says why
// it waits; it resumes by itself once space is freed.
//
// A watched entry may be a bucket prefix (s3://BUCKET/PREFIX?endpoint=…)
// instead of a directory: its objects are listed and read by range
// (warcfile.Locations), a grown object (replaced by a longer copy) is read
// on from its checkpointed offset, and captures carry the object's
// location URL as their File, so the capture index stores where each
// record lives. A store that cannot be listed or read pauses ingest of
// that prefix (Status.Paused says so; a read error is never taken for a
// damaged record and skipped): what was read whole is kept, the rest is
// read again once the store answers.
//
// A Heritrix crawl.log may be tailed alongside for fetch statistics (the
// WARC files stay the source of truth).
package ingest
