package sidecar

import (
	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/ingest"
)

// The libraries return their own result types; the daemon converts them to
// the wire types of package api here (same fields, so each is a
// conversion), so ingest and aggregate never import the daemon's API.

func ingestWire(st ingest.Status) api.IngestStatus {
	files := make([]api.FileProgress, len(st.Files))
	for i, f := range st.Files {
		files[i] = api.FileProgress(f)
	}
	return api.IngestStatus{Dirs: st.Dirs, Files: files, Records: st.Records, Originals: st.Originals,
		Revisits: st.Revisits, Bytes: st.Bytes, LagBytes: st.LagBytes, Errors: st.Errors,
		LastError: st.LastError, Paused: st.Paused}
}

func crawlLogWire(st *ingest.CrawlLogStatus) *api.CrawlLogStatus {
	if st == nil {
		return nil
	}
	w := api.CrawlLogStatus(*st)
	return &w
}

func aggregateWire(st aggregate.Stats) api.AggregateStatus {
	ars := make([]api.AggregateArchive, len(st.Archives))
	for i, a := range st.Archives {
		ars[i] = api.AggregateArchive(a)
	}
	if st.Archives == nil {
		ars = nil
	}
	return api.AggregateStatus{DeadlineSeconds: st.DeadlineSeconds, Lookups: st.Lookups, Partial: st.Partial, Archives: ars}
}
