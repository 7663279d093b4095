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
// URI is never answered negatively.
//
//	l, err := profiler.OpenLive("archive.ukvs", profiler.LiveOptions{})
//	fanout.Add(l)           // or l.FeedCDXJ(index, name) after a crash
//	go l.Run(ctx)           // merges every minute (LiveOptions.Interval)
//	m, err := l.Lookup("https://example.com/page")
//	defer l.Close()         // merges what is pending
package profiler
