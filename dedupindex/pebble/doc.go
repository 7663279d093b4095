// Package pebble is the embedded, durable dedupindex.Index backend, stored
// in a CockroachDB Pebble LSM directory. It is Wayside's default index.
// Linking the package registers the index URL scheme pebble: with
// dedupindex.OpenURL (pebble:///DIR, or a bare path).
//
// # Semantics
//
// Pending claims live only in this process's memory: a claimer that dies (or
// an index that is closed or restarted) leaves no claim behind. Claims are
// atomic per key. Commit, Put and PutBatch are durable when they return
// (pebble.Sync; concurrent commits share one fsync through Pebble's group
// commit). A Commit of a ticket issued by an earlier run of the index (lost
// to a restart) stores the original if its key has none — the caller made
// the record durable before committing, so it may always be indexed — and
// otherwise keeps the existing (first) original.
//
// # Layout
//
// All keys start with a one-byte tag:
//
//	0x01 "version"                          → format version (uvarint)
//	0x01 "byurl"                            → 1 if the by-URL index is kept, else 0
//	0x02 scope name                         → scope id (uvarint)
//	0x03 kind id(uvarint)                   → interned string (kind 'f' WARC file name, 'm' MIME type)
//	0x04 scope id                           → originals in scope (merged int64 counter)
//	0x10 scope id alg sum [urlhash]         → original (compact varint record)
//	0x11 scope id surthash alg sum[:8]      → empty (by-URL secondary index)
//
// scope id is a uvarint, alg a one-byte algorithm code followed by the raw
// digest bytes, urlhash and surthash the first 8 bytes of the SHA-256 of a
// SURT key (urlhash only for same-URL keys). A by-URL entry keeps only the
// first 8 digest bytes; ByURL finds the originals by a prefix scan and keeps
// those whose target URI has the queried SURT key, then sorts the originals it
// finds by date. Values encode the target URI, date,
// record id (16 bytes when it is a urn:uuid), interned file and MIME ids,
// offset, lengths and status as varints; the digest is taken from the key.
// Tables use Bloom filters, so lookups of absent digests rarely touch disk,
// and Zstandard-compressed 16 KiB blocks in the bottom levels (measured on
// 10M realistic entries: 86 B per original plus 18 B for its by-URL entry
// after compaction; see scripts/bench-index.sh).
//
// # Sizing
//
// A dedup decision is one point lookup. It takes a few microseconds when
// the blocks it needs are in the block cache and a read from the file
// system (page cache or disk) otherwise, and absent digests are answered by
// the Bloom filters. Lookups reuse Pebble iterators while nothing was
// written since they were created (a write generation bumped after every
// write, flush and compaction), so a lookup never answers from a state
// older than the last write that returned. A lookup of a key not written
// since the last flush reads the tables alone (unflushed.go: the index
// records the keys each write holds until a flush covers them), with
// iterators that writes do not outdate, so a crawl writing does not make
// every lookup search the memtable's skiplist. When writes pause for a
// second the memtable is flushed into a table (once per pause), so a
// read-mostly index answers from Bloom filters. The default cache is three times the index's size on
// disk when opened (about 300 MB per million originals, capped at 4 GiB);
// see WithCacheSize.
package pebble
