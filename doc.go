// Package wayside holds the few types every part of Wayside shares: the
// capture spine.
//
// The central type is Capture: the event "a record is durably in a WARC file
// at (file, offset) with payload digest D". Two producers make captures —
// the crawler (package crawl) and the ingester that follows the WARC
// directories other crawlers write to (package ingest) — and both convert
// records with the one converter, warcio.Record.Capture (the crawler reads
// back the bytes it has just serialised). Each producer writes the
// capture's CDXJ line (cdxj.FromCapture) beside the WARC itself, on its
// durable path, and then hands the capture to a Fanout — only after the
// bytes it describes are on stable storage, so a consumer may safely point
// other records (revisits, index entries) at it. Captures of one WARC file
// reach the Fanout in offset order.
//
// The Fanout gives every consumer (Subscriber) its own bounded queue and
// goroutine: the live MementoMap today; format characterization and the
// capture index next. A slow consumer falls behind and catches up from the
// CDXJ files (Resyncer); a failing one is counted and reported; neither
// ever delays a WARC write or a dedup commit. Package consumers assembles
// the consumers, the same for `wayside crawl` and `wayside serve`, and says
// how to add one.
//
// A consumer that needs a capture's bytes (format characterization) would
// otherwise read each record back from its WARC file. The crawl writer
// still holds every record it has just written, uncompressed, so it hands
// them on in Capture.RecordBytes — only when a consumer wants them
// (RecordBytesWanter; Fanout.WantsRecordBytes tells the producer) and
// never serialised. The Fanout gives them only to the consumers that want
// them, within a per-consumer RecordBudget (WithRecordBudget, default
// DefaultRecordBudget = 64 MiB held in a queue): a capture queued while
// the budget is spent loses its bytes, and its consumer reads the record
// back (warcio.FindFile, warcio.ReadAt). So memory stays bounded however
// far a consumer falls behind, and a consumer must always be able to do
// without the bytes: the ingester, CDXJ catch-up and resync never carry
// them.
package wayside
