// Package wayside holds the few types every part of Wayside shares: the
// capture spine.
//
// The central type is Capture: the event "a record is durably in a WARC file
// at (file, offset) with payload digest D". Two producers make captures —
// the crawler (package crawl) and the WARC ingester that follows the
// directories other crawlers write to — and both convert records with the
// one converter, warcio.Record.Capture. They hand each capture to a Fanout
// only after the bytes it describes have been written and synced to stable
// storage, so a consumer may safely point other records (revisits, index
// entries) at it.
//
// The Fanout gives every consumer (Subscriber) its own bounded queue: the
// live MementoMap, the CDXJ files, format characterization, the capture
// index. A slow consumer falls behind and catches up (Resyncer); a failing
// one is counted and reported; neither ever delays a WARC write or a dedup
// commit.
package wayside
