package sidecar

import (
	"bytes"
	"context"
	"net/http"
	"os"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/mementomap"
)

// The live MementoMap is a consumer of the capture spine, built with the
// others by package consumers (mementomap.Live, catching up from the CDXJ
// files in ingest.cdxj_dir); this file serves it.

// liveMap returns the live map, or an error answer when it is disabled.
func (s *Server) liveMap() (*mementomap.Live, error) {
	if s.cons.Live == nil {
		return nil, errorf(http.StatusNotFound, "the MementoMap is disabled (mementomap.path: -)")
	}
	return s.cons.Live, nil
}

// mergeMap merges the captures the live map holds in memory into its file.
func (s *Server) mergeMap(ctx context.Context) (api.CompactResult, error) {
	res := api.CompactResult{Path: s.cfg.Map.Path, Compact: s.cfg.Map.Compact}
	l, err := s.liveMap()
	if err != nil {
		return res, err
	}
	res.Pending = l.Pending()
	if err := l.Compact(ctx); err != nil {
		return res, err
	}
	res.Merged = true
	if b, err := os.ReadFile(s.cfg.Map.Path); err == nil {
		res.Bytes = int64(len(b))
		res.Lines = int64(bytes.Count(b, []byte{'\n'}))
	}
	return res, nil
}

func (s *Server) addMapRoutes() {
	// The map is read-only and says no more than the CDX API does: the
	// read-only CDX token opens it (aggregators fetch it with that token).
	s.add(&route{name: "mementomap", method: "GET", path: api.PathMementoMap, cdx: true, h: s.handleMap})
	s.add(&route{name: "mementomap_lookup", method: "GET", path: api.PathMapLookup, h: s.handleMapLookup})
	s.add(&route{name: "mementomap_compact", method: "POST", path: api.PathMapCompact, h: s.handleMapCompact})
}

func (s *Server) handleMap(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	l, err := s.liveMap()
	if err != nil {
		return err
	}
	// Streamed: a map may be large. A failure midway cuts the body short
	// (UKVS readers detect a torn last line); it is logged.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, err := l.WriteTo(w); err != nil {
		s.log.Warn("mementomap: serving the map failed", "err", err)
	}
	return nil
}

func (s *Server) handleMapLookup(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	l, err := s.liveMap()
	if err != nil {
		return err
	}
	u := r.URL.Query().Get("url")
	if u == "" {
		return errorf(http.StatusBadRequest, "url: missing")
	}
	mt, err := l.Lookup(u)
	if err != nil {
		return errorf(http.StatusBadRequest, "url %q: %v", u, err)
	}
	out := api.MapLookup{URL: u, Found: mt.Present, Key: string(mt.Key)}
	if len(mt.Key) > 0 {
		out.Freq = mt.Freq.String()
		out.Excluded = mt.Freq.IsExclusion()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleMapCompact(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in struct{}
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
			return err
		}
	}
	res, err := s.mergeMap(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
