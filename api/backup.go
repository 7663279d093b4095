package api

// BackupRequest is the body of POST /v1/admin/backup: the directory the
// snapshot is written to (on the daemon's machine; it must not exist, its
// parent must).
type BackupRequest struct {
	Dir string `json:"dir"`
}

// BackupResult answers POST /v1/admin/backup: where the snapshot is, what
// it holds, and what it leaves out (with why).
type BackupResult struct {
	Dir string `json:"dir"`
	// Time is when the snapshot was taken (RFC 3339, UTC).
	Time string `json:"time"`
	// Stores are the stores copied, each with its path in Dir.
	Stores []BackupStore `json:"stores"`
	// Left are the stores not in the snapshot, each with the reason.
	Left []string `json:"left,omitempty"`
	// Records and Files are the records ingested and the WARC files
	// known when the snapshot was taken.
	Records int64 `json:"records"`
	Files   int   `json:"files"`
}

// BackupStore is one store in a snapshot.
type BackupStore struct {
	Name string `json:"name"`
	// Path is where the store lives in the daemon's config; In where it
	// is in the snapshot (relative to its directory: a data_dir laid out
	// as the daemon's).
	Path string `json:"path"`
	In   string `json:"in"`
}
