// Package api holds the JSON wire types and route paths of the sidecar's
// HTTP API, shared by the daemon (package sidecar) and its Go client
// (package client) without pulling either's dependencies.
package api

import (
	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
)

// Routes of the API. CDX routes also answer under /t/<cdx_token>/ and
// /hex/ prefixes (see package sidecar).
const (
	PathHealthz       = "/healthz"
	PathMetrics       = "/metrics"
	PathStatus        = "/v1/status"
	PathLookup        = "/v1/lookup"
	PathLookupBatch   = "/v1/lookup/batch"
	PathClaim         = "/v1/claim"
	PathClaimBatch    = "/v1/claim/batch"
	PathCommit        = "/v1/commit"
	PathCommitBatch   = "/v1/commit/batch"
	PathCancel        = "/v1/cancel"
	PathCancelBatch   = "/v1/cancel/batch"
	PathCDX           = "/cdx"
	PathTimemapCDX    = "/web/timemap/cdx"
	PathIngest        = "/v1/ingest"
	PathMementoMap    = "/mementomap"
	PathMapLookup     = "/v1/mementomap/lookup"
	PathMapCompact    = "/v1/mementomap/compact"
	PathFixitySweeps  = "/v1/fixity/sweeps"
	PathFixityRun     = "/v1/fixity/run"
	PathFixityResults = "/v1/fixity/results"
	PathFixityReport  = "/v1/fixity/report"
)

// Key names a dedup slot. URL is the by-URL key (dedupindex.URLKey form);
// a crawler that has only the target URI sends TargetURI instead and the
// daemon computes URL from it. Scope defaults to the daemon's index.scope.
type Key struct {
	Scope     string `json:"scope,omitempty"`
	Digest    string `json:"digest"`
	URL       string `json:"url,omitempty"`
	TargetURI string `json:"target_uri,omitempty"`
}

// FromIndexKey converts a dedupindex.Key.
func FromIndexKey(k dedupindex.Key) Key { return Key{Scope: k.Scope, Digest: k.Digest, URL: k.URL} }

// Error is the body of every error answer (4xx, 5xx).
type Error struct {
	Error string `json:"error"`
}

// LookupResult answers a lookup.
type LookupResult struct {
	Found    bool                 `json:"found"`
	Original *dedupindex.Original `json:"original,omitempty"`
	// Error is set in batch answers for an item that failed.
	Error string `json:"error,omitempty"`
}

// ClaimResult answers a claim. State is "claimed", "duplicate" or "pending".
type ClaimResult struct {
	State    string               `json:"state"`
	Original *dedupindex.Original `json:"original,omitempty"`
	Ticket   *dedupindex.Ticket   `json:"ticket,omitempty"`
	Error    string               `json:"error,omitempty"`
}

// Commit is one commit request.
type Commit struct {
	Ticket   dedupindex.Ticket   `json:"ticket"`
	Original dedupindex.Original `json:"original"`
}

// Cancel is one cancel request.
type Cancel struct {
	Ticket dedupindex.Ticket `json:"ticket"`
}

// KeysRequest is the body of the batch lookup and claim calls.
type KeysRequest struct {
	Keys []Key `json:"keys"`
}

// CommitsRequest is the body of /v1/commit/batch.
type CommitsRequest struct {
	Commits []Commit `json:"commits"`
}

// CancelsRequest is the body of /v1/cancel/batch.
type CancelsRequest struct {
	Tickets []dedupindex.Ticket `json:"tickets"`
}

// LookupResults answers /v1/lookup/batch.
type LookupResults struct {
	Results []LookupResult `json:"results"`
}

// ClaimResults answers /v1/claim/batch.
type ClaimResults struct {
	Results []ClaimResult `json:"results"`
}

// OpResult is the answer to one commit or cancel. Code is the HTTP status
// the single form would have returned (200, 409 for a ticket that is not a
// pending claim).
type OpResult struct {
	OK    bool   `json:"ok"`
	Code  int    `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// OpResults answers the batch commit and cancel calls.
type OpResults struct {
	Results []OpResult `json:"results"`
}

// CDXAddResult answers a POST of CDX/CDXJ lines.
type CDXAddResult struct {
	Lines    int `json:"lines"`
	Added    int `json:"added"`
	Existing int `json:"existing"`
	Revisits int `json:"skipped_revisits"`
	Skipped  int `json:"skipped"`
}

// IngestStatus answers GET /v1/ingest: the watcher's progress per file.
type IngestStatus struct {
	Dirs      []string       `json:"dirs"`
	Files     []FileProgress `json:"files"`
	Records   int64          `json:"records"`
	Originals int64          `json:"originals"`
	Revisits  int64          `json:"revisits"`
	Bytes     int64          `json:"bytes"`
	LagBytes  int64          `json:"lag_bytes"`
	Errors    int64          `json:"errors"`
	LastError string         `json:"last_error,omitempty"`
	// Paused says why ingest is waiting instead of reading (a disk it
	// writes to is full); empty while it runs. It resumes by itself once
	// the cause is gone.
	Paused string `json:"paused,omitempty"`
}

// FileProgress is the ingest state of one WARC file.
type FileProgress struct {
	// Name is the file's base name without ".open".
	Name string `json:"name"`
	// Path is where it was last seen.
	Path string `json:"path"`
	// Size is the file size last seen; Offset the position after the last
	// complete record ingested.
	Size    int64 `json:"size"`
	Offset  int64 `json:"offset"`
	Records int64 `json:"records"`
	// Open is true while the file still has its ".open" suffix.
	Open bool `json:"open"`
	// Done is true once a finished file was read to its end.
	Done bool `json:"done"`
	// Truncated reports a finished file that ends in a partial record
	// (TruncatedAt is where that record starts).
	Truncated   bool   `json:"truncated,omitempty"`
	TruncatedAt int64  `json:"truncated_at,omitempty"`
	Error       string `json:"error,omitempty"`
}

// MapLookup answers GET /v1/mementomap/lookup?url=...: the most specific
// key of the live MementoMap covering the URI, or Found false.
type MapLookup struct {
	URL   string `json:"url"`
	Found bool   `json:"found"`
	// Key is the matching map key (exact SURT or a wildcard).
	Key string `json:"key,omitempty"`
	// Freq is its frequency value ("12/3", "0" for an exclusion).
	Freq string `json:"freq,omitempty"`
	// Excluded is true when the matching key is an exclusion.
	Excluded bool `json:"excluded,omitempty"`
}

// CompactResult reports a merge of the captures held in memory into the
// map file (compacted when mementomap.compact is set).
type CompactResult struct {
	Merged  bool   `json:"merged"`
	Pending int64  `json:"pending_before"`
	Lines   int64  `json:"lines"`
	Bytes   int64  `json:"bytes"`
	Path    string `json:"path"`
	Compact bool   `json:"compacted"`
}

// SweepStatus describes one configured fixity sweep and its last run.
type SweepStatus struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule,omitempty"`
	URIMs    int    `json:"urims"`
	Running  bool   `json:"running"`
	// Next is the next scheduled start (RFC 3339), empty when on demand only.
	Next    string    `json:"next,omitempty"`
	LastRun *SweepRun `json:"last_run,omitempty"`
}

