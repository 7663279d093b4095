// Package digest parses and normalises the payload and block digests found in
// WARC headers, CDX and CDXJ files and dedup APIs.
//
// The same SHA-1 appears in the wild as "sha1:" + Base32 (Heritrix, most CDX),
// "sha1:" + hex (warcprox), bare Base32 (CDX field 6), "sha-256:" hex
// (wabac.js) or "sha256:" hex (gowarc v3). Comparing such strings directly
// makes deduplication silently miss, so every comparison in Wayside goes
// through Parse and compares the canonical form: the lower-case algorithm
// name, a colon and the upper-case unpadded Base32 of the digest bytes, e.g.
// "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ".
package digest
