// Package dedupindex is Wayside's crawl-time payload-digest index.
//
// It owns the Index interface (claim a digest or get the existing original →
// write the full response → make it durable → commit or cancel), the dedup
// policy applied in front of any Index (URL-agnostic or same-URL matching,
// minimum payload size, status filter, read-only and read-write scopes, time
// window), and seeding an index from earlier crawls (WARC, CDX, CDXJ).
// Storage backends live in subpackages named after their dependency:
// dedupindex/pebble is the embedded default. dedupindex/indextest is the
// conformance suite every backend passes.
package dedupindex
