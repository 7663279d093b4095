package sidecar

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/sidecar/api"
)

// AccessConfig configures the capture index and the access routes (CDX
// API, Memento TimeMaps and TimeGate, raw and rewritten replay).
type AccessConfig struct {
	// Index is the capture index directory. Default DataDir/capture-index;
	// "-" disables the capture index and the access routes.
	Index string `yaml:"index"`
	// PublicURL is the absolute URL clients reach the daemon at, used in
	// TimeMaps, Link headers and redirects (default: from each request's
	// Host).
	PublicURL string `yaml:"public_url"`
	// MaxResults caps the lines of one CDX API answer. Default 100000.
	MaxResults int `yaml:"max_results"`
	// TimeMapPageSize is the number of mementos per TimeMap page.
	// Default 10000.
	TimeMapPageSize int `yaml:"timemap_page_size"`
}

func (c *AccessConfig) enabled() bool { return c.Index != "-" }

// access is the capture index fed by ingest and the replay handler over it.
type access struct {
	idx     *captureindex.Index
	h       *replay.Handler
	fan     *wayside.Fanout
	methods map[string]*route
}

// openAccess opens the capture index (catching up from the CDXJ files the
// ingester wrote) and builds the replay handler; nil when disabled.
func (s *Server) openAccess() (*access, error) {
	ac := s.cfg.Access
	if !ac.enabled() {
		return nil, nil
	}
	opts := []captureindex.Option{captureindex.WithLogger(s.log.With("component", "captureindex")), captureindex.WithScope(s.cfg.Ingest.Scope)}
	if s.cfg.Ingest.CDXJDir != "-" {
		opts = append(opts, captureindex.WithCDXJDirs(s.cfg.Ingest.CDXJDir))
	}
	idx, err := captureindex.Open(context.Background(), ac.Index, opts...)
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	h, err := replay.New(replay.Options{Index: idx, WARCDirs: s.cfg.Ingest.Dirs, PublicURL: ac.PublicURL,
		MaxResults: ac.MaxResults, PageSize: ac.TimeMapPageSize, Logger: s.log.With("component", "replay")})
	if err != nil {
		idx.Close()
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	a := &access{idx: idx, h: h, fan: wayside.NewFanout(wayside.WithLogger(s.log))}
	a.fan.Add("captureindex", idx)
	rt := &route{name: "access", method: http.MethodGet, cdx: true, h: s.handleAccess}
	a.methods = map[string]*route{http.MethodGet: rt, http.MethodHead: rt}
	return a, nil
}

// OnCapture hands a capture to the capture index's queue.
func (a *access) OnCapture(ctx context.Context, c wayside.Capture) {
	if a != nil {
		a.fan.OnCapture(ctx, c)
	}
}

// close drains the capture index's queue and closes it.
func (a *access) close(log *slog.Logger) error {
	if a == nil {
		return nil
	}
	err := a.fan.Close()
	if err != nil {
		log.Warn("captureindex: captures not indexed (the next start catches up from the CDXJ files)", "err", err)
	}
	if cerr := a.idx.Close(); cerr != nil {
		return fmt.Errorf("sidecar: %w", cerr)
	}
	return nil
}

// routesFor finds the routes of a path: the fixed routes, else the access
// routes of a collection the capture index holds.
func (s *Server) routesFor(p string) (map[string]*route, bool) {
	if m, ok := s.routes[p]; ok {
		return m, true
	}
	if m, ok := s.aggregateRoutes(p); ok {
		return m, true
	}
	if s.access != nil {
		if _, ok := s.access.h.Collection(p); ok {
			return s.access.methods, true
		}
	}
	return nil, false
}

// mount returns the escaped path prefix a request came in under: the CDX
// token segment, if any.
func mount(r *http.Request) string {
	ep := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(ep, "/t/"); ok {
		if tok, _, ok := strings.Cut(rest, "/"); ok {
			return "/t/" + tok
		}
	}
	return ""
}

func (s *Server) handleAccess(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	if ri.hexDigest {
		return errorf(http.StatusNotFound, "no such route %s (/hex/ applies to the dedup CDX routes only)", r.URL.Path)
	}
	return replayError(w, s.access.h.Serve(w, r, mount(r)))
}

// replayError turns a *replay.Error (the access and aggregate routes'
// answers other than 200) into the router's error, with its headers.
func replayError(w http.ResponseWriter, err error) error {
	var e *replay.Error
	if errors.As(err, &e) {
		for k, vs := range e.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		return errorf(e.Code, "%s", e.Msg)
	}
	return err
}

// refererRedirect sends a request that escaped rewriting (a host-relative
// URL a replayed page's script built) back into the archive, when its
// Referer is a memento of this daemon reached with the CDX token (on TCP).
func (s *Server) refererRedirect(w http.ResponseWriter, r *http.Request, kind listenerKind) bool {
	if s.access == nil || r.Referer() == "" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	ref, err := http.NewRequest(http.MethodGet, r.Referer(), nil)
	if err != nil {
		return false
	}
	m := mount(ref)
	if kind == viaTCP {
		tok := strings.TrimPrefix(m, "/t/")
		if m == "" || s.cfg.Listen.CDXToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Listen.CDXToken)) != 1 {
			return false
		}
	}
	loc, ok := s.access.h.RefererTarget(r, m)
	if !ok {
		return false
	}
	w.Header().Set("Location", loc)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	fmt.Fprintf(w, "Found: %s\n", loc)
	return true
}

// status reports the capture index for /v1/status (nil when disabled).
func (a *access) status(ctx context.Context) *api.CapturesStatus {
	if a == nil {
		return nil
	}
	out := &api.CapturesStatus{Collections: []api.CollectionStatus{}}
	st, err := a.idx.Stats(ctx)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.DiskBytes = st.DiskBytes
	for _, sc := range st.Scopes {
		out.Collections = append(out.Collections, api.CollectionStatus{Name: sc.Scope, Captures: sc.Captures, Revisits: sc.Revisits, Unresolved: sc.Unresolved})
	}
	for _, f := range a.fan.Stats() {
		out.Behind, out.Failed = f.Behind, f.Failed
		if f.LastError != "" {
			out.Error = f.LastError
		}
	}
	return out
}
