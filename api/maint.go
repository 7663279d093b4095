package api

import (
	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
)

// Index maintenance routes (token-checked like every write route): the
// dedup index's dedupindex.Maintainer over HTTP, and deletion and file
// replacement in the capture index.
const (
	// PathIndexScan: POST a dedupindex.Selector; the answer is the
	// matching entries as JSON lines (application/x-ndjson), then a
	// final line {"end":true,"count":N} so a cut stream is told apart.
	PathIndexScan = "/v1/index/scan"
	// PathIndexDelete: POST a dedupindex.Selector → DeleteResult.
	PathIndexDelete = "/v1/index/delete"
	// PathIndexUpdate: POST an UpdateRequest → UpdateResult.
	PathIndexUpdate = "/v1/index/update"
	// PathCapturesDelete: POST a dedupindex.Selector → DeleteResult.
	PathCapturesDelete = "/v1/captures/delete"
	// PathCapturesReplace: POST a ReplaceFilesRequest → ReplaceFilesResult.
	PathCapturesReplace = "/v1/captures/replace"
)

// DeleteResult says how many entries a delete removed.
type DeleteResult struct {
	Deleted int64 `json:"deleted"`
}

// UpdateRequest moves originals (dedupindex.Maintainer.Update).
type UpdateRequest struct {
	Moves []dedupindex.Move `json:"moves"`
}

// UpdateResult says how many moves were applied.
type UpdateResult struct {
	Updated int64 `json:"updated"`
}

// ScanEnd is the last line of a scan answer.
type ScanEnd struct {
	End   bool  `json:"end"`
	Count int64 `json:"count"`
}

// ReplaceFilesRequest replaces the captures of rewritten WARC files
// (captureindex.Index.ReplaceFiles): file name → its captures now.
type ReplaceFilesRequest struct {
	Files map[string][]wayside.Capture `json:"files"`
}

// ReplaceFilesResult counts the rows removed and added.
type ReplaceFilesResult struct {
	Removed int `json:"removed"`
	Added   int `json:"added"`
}
