package api

// Characterization query routes (GET; answers are the JSON forms of
// package characterize's Aggregate, ContainerReport, RiskHit and
// FileSummary).
const (
	// PathCharFormats?puid=P&puid=Q: the WARC files holding the formats.
	PathCharFormats = "/v1/characterize/formats"
	// PathCharContainer?file=NAME[&records=1]: what one WARC file holds.
	PathCharContainer = "/v1/characterize/container"
	// PathCharRisk?puid=P&puid=Q: the WARC files holding any of them.
	PathCharRisk = "/v1/characterize/risk"
	// PathCharFiles: every characterized WARC file with its totals.
	PathCharFiles = "/v1/characterize/files"
	// PathCharStatus: the consumer's counters.
	PathCharStatus = "/v1/characterize/status"
)
