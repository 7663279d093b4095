package sidecar

import (
	"context"
	"net/http"
	"strings"

	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/api"
)

// aggregateRoot is where the aggregate routes answer (/aggregate/…, on the
// socket and, with the read-only CDX token, on TCP).
const aggregateRoot = "/aggregate/"

// openAggregate builds the MementoMap-routed aggregator over the archives
// of aggregate.archives (nothing when none is configured).
func (s *Server) openAggregate() error {
	if !s.cfg.Aggregate.Enabled() {
		return nil
	}
	a, err := aggregate.New(s.cfg.Aggregate, aggregate.WithLogger(s.log.With("component", "aggregate")))
	if err != nil {
		return err
	}
	s.agg = a
	rt := &route{name: "aggregate", method: http.MethodGet, cdx: true, h: s.handleAggregate}
	s.aggRoutes = map[string]*route{http.MethodGet: rt, http.MethodHead: rt}
	return nil
}

// aggregateRoutes returns the aggregate routes for a path under
// /aggregate/ when the aggregator is configured.
func (s *Server) aggregateRoutes(p string) (map[string]*route, bool) {
	if s.agg == nil || !strings.HasPrefix(p, aggregateRoot) {
		return nil, false
	}
	return s.aggRoutes, true
}

// runAggregate keeps the aggregator's maps fresh until ctx ends; the
// returned channel is closed once it stopped.
func (s *Server) runAggregate(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if s.agg != nil {
			s.agg.Run(ctx)
		}
	}()
	return done
}

func (s *Server) closeAggregate() {
	if s.agg != nil {
		s.agg.Close()
	}
}

func (s *Server) handleAggregate(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	if ri.hexDigest {
		return errorf(http.StatusNotFound, "no such route %s (/hex/ applies to the dedup CDX routes only)", r.URL.Path)
	}
	m := mount(r)
	rest := strings.TrimPrefix(r.URL.EscapedPath()[len(m):], aggregateRoot)
	base := "http://" + r.Host + m
	if r.TLS != nil {
		base = "https://" + r.Host + m
	}
	if u := s.cfg.Access.PublicURL; u != "" {
		base = strings.TrimSuffix(u, "/") + m
	}
	return replayError(w, s.agg.Serve(w, r, rest, base+strings.TrimSuffix(aggregateRoot, "/")))
}

// aggregateStatus is the aggregator's part of /v1/status (nil when off).
func (s *Server) aggregateStatus() *api.AggregateStatus {
	if s.agg == nil {
		return nil
	}
	st := aggregateWire(s.agg.Stats())
	return &st
}
