// Package wayside holds the few types every part of Wayside shares.
//
// The central one is Capture: the event "a record is durably in a WARC file at
// (file, offset) with payload digest D". The crawler (package crawl) and the
// sidecar's WARC ingester produce captures; the dedup index, the live
// MementoMap (package profiler) and the sidecar
// consume them. A Capture is delivered to subscribers only after the bytes it
// describes have been written and synced to stable storage, so a consumer may
// safely point other records (revisits, index entries) at it.
package wayside
