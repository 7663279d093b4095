// Package redis is a dedupindex.Index backend on Redis Cluster (or a
// single Redis server) for fleets of crawlers and sidecars sharing one
// dedup index, with the claim → write → fsync → commit semantics of every
// backend (dedupindex/indextest). Linking the package registers the index
// URL scheme redis: with dedupindex.OpenURL (url.go lists its parameters).
//
// # Layout
//
// Originals are grouped into buckets by the leading bits of their digest;
// a bucket is one Redis hash with one field per original, small enough to
// stay listpack-encoded (Redis's compact encoding: no per-key or per-entry
// allocation). Every key of a bucket carries the bucket number as its hash
// tag, so a bucket, its pending claims and its overflow values live in one
// Redis Cluster slot and one Lua script updates them atomically:
//
//	PREFIX meta                  hash: layout (3), bits (bucket bits), byurl (1 or 0)
//	PREFIX d{BUCKET}SCOPE        hash: field → original
//	PREFIX c{BUCKET}FIELD/SCOPE  string: a pending claim's token, with a lease (PX)
//	PREFIX x{BUCKET}FIELD/SCOPE  string: an original too long for the hash (field holds "\x00")
//	PREFIX q{BUCKET}SCOPE        hash: field → originals whose by-URL entry is not written yet
//	PREFIX b{UBUCKET}SCOPE       hash: by-URL index, field → ""
//	PREFIX n{SHARD}              hash: interned names, kind+id → name
//
// BUCKET is the hex of the first `bits` bits of the digest; FIELD the
// digest bytes after the whole bytes the bucket determines (18 of SHA-1's
// 20 for 16 to 23 bits), followed for a same-URL key (--match url) by the
// first 8 bytes of the SHA-256 of its SURT key; the field's length tells
// the digest algorithm. The digest is kept whole: a truncated one would
// let a crafted payload collide with an archived one at a fraction of the
// cost of a SHA-1 collision, and be stored as a revisit of it.
//
// The value is the packed record of dedupindex/internal/record: a header
// byte with the format version and the commonest flags, the date as 4
// bytes (plus µs or ns when the WARC-Date has them), a urn:uuid record id
// as 16 bytes, file, offsets and lengths as varints, status 200 and the
// quotes of an ETag implied by flags, Last-Modified as seconds before the
// date, and the target URI as an interned origin (scheme://host:port) and
// the rest, Huffman-coded with a fixed table built from the URI paths of
// real crawls (about a third shorter). The WARC file name, MIME type and
// origin are interned ids: hashes of the name, so every process derives
// the same id without coordination, in levels of 7, 14, 21 and 28 bits — a
// name takes the first level whose id is free or already its own, so a
// crawl's WARC files and MIME types get one-byte ids and origins two or
// three. A name whose ids are all taken by other names (hash collisions)
// is stored inline, and an id is put in an original only once its name is
// acknowledged by a replica (or its master has none), so a failover cannot
// lose a name an original needs.
//
// A by-URL entry is UBUCKET (leading bits of the SURT key's SHA-256), then
// in the field the rest of the hash's first 4 bytes and the first 4 digest
// bytes: 6 to 7 bytes that only narrow the search, as ByURL reads the
// originals of that digest prefix and keeps those whose target URI has
// the queried SURT key.
//
// The number of buckets is fixed when an index is created (WithCapacity,
// URL capacity=N; default DefaultCapacity originals per scope, laid out
// for about half of hash-max-listpack-entries per bucket) and recorded in
// the meta key; every process reads it from there. From about 1.5 times
// that capacity on, buckets start to exceed hash-max-listpack-entries and
// Redis converts them to its hashtable encoding: still correct, about
// twice the memory (the benchmark reports the encodings). Recommended server settings (redis.conf):
//
//	hash-max-listpack-entries 256   # entries per bucket before conversion
//	hash-max-listpack-value   128   # longer originals go to overflow keys
//	appendonly yes
//	appendfsync always              # a commit survives a crash of its master
//
// With Redis's default hash-max-listpack-value (64) many originals are
// longer and are kept in overflow keys (New logs a warning).
//
// # Memory
//
// scripts/bench-redis.sh loads 1M realistic originals (70-character URIs
// on 50,000 hosts, UUID record ids, validators on a third) and reports
// INFO memory per original and the bytes of each field; the README's
// benchmark table has the figures: 117 bytes per original with the by-URL
// index, 103 without (layout 2: 148). The original's own bytes are 86 of
// them: the digest (19 bytes in the field at 1M capacity, 18 from 2^16
// buckets on), the record id (16) and the URI (29 with its origin id) are
// most of it. Redis adds about 13.5 bytes per hash entry (entry headers
// and allocator rounding), the by-URL entry about 12.7 and interned names
// about 3.
//
// # Earlier layouts
//
// Layout 1 stored one hash per digest under PREFIXo{…} with the original
// as JSON (about 1.2 KB per original); layout 2 had these buckets with
// record's varint values, 28-bit name ids and 16-byte by-URL entries
// (about 150 bytes per original). Neither is read: New refuses a prefix
// holding either with ErrOldLayout (layout 2 says so in its meta key;
// layout 1 has none, so New looks for its keys when the prefix has no
// meta key) and leaves it untouched. Re-import the collection (`wayside
// index import --index redis://…?prefix=NEW` from its WARC or CDXJ files)
// under a new prefix. A value whose format version is not the packed
// format's counts as unreadable (Check lists it), so a later format can
// be told apart value by value.
//
// # Semantics
//
// The claim script decides a Claim atomically: Pending if another claim
// is pending, Duplicate with the original if one is committed, else it
// installs a pending claim with a lease (WithLease, default 10 minutes):
// a claimer that dies leaves a claim that expires with the lease, and
// Close drops the claims of the closing Index. While most of an Index's
// recent claims found a committed original (a re-crawl), a Claim first
// reads the digest's field with one HGET and answers Duplicate from it
// without running the script: a bucket holds committed originals only, so
// the original read may be pointed at, and it stays durable in its WARC
// even if a Commit replaces it meanwhile. A miss, an original too old for
// ClaimNewer or an unreadable one then goes through the script. While
// most claims are new digests (a first crawl) claims start with the
// script, which a new digest needs anyway: a read first would cost it a
// second round trip and, with appendfsync always, a second wait for the
// disk. The one difference the read makes: while a ClaimNewer claim
// replaces an old original, a plain Claim may get the old original instead
// of Pending (dedupindex.WindowClaimer). A retried Claim whose first attempt installed the
// claim gets it (the token is compared). Commit is one Lua script too: it
// drops the claim and stores the original unless one is kept — also when
// the lease ran out or the ticket comes from another process, since the
// caller made the record durable before committing — and queues the
// by-URL entry in the same slot; the by-URL entry is then written and
// taken off the queue. An interrupted commit (failover, lost connection)
// leaves the entry queued; Repair (run once in the background by New)
// writes it, and Check accepts queued entries. After ClaimNewer found an
// original older than its notBefore, the claim replaces exactly that
// original (compare and set in the script). An original that cannot be
// read (damaged value, or an interned name lost) counts as absent: Claim
// hands out a claim and the Commit replaces it; Check lists it.
//
// # Durability and failover
//
// Redis acknowledges a write when its master has it (with appendfsync
// always, on disk) and replicates asynchronously, so a master failing
// over to its replica may lose the last acknowledged writes. For the
// dedup index that never loses data: an original is committed only after
// its record is durable in a WARC file, so a lost commit means a later
// duplicate is stored in full again, and nothing else — no revisit can
// point at a missing record, whatever Redis loses.
//
// WithWait (URL wait=N&wait_timeout=D) makes Commit and Put send WAIT N
// on the slot master's connection after the script: a commit that returns
// nil was acknowledged by N replicas and survives a failover to one of
// them (Redis promotes the replica with the most data). When fewer
// acknowledge within the timeout the original is still stored and served,
// and Commit returns an error wrapping ErrNotReplicated: the crawler
// counts the error and goes on (its record is durable either way; it must
// not write a revisit differently, and need not retry). On a master
// without a connected replica (a promoted replica, until the failed master
// rejoins as its replica) and, for 5 s, on one where a WAIT timed out (a
// stalled replica), commits wait at most 10 ms, so the crawl does not
// stall; they report ErrNotReplicated until a replica acknowledges again.
//
// During a failover (a master unreachable for cluster-node-timeout, then
// CLUSTERDOWN until a replica is promoted) Claim and Commit of the slots
// involved — with the default cluster-require-full-coverage, of all slots
// — return errors after the client's retries. A crawler then writes a full
// response (dedupindex.Deduper.Decide's error path) and keeps crawling: a
// missed dedup costs bytes, a dangling revisit would lose data. When the
// new master serves the slot the index works again; the tests
// (TestFailover, TestFleetCrawlFailover) SIGKILL a master of a real
// 3 + 3 cluster under load and check exactly this, with and without WAIT.
package redis
