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
package cdxj
