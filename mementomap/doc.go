// Package mementomap builds and queries MementoMaps: summaries of a web
// archive's holdings as UKVS files of HxPx keys (SURTs without query,
// possibly ending in a wildcard) and frequencies (see package ukvs).
//
// It owns the key hierarchy (Candidates, KeyFor), the one key
// normalisation (NormalizeKey), generation from CDX, CDXJ, WARC files and
// URI lists with an external sort (NewGenerator), the single-pass
// compaction of Alam et al. (JCDL 2019) with public-suffix protection, run
// in parallel on parts of the input cut where nothing can roll up
// (CompactFile, Compact), lookup by binary search in a memory-mapped file
// (OpenMap, Map.Lookup), merging (Merge), evaluation on labelled sets and
// real lookup logs (Evaluate, ReadLookupLog, LabelAgainst) over the paper's
// Wh × Wp grid (Grid, WriteGridTable, WriteGridSVG) and the paper's
// holdings statistics (NewHoldings, MapHoldings, Holdings).
//
// Key normalisation. Tools spell keys differently: the reference
// implementation writes host roots "com,example)" (Wayside and pywb write
// "com,example)/"), other SURT tools keep upper case, www labels, default
// ports, queries, or Heritrix's "http://(com,example,)/" form. NormalizeKey
// maps every spelling to one canonical key (surt.Normalize for the part
// without wildcard). It is applied wherever a key enters: generation
// (KeyFor, HxPxKey), lookup (Map.Lookup normalises its argument; the CLI
// takes URIs or keys through ParseTarget), and reading a map: OpenMap and
// CompactFile check in one pass whether every key is canonical and the
// lines strictly increasing (what Wayside writes), and otherwise read the
// map's normalised form — keys rewritten, lines re-sorted, lines of one key
// summed (URI-R counts as upper bounds), into an unlinked temporary file —
// so merge and compaction accept maps from the reference implementation.
// When keys were respelled, an exclusion is dropped if a less specific key
// answers positively (it could now hide another spelling's holdings: a
// false negative); that costs precision only. Canonical keys take an
// allocation-free fast path (surt.IsCanonical), so lookups cost the same
// as before (BenchmarkLookup compares both paths).
//
// Evaluation grid. Grid compacts the full map with every (Wh, Wp) pair,
// each from the next larger map already made (chaining), which gives the
// same maps as compacting the full map every time because the per-depth
// means are measured once, on the full map (see Grid for the argument;
// TestGridChainingEqualsScratch checks it). Relative cost is reported per
// line of the full map and, as the paper defines it, per unique URI-R (the
// sum of the full map's URI-R counts).
//
// Holdings statistics. The paper's tables (mementos per URI-R γ, Gini
// coefficient, Pareto break point, per-year URI-R/URI-M/status counts,
// per-depth Count/Sum/Max/Mean/Median/StdDev/RedQ/Parents/Children/
// MeanChld) are computed in one pass over captures sorted in tree order
// (every node's sub-tree contiguous, unlike byte order). The paper's text
// was not available to check every definition; the ones chosen are on the
// fields of Holdings, Summary, YearRow and DepthRow: Gini over mementos
// per URI-R; Pareto break point p with the top p of URI-Rs holding 1 − p
// of the mementos; a node's value is the number of URI-Rs below it; RedQ
// = 1 − Count/Sum; MeanChld = Children/Parents with the compaction tree's
// notion of children (a host's are its sub-hosts and its path root). Host
// depth d counts labels (H1: TLDs), path depth d segments (P0: the host
// root); the reference implementation's power-law means are indexed from
// H1 and P0 alike.
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
//
// The live map, Live, is
// a MementoMap kept current from capture events (it is a
// wayside.Subscriber), with recent captures in memory and periodic atomic
// merges into the map file, answering lookups from both so that a captured
// URI is never answered negatively. Given the directories of the CDXJ files
// its producer writes (LiveOptions.CDXJDirs), it records which records of
// each WARC file its map file covers and catches up from the CDXJ lines
// after those (Resync, a wayside.Resyncer): after a crash and when its
// Fanout queue overflowed (see catchup.go). Package consumers builds it for
// `wayside crawl --live-map` and `wayside serve`.
//
//	l, err := mementomap.OpenLive("archive.ukvs", mementomap.LiveOptions{CDXJDirs: []string{"warcs"}})
//	err = l.Resync(ctx)     // catch up from warcs/*.cdxj
//	fanout.Add("live-map", l)
//	go l.Run(ctx)           // merges every minute (LiveOptions.Interval)
//	m, err := l.Lookup("https://example.com/page")
//	defer l.Close()         // merges what is pending
package mementomap
