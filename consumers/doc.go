// Package consumers is the one place where the consumers of the capture
// spine are assembled, for both producers: `wayside crawl` (package crawl)
// and `wayside serve` (the sidecar's ingest of other crawlers' WARCs).
//
//	producer (crawl.Recorder, ingest.Ingester)
//	   │  record durable in its WARC file
//	   ├─► CDXJ line beside the WARC (the producer writes it, on its
//	   │   durable path: never dropped; the catch-up source)
//	   └─► Set.Fanout ─► live MementoMap (mementomap.Live)
//	                  ─► characterization (characterize)
//	                  ─► capture index (captureindex.Index; the access
//	                     routes of `wayside serve` answer from it)
//
// # The CDXJ files and the Fanout
//
// The CDXJ file beside each WARC is not a Fanout consumer: each producer
// writes it itself, after the record is durable and before it hands the
// capture to the Fanout (the crawl writer appends lines after each group
// fsync; the ingester appends and fsyncs them with each checkpointed
// batch). So a CDXJ line never goes missing while a consumer may: the
// Fanout gives every consumer a bounded queue and drops captures for a
// consumer that falls behind, and such a consumer catches up from the CDXJ
// files (wayside.Resyncer) — after drops, and at start-up (CatchUp) for
// what a crash or a run without it left out. A CDXJ file is appended in
// durable order while its WARC file is ".open" and rewritten sorted when
// the WARC file is closed; catch-up selects lines by file and offset, so
// either order serves.
//
// Ordering: a consumer sees a capture only after its record is durable
// (and its CDXJ line written); captures of one WARC file arrive in offset
// order. After a crash a consumer may see a capture again (the ingester
// repeats the batch in flight): treat (File, Offset) as the identity.
//
// # Adding a consumer
//
//  1. Implement wayside.Subscriber (OnCapture must be safe to call from one
//     goroutine while others read the consumer's state) and, if it can
//     catch up from CDXJ lines, wayside.Resyncer.
//  2. Add its settings to Config (zero value: off) and build it in Open:
//     append it to the subscribers under a stable name (a Name* constant)
//     and, if it has a background loop or must be closed, start and stop
//     it there and in Set.Close.
//  3. Give `wayside crawl` a flag and the serve config a key that set it
//     (cmd/wayside/crawl_cmd.go, sidecar.Config.ConsumersConfig). Both producers
//     then feed it; its failures show in the crawl summary and exit
//     status, in `wayside status` and in the logs.
package consumers
