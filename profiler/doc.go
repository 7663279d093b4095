// Package profiler summarises what an archive holds.
//
// It owns MementoMaps: the UKVS text format, generation from CDX, CDXJ, WARC
// or URI lists, compaction, lookup, merge and evaluation, and the live map
// kept current from capture events; and per-WARC characterization of the
// formats inside it.
package profiler
