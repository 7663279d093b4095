// Package mementomap builds and queries MementoMaps: summaries of a web
// archive's holdings as UKVS files of HxPx keys (SURTs without query,
// possibly ending in a wildcard) and frequencies (see package ukvs).
//
// It owns the key hierarchy (Candidates, KeyFor), generation from CDX, CDXJ,
// WARC files and URI lists with an external sort (NewGenerator), the
// single-pass compaction of Alam et al. (JCDL 2019) with public-suffix
// protection, run in parallel on parts of the input cut where nothing can
// roll up (CompactFile, Compact), lookup by binary search in a
// memory-mapped file (OpenMap, Map.Lookup), merging (Merge) and evaluation
// (Evaluate, Sweep, WriteSVG).
//
// Compaction notes. Byte order is not tree order: "a.html" sorts between
// "a" and "a/…", so a node may be seen in two pieces (its own line, then its
// sub-tree); each piece is handled on its own, which can only keep an extra
// line, never lose one. A node whose sub-tree holds a wildcard exclusion
// ("…/x/* 0") is never rolled up (its wildcard could not keep the positive
// lines under the exclusion); exact exclusions are kept as lines next to the
// wildcard that replaces their siblings. JSON blocks of rolled-up lines are
// summarised away; lines that are not rolled up keep theirs.
//
// Invariants every operation keeps: output files are byte-order sorted with
// headers first; no key of the input is ever answered negatively by a
// compacted or merged map (recall 1.0); an exclusion ("0", "0/20") still
// excludes after compaction and merging unless another map holds captures
// under it; sums carry honest bounds (see ukvs.Count.Add).
package mementomap
