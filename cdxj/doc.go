// Package cdxj reads and writes CDXJ index lines as pywb and cdxj-indexer
// write them ("<surt> <14-digit timestamp> {json}"), reads classic IA CDX
// lines into the same struct, indexes WARC files into sorted CDXJ, and
// merges already-sorted CDXJ shards with bounded memory.
//
// Output is byte-identical in form to pywb's: the JSON block has the keys
// url, mime, status, digest, length, offset, filename in that order, values
// as JSON strings, ", " and ": " separators, non-ASCII escaped, fields whose
// value is empty or "-" left out. Lines sort in plain byte order, as
// `LC_ALL=C sort` sorts them.
//
// Sorter sorts lines with bounded memory: it holds up to MaxMemory of
// them outside the collected heap (an anonymous mapping: held lines do not
// raise the collector's goal, which GOGC makes a multiple of the live
// heap), spills sorted runs to temporary files beyond that and merges them,
// at most 64 at a time.
//
// # The side file
//
// The CDXJ side file (the catch-up log) of a WARC file is written here
// once for both producers of captures, the crawler's writer (package
// warcfile) and the ingester: SideFile appends lines in durable order and
// cuts a failed append back to the last whole line (AppendAt and CutBack
// drop the lines of a batch that was not checkpointed), SortSideFile
// rewrites it sorted once its WARC is complete, RebuildSideFile writes it
// anew from its WARC after a crash, and ListSideFiles and ReplaySideFile
// are how consumers (the live MementoMap, the capture index,
// characterization) catch up. Its name is the WARC file's with ".cdxj"
// added (SideFileName: NAME.warc.gz.cdxj), as ingest always named it and
// pywb's and other CDXJ tools find it ("*.cdxj"); the NAME.cdxj the
// crawler wrote before is still found (FindSideFile, ListSideFiles).
package cdxj
