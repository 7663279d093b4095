// Package aggregate is a Memento aggregator routed by MementoMaps: asked
// for the TimeMap or TimeGate of a URI-R, it consults each configured
// archive's MementoMap and asks, in parallel, only the archives whose map
// may hold the URI-R (Alam et al., "MementoMap", JCDL 2019), then merges
// their answers by time into one TimeMap, or picks the closest memento
// across them, within a deadline. It is what `wayside serve` answers at
// /aggregate/timemap/link/<URI-R>, /aggregate/timemap/json/<URI-R> and the
// TimeGate /aggregate/<URI-R>, and what `wayside aggregate eval` replays
// labelled lookup sets through.
//
// # Archives and maps
//
// An archive is listed as MemGator lists it — a TimeMap URL prefix the
// URI-R is appended to, optionally a TimeGate prefix — plus where its
// MementoMap is read: an http(s) URL, a local file, or "discover" (the
// URL the archive announces in a Link: <…>; rel="mementomap" header, as
// every Wayside sidecar answer carries; only on the archive's own hosts).
// Maps are fetched at start and every refresh interval (conditionally,
// with the ETag or Last-Modified the archive sent), copied into the map
// directory, memory-mapped (mementomap.OpenMap: lookups are binary
// searches in place), checked line by line (a download cut short, known
// by its chunked or Content-Length framing, is never used), and swapped
// in whole; the file is unlinked at once (the mapping keeps it) and an old
// map is unmapped only once no lookup reads it.
//
// The rule that keeps routing from hiding holdings: an archive is skipped
// only when a loaded map says the URI-R's key is absent (no key of the
// lookup hierarchy matches, wildcards included, or the most specific match
// is an exclusion "0"). Every doubt means asking: an archive without a
// map, one whose map could not be fetched, was too large or did not parse
// (the previous map is dropped too: a failed refresh never leaves a stale
// map routing), one still waiting for its map to be discovered, a map
// declaring capture filters (`!meta {"filters": …}`: it lists only some
// captures), and a URI-R that has no map key. A map fetched at time T does
// not know what the archive captured after T: the refresh interval bounds
// how long a new capture can be routed past.
//
// # Fetching
//
// Nothing is fetched outside the configured archives: every request URL
// (a prefix with a user's URI-R appended, a redirect, a next page, a
// discovered map) must be on one of the archive's own origins (scheme,
// host and port of its TimeMap, TimeGate and configured map URLs), so a
// URI-R like "@evil.example/" cannot steer a request elsewhere. Redirects
// are followed within them (at most 5), TimeMap pages through Link:
// rel="next" (at most max_pages). Responses are capped (max_timemap_bytes
// decoded, max_map_bytes), each archive has a timeout and the whole
// request a deadline. An archive's bearer token is sent to its own
// origins only.
//
// # Memory
//
// No upstream TimeMap is ever held whole: each archive's answer (link
// format, or MemGator's CDXJ TimeMap) is parsed 256 KiB at a time, its
// mementos sorted in batches of 2 MiB and spilled to an unlinked file in
// Config.SpillDir as sorted runs (an archive listing oldest first makes
// one run), and the runs of all archives are merged k-way (16 at once,
// in passes when there are more) into one sorted run the answer is
// written from as it is read (chunked). Heap per request is a few MiB
// per archive asked, whatever the archives list (TestMergeBoundedMemory:
// 450,000 mementos from four archives, live heap under 40 MiB); disk is
// at most twice what the archives sent. Answers of more than 10,000
// mementos (or an eighth of cache_mementos) are not cached.
//
// # Answers
//
// TimeMaps follow MemGator's output: link format with the original, self,
// the mementos oldest first (the first and last marked "first memento",
// "last memento"), timemap (link and JSON) and timegate links, datetimes
// in RFC 1123 GMT; and MemGator's JSON (original_uri, self, mementos.list
// with first and last, timemap_uri, timegate_uri; datetimes RFC 3339),
// with two fields of Wayside's: "partial" and "archives" (per archive:
// asked, mementos, error). Mementos with equal datetimes are ordered by
// archive priority, then configuration order; a URI-M listed twice is
// kept once. The TimeGate answers 302 to the memento closest to
// Accept-Datetime across the archives (ties go to the earlier), with Vary:
// accept-datetime and a Link header of the original, the TimeMaps and the
// first, previous, chosen, next and last mementos. Each archive answers a
// TimeGate request through its own TimeGate when it has one: its closest
// memento and the neighbours it links include the global closest and its
// neighbours, so the choice equals that from the full TimeMaps.
//
// An answer missing an asked archive (error, 5xx, garbage, timeout) is
// still given, marked partial: the X-Aggregate-Partial header names each
// missing archive and why, and the JSON's "partial" is true. Without any
// memento, the answer is 404 when every asked archive answered, and 502
// (504 when all failures were timeouts) otherwise, since what the missing
// archives hold is unknown. X-Aggregate-Asked and X-Aggregate-Avoided list
// the archives asked and spared; X-Memento-Count is MemGator's.
//
// # Failing archives, tokens, hostile URI-Rs
//
// An archive that fails Config.Tolerance times in a row (errors,
// timeouts, 5xx) is dormant for Config.Dormant, doubled at each failure
// after it wakes up to MaxDormant, and ends dormancy by answering
// (MemGator's dormant mode): meanwhile it is not asked, and its Outcome
// says dormant (the answer is partial). A URI-R's dot segments (plain or
// percent-encoded) are resolved before it is appended to an archive's
// prefix, so no request carrying the archive's token climbs out of it.
// An archive's tokens (its bearer token, a path token "/t/<token>/" of its
// prefixes) never appear in an answer: the path token is cut out of the
// URI-Ms it lists, a URI-M still holding a token is dropped. Answers carry
// Access-Control-Allow-Origin: *.
//
// # Statistics
//
// Per archive: lookups asked, avoided by the map, hits, misses, errors,
// timeouts, a latency histogram, map fetches and failures, map state —
// in Stats (for `wayside status`) and, the Aggregator being a
// prometheus.Collector, in the daemon's /metrics. Eval replays a labelled lookup set ("<archives|-> <URI-R>"
// per line) and reports requests avoided, recall (labelled holdings the
// routing asked for; must be 1.0), precision and, against an aggregator
// WithoutRouting, whether every merged TimeMap is the same.
package aggregate
