// Package redis is a dedupindex.Index backend on Redis (Redis Cluster or a
// single server) for fleets of crawlers sharing one dedup index.
//
// # Layout
//
// Every dedup key (scope, canonical digest, optional SURT) maps to a tag,
// the hex of the first 12 bytes of its SHA-256, used as a Redis Cluster hash
// tag so that the original and the pending claim of one key live in one
// slot and Lua scripts update them atomically:
//
//	PREFIX o{tag}   hash: d (date, Unix µs), v (Original as JSON), s, k, u (the key)
//	PREFIX p{tag}   string: the pending claim's token, with a lease (PX)
//	PREFIX u{utag}  sorted set of tags by date: the by-URL index, utag from (scope, SURT)
//
// # Semantics
//
// Claims are atomic (one Lua script per Claim). A pending claim is a Redis
// key with a lease (WithLease, default 10 minutes): a claimer that dies
// leaves a claim that expires with the lease, and Close drops the claims of
// the closing Index. Commit stores the original if the key has none (or,
// after ClaimNewer, only an expired one) — also when the lease ran out or
// the ticket comes from another process, since the caller made the record
// durable before committing — and otherwise keeps the first original. The
// by-URL entry is added after the original, so ByURL never returns an
// original that is not stored; ByURL verifies each original's URL.
//
// Durability is Redis's: run it with appendonly yes and appendfsync always
// (and replicas) for Commit to survive a server crash.
package redis
