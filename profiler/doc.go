// Package profiler summarises what an archive holds.
//
// It owns MementoMaps, in subpackages: ukvs (the UKVS text format),
// mementomap (generation from CDX, CDXJ, WARC files or URI lists,
// compaction, lookup, merge and evaluation) and zipfgen (deterministic
// synthetic inputs for benchmarks); format characterization — PRONOM
// identification of every payload, aggregated per WARC file — lives in
// characterize. This package holds the live map, Live:
// a MementoMap kept current from capture events (it is a
// wayside.Subscriber), with recent captures in memory and periodic atomic
// merges into the map file, answering lookups from both so that a captured
// URI is never answered negatively. Given the directories of the CDXJ files
// its producer writes (LiveOptions.CDXJDirs), it records which records of
// each WARC file its map file covers and catches up from the CDXJ lines
// after those (Resync, a wayside.Resyncer): after a crash and when its
// Fanout queue overflowed (see catchup.go). Package consumers builds it for
// `wayside crawl --live-map` and `wayside serve`.
//
//	l, err := profiler.OpenLive("archive.ukvs", profiler.LiveOptions{CDXJDirs: []string{"warcs"}})
//	err = l.Resync(ctx)     // catch up from warcs/*.cdxj
//	fanout.Add("live-map", l)
//	go l.Run(ctx)           // merges every minute (LiveOptions.Interval)
//	m, err := l.Lookup("https://example.com/page")
//	defer l.Close()         // merges what is pending
package profiler
