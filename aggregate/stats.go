package aggregate

import "time"

// Stats is what each upstream archive was asked and what its MementoMap
// saved (Aggregator.Stats). The daemon serves it as api.AggregateStatus in
// /v1/status; this package does not know the wire form.
type Stats struct {
	// DeadlineSeconds bounds an aggregated request.
	DeadlineSeconds float64
	// Lookups are the aggregated TimeMap and TimeGate requests answered;
	// Partial those answered without every asked archive.
	Lookups  int64
	Partial  int64
	Archives []ArchiveStats
}

// ArchiveStats is one upstream archive's counters.
type ArchiveStats struct {
	Name string
	// MapState is "loaded" (routing by the map), "none" (no map
	// configured), "waiting" (discovery: no map announced yet),
	// "unavailable" (fetch or parse failed) or "filtered" (the map
	// declares capture filters, so it cannot prove absence). In every
	// state but "loaded" the archive is asked for every URI-R.
	MapState     string
	MapURL       string
	MapLines     int64
	MapFetchedAt time.Time
	MapError     string
	MapFetches   int64
	MapFailures  int64
	// Requests: lookups this archive was asked (one per aggregated
	// request, next pages included); Avoided: lookups its map answered
	// "absent", so it was not asked. Hits found mementos, Misses none,
	// Errors failed (Timeouts among them).
	Requests int64
	Avoided  int64
	Hits     int64
	Misses   int64
	Errors   int64
	Timeouts int64
	// Latency of the requests made, in milliseconds: the mean, and the
	// upper bounds of the histogram buckets holding the median and the
	// 99th percentile (0 before any request).
	LatencyMeanMs float64
	LatencyP50Ms  float64
	LatencyP99Ms  float64
}