// SweepRun summarises one sweep run.
type SweepRun struct {
	Started  string         `json:"started"`
	Finished string         `json:"finished,omitempty"`
	Classes  map[string]int `json:"classes"`
	Error    string         `json:"error,omitempty"`
	Report   string         `json:"report,omitempty"`
}

// SweepList answers GET /v1/fixity/sweeps.
type SweepList struct {
	Sweeps []SweepStatus `json:"sweeps"`
}

// RunSweepRequest starts a sweep now.
type RunSweepRequest struct {
	Sweep string `json:"sweep"`
	Wait  bool   `json:"wait,omitempty"`
}

// PathPut and PathByURL complete the dedupindex.Index interface over HTTP.
const (
	PathPut   = "/v1/put"
	PathByURL = "/v1/byurl"
)

// PutRequest seeds originals (first original of a key wins).
type PutRequest struct {
	Entries []dedupindex.Entry `json:"entries"`
}

// PutResult says per entry whether it was added.
type PutResult struct {
	Added []bool `json:"added"`
}

// ByURLResult answers GET /v1/byurl?url=<by-URL key>&scope=: the committed
// originals of a URL, oldest first.
type ByURLResult struct {
	Originals []dedupindex.Original `json:"originals"`
}

// Status is the answer of GET /v1/status.
type Status struct {
	Version       string  `json:"version"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	// Problems lists what the daemon cannot do, found at start-up (a
	// fixity browser missing) or now (ingest paused on a full disk, a
	// failing consumer); empty when all is well.
	Problems []string         `json:"problems,omitempty"`
	Unix     string           `json:"unix,omitempty"`
	TCP      string           `json:"tcp,omitempty"`
	Index    dedupindex.Stats `json:"index"`
	Ingest   IngestStatus     `json:"ingest"`
	CrawlLog *CrawlLogStatus  `json:"crawl_log,omitempty"`
	// Consumers are the consumers of the capture spine (live map, ...):
	// delivered, failed and dropped captures, and whether each is behind.
	Consumers []wayside.ConsumerStats `json:"consumers"`
	// Captures describes the capture index behind the access routes
	// (absent when access.index is "-").
	Captures   *CapturesStatus `json:"captures,omitempty"`
	Lookups    int64           `json:"lookups"`
	Claims     int64           `json:"claims"`
	Revisits   int64           `json:"revisits"`
	BytesSaved int64           `json:"bytes_saved"`
	// Aggregate is the MementoMap-routed aggregator's state, when
	// aggregate.archives is configured.
	Aggregate *AggregateStatus `json:"aggregate,omitempty"`
}

// CapturesStatus describes the capture index behind the access routes.
type CapturesStatus struct {
	Collections []CollectionStatus `json:"collections"`
	DiskBytes   uint64             `json:"disk_bytes"`
	Error       string             `json:"error,omitempty"`
	// TCPReplay says how listen.tcp answers memento requests: redirected
	// to a content origin (listen.content_front) or sandboxed.
	TCPReplay string `json:"tcp_replay,omitempty"`
}

// CollectionStatus counts the captures of one collection.
type CollectionStatus struct {
	Name     string `json:"name"`
	Captures int64  `json:"captures"`
	Revisits int64  `json:"revisits"`
	// Unresolved counts revisits whose original the archive does not hold.
	Unresolved int64 `json:"unresolved"`
}

// CrawlLogStatus summarises a tailed Heritrix crawl.log.
type CrawlLogStatus struct {
	Path string `json:"path"`
	// Offset is how far the file has been read, a partial last line
	// included (it is counted once its newline arrives).
	Offset     int64            `json:"offset"`
	Lines      int64            `json:"lines"`
	Unparsed   int64            `json:"unparsed,omitempty"`
	ByStatus   map[string]int64 `json:"by_status"`
	Duplicates int64            `json:"duplicates"`
	Bytes      int64            `json:"bytes"`
}
