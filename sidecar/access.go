package sidecar

import (
	"context"
	"crypto/ecdsa"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/replay"
	"github.com/wayside-archive/wayside/wacz"
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
	// WACZKey is a PEM file with the ECDSA private key that signs the WACZ
	// files of the …/wacz route ("": unsigned; `wayside wacz pubkey`
	// prints a key's public half).
	WACZKey string `yaml:"wacz_key"`
}

func (c *AccessConfig) enabled() bool { return c.Index != "-" }

// access is the replay handler over the capture index the consumers keep.
type access struct {
	idx     *captureindex.Index
	h       *replay.Handler
	methods map[string]*route
}

// openAccess builds the replay handler over the consumers' capture index
// (ConsumersConfig adds it unless access.index is "-"); nil when disabled.
func (s *Server) openAccess() (*access, error) {
	idx := s.cons.Captures
	if idx == nil {
		return nil, nil
	}
	ac := s.cfg.Access
	var key *ecdsa.PrivateKey
	if ac.WACZKey != "" {
		b, err := os.ReadFile(ac.WACZKey)
		if err == nil {
			key, err = wacz.ParseKey(b)
		}
		if err != nil {
			return nil, fmt.Errorf("sidecar: access.wacz_key %s: %w", ac.WACZKey, err)
		}
	}
	h, err := replay.New(replay.Options{Index: idx, WARCDirs: s.cfg.Ingest.Dirs, PublicURL: ac.PublicURL,
		MaxResults: ac.MaxResults, PageSize: ac.TimeMapPageSize, Logger: s.log.With("component", "replay"), WACZKey: key})
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	a := &access{idx: idx, h: h}
	rt := &route{name: "access", method: http.MethodGet, cdx: true, h: s.handleAccess}
	a.methods = map[string]*route{http.MethodGet: rt, http.MethodHead: rt}
	return a, nil
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

// status reports the capture index for /v1/status (nil when disabled); its
// queue (delivered, dropped, behind) is among the consumers'.
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
	return out
}
