package ingest

import "github.com/wayside-archive/wayside/api"

// Status is the ingest progress, per file and in total; it is the wire form
// `wayside status ... ingest` shows.
type Status = api.IngestStatus

// FileProgress is the ingest state of one WARC file.
type FileProgress = api.FileProgress

// CrawlLogStatus summarises a tailed Heritrix crawl.log.
type CrawlLogStatus = api.CrawlLogStatus
