package api

import "time"

// AggregateStatus is the aggregator's part of /v1/status: what each
// upstream archive was asked and what its MementoMap saved.
type AggregateStatus struct {
	// DeadlineSeconds bounds an aggregated request.
	DeadlineSeconds float64 `json:"deadline_seconds"`
	// Lookups are the aggregated TimeMap and TimeGate requests answered;
	// Partial those answered without every asked archive.
	Lookups  int64              `json:"lookups"`
	Partial  int64              `json:"partial"`
	Archives []AggregateArchive `json:"archives"`
}

// AggregateArchive is one upstream archive's counters.
type AggregateArchive struct {
	Name string `json:"name"`
	// MapState is "loaded" (routing by the map), "none" (no map
	// configured), "waiting" (discovery: no map announced yet),
	// "unavailable" (fetch or parse failed) or "filtered" (the map
	// declares capture filters, so it cannot prove absence). In every
	// state but "loaded" the archive is asked for every URI-R.
	MapState     string    `json:"map_state"`
	MapURL       string    `json:"map_url,omitempty"`
	MapLines     int64     `json:"map_lines,omitempty"`
	MapFetchedAt time.Time `json:"map_fetched_at,omitzero"`
	MapError     string    `json:"map_error,omitempty"`
	MapFetches   int64     `json:"map_fetches"`
	MapFailures  int64     `json:"map_failures"`
	// Requests: lookups this archive was asked (one per aggregated
	// request, next pages included); Avoided: lookups its map answered
	// "absent", so it was not asked. Hits found mementos, Misses none,
	// Errors failed (Timeouts among them).
	Requests int64 `json:"requests"`
	Avoided  int64 `json:"avoided"`
	Hits     int64 `json:"hits"`
	Misses   int64 `json:"misses"`
	Errors   int64 `json:"errors"`
	Timeouts int64 `json:"timeouts"`
	// Latency of the requests made, in milliseconds: the mean, and the
	// upper bounds of the histogram buckets holding the median and the
	// 99th percentile (0 before any request).
	LatencyMeanMs float64 `json:"latency_mean_ms"`
	LatencyP50Ms  float64 `json:"latency_p50_ms"`
	LatencyP99Ms  float64 `json:"latency_p99_ms"`
}
