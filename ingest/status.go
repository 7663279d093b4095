package ingest

// Status is the ingest progress, per file and in total (Ingester.Status).
// The daemon serves it as api.IngestStatus (GET /v1/ingest); this package
// does not know the wire form.
type Status struct {
	Dirs      []string
	Files     []FileProgress
	Records   int64
	Originals int64
	Revisits  int64
	Bytes     int64
	LagBytes  int64
	Errors    int64
	LastError string
	// Paused says why ingest is waiting instead of reading (a disk it
	// writes to is full); empty while it runs. It resumes by itself once
	// the cause is gone.
	Paused string
}

// FileProgress is the ingest state of one WARC file.
type FileProgress struct {
	// Name is the file's base name without ".open".
	Name string
	// Path is where it was last seen.
	Path string
	// Size is the file size last seen; Offset the position after the last
	// complete record ingested.
	Size    int64
	Offset  int64
	Records int64
	// Open is true while the file still has its ".open" suffix.
	Open bool
	// Done is true once a finished file was read to its end.
	Done bool
	// Truncated reports a finished file that ends in a partial record
	// (TruncatedAt is where that record starts).
	Truncated   bool
	TruncatedAt int64
	Error       string
}

// CrawlLogStatus summarises a tailed Heritrix crawl.log.
type CrawlLogStatus struct {
	Path string
	// Offset is how far the file has been read, a partial last line
	// included (it is counted once its newline arrives).
	Offset     int64
	Lines      int64
	Unparsed   int64
	ByStatus   map[string]int64
	Duplicates int64
	Bytes      int64
}
