package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/profiler"
	"github.com/wayside-archive/wayside/profiler/mementomap"
	"github.com/wayside-archive/wayside/sidecar/api"
)

// LiveMap is the daemon's MementoMap, kept current from ingested captures
// (profiler.Live). Captures are held in memory and merged into the map file
// every mementomap.merge_interval. Which CDXJ lines a merge covered is
// saved beside the map (mementomap.state.json, written atomically after the
// merge), so after a crash only the CDXJ lines written since the last merge
// are fed again: none is lost, and a capture is counted twice only if the
// daemon died between a merge and its state write (profiler marks replayed
// counts as upper bounds).
type LiveMap struct {
	cfg       MapConfig
	log       *slog.Logger
	live      *profiler.Live
	statePath string
}

type mapState struct {
	// Merged maps a WARC base name to the size of its CDXJ file covered
	// by the map file.
	Merged map[string]int64 `json:"merged"`
}

func openLiveMap(cfg MapConfig, log *slog.Logger) (*LiveMap, error) {
	m := &LiveMap{cfg: cfg, log: log.With("component", "mementomap")}
	if cfg.Path == "-" {
		return m, nil
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o755); err != nil {
		return nil, fmt.Errorf("sidecar: mementomap: %w", err)
	}
	opts := profiler.LiveOptions{Name: cfg.Name, Logger: m.log, Interval: cfg.MergeInterval}
	if cfg.Compact {
		opts.Compact = &mementomap.CompactOptions{Wh: cfg.Weight, Wp: cfg.Weight}
	}
	live, err := profiler.OpenLive(cfg.Path, opts)
	if err != nil {
		return nil, fmt.Errorf("sidecar: mementomap: %w", err)
	}
	m.live = live
	m.statePath = cfg.Path + ".state.json"
	return m, nil
}

func (m *LiveMap) enabled() bool { return m != nil && m.live != nil }

// OnCapture records a capture (response, revisit, resource).
func (m *LiveMap) OnCapture(ctx context.Context, c wayside.Capture) error {
	if m.enabled() {
		return m.live.OnCapture(ctx, c)
	}
	return nil
}

func (m *LiveMap) loadState() (mapState, error) {
	st := mapState{Merged: map[string]int64{}}
	b, err := os.ReadFile(m.statePath)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("sidecar: mementomap: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("sidecar: mementomap: %s: %w", m.statePath, err)
	}
	if st.Merged == nil {
		st.Merged = map[string]int64{}
	}
	return st, nil
}

// recover feeds the CDXJ lines written after the last merge (up to the
// checkpointed sizes) into the live map.
func (m *LiveMap) recover(cdxjPath func(string) string, sizes map[string]int64) error {
	if !m.enabled() {
		return nil
	}
	st, err := m.loadState()
	if err != nil {
		return err
	}
	var fed int64
	for name, size := range sizes {
		from := min(st.Merged[name], size)
		if from >= size {
			continue
		}
		f, err := os.Open(cdxjPath(name))
		if err != nil {
			return fmt.Errorf("sidecar: mementomap: recover: %w", err)
		}
		n, err := m.live.FeedCDXJ(ioSection(f, from, size-from), cdxjPath(name))
		f.Close()
		if err != nil {
			return fmt.Errorf("sidecar: mementomap: recover: %w", err)
		}
		fed += n
	}
	if fed > 0 {
		m.log.Info("mementomap: fed captures written since the last merge", "captures", fed)
	}
	return nil
}

// merge merges the captures in memory into the map file and records that
// the map now covers the CDXJ files up to sizes.
func (m *LiveMap) merge(ctx context.Context, sizes map[string]int64) (api.CompactResult, error) {
	res := api.CompactResult{Path: m.cfg.Path, Compact: m.cfg.Compact}
	if !m.enabled() {
		return res, errorf(http.StatusNotFound, "the MementoMap is disabled (mementomap.path: -)")
	}
	res.Pending = m.live.Pending()
	if err := m.live.Compact(ctx); err != nil {
		return res, err
	}
	res.Merged = true
	st := mapState{Merged: sizes}
	b, _ := json.Marshal(st)
	if err := writeFileAtomic(m.statePath, b); err != nil {
		return res, err
	}
	if b, err := os.ReadFile(m.cfg.Path); err == nil {
		res.Bytes = int64(len(b))
		res.Lines = int64(bytes.Count(b, []byte{'\n'}))
	}
	return res, nil
}

// Close releases the map (after the final merge done by the server).
func (m *LiveMap) Close() error {
	if !m.enabled() {
		return nil
	}
	return m.live.Close()
}

func (s *Server) onCapture(ctx context.Context, c wayside.Capture) {
	s.mmap.OnCapture(ctx, c)
	s.access.OnCapture(ctx, c)
}

// mergeMap merges the live map while no ingest batch is in flight.
func (s *Server) mergeMap(ctx context.Context) (api.CompactResult, error) {
	var res api.CompactResult
	err := s.ingest.quiesced(func(sizes map[string]int64) error {
		var err error
		res, err = s.mmap.merge(ctx, sizes)
		return err
	})
	return res, err
}

// runMapMerges merges every merge_interval until ctx ends.
func (s *Server) runMapMerges(ctx context.Context) {
	if !s.mmap.enabled() {
		return
	}
	t := newTicker(s.cfg.Map.MergeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.mergeMap(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("mementomap: merge failed; captures stay in memory", "err", err)
		}
	}
}

func (s *Server) addMapRoutes() {
	// The map is read-only and says no more than the CDX API does: the
	// read-only CDX token opens it (aggregators fetch it with that token).
	s.add(&route{name: "mementomap", method: "GET", path: api.PathMementoMap, cdx: true, h: s.handleMap})
	s.add(&route{name: "mementomap_lookup", method: "GET", path: api.PathMapLookup, h: s.handleMapLookup})
	s.add(&route{name: "mementomap_compact", method: "POST", path: api.PathMapCompact, h: s.handleMapCompact})
}

func (s *Server) handleMap(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	if !s.mmap.enabled() {
		return errorf(http.StatusNotFound, "the MementoMap is disabled (mementomap.path: -)")
	}
	// Streamed: a map may be large. A failure midway cuts the body short
	// (UKVS readers detect a torn last line); it is logged.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, err := s.mmap.live.WriteTo(w); err != nil {
		s.log.Warn("mementomap: serving the map failed", "err", err)
	}
	return nil
}

func (s *Server) handleMapLookup(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	if !s.mmap.enabled() {
		return errorf(http.StatusNotFound, "the MementoMap is disabled (mementomap.path: -)")
	}
	u := r.URL.Query().Get("url")
	if u == "" {
		return errorf(http.StatusBadRequest, "url: missing")
	}
	mt, err := s.mmap.live.Lookup(u)
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

// sortedNames returns the keys of m in order.
func sortedNames(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
