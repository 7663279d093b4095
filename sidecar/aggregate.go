package sidecar

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/api"
)

// aggregateRoot is where the aggregate routes answer (/aggregate/…, on the
// socket and, with the read-only CDX token, on TCP).
const aggregateRoot = "/aggregate/"

// aggHolder is the aggregator in service: requests hold mu for reading
// while they use it, so a reload closes the one it replaces only after
// the requests using it have finished.
type aggHolder struct {
	mu     sync.RWMutex
	a      *aggregate.Aggregator
	cancel context.CancelFunc
	done   chan struct{}
}

// openAggregate builds the MementoMap-routed aggregator over the archives
// of aggregate.archives (nothing when none is configured).
func (s *Server) openAggregate() error {
	rt := &route{name: "aggregate", method: http.MethodGet, cdx: true, h: s.handleAggregate}
	s.aggRoutes = map[string]*route{http.MethodGet: rt, http.MethodHead: rt}
	a, err := s.newAggregator(s.cfg)
	if err != nil {
		return err
	}
	s.agg = a
	s.reload.agg = &aggHolder{a: a}
	return nil
}

// newAggregator builds the aggregator of cfg; nil when none is configured.
func (s *Server) newAggregator(cfg Config) (*aggregate.Aggregator, error) {
	if !cfg.Aggregate.Enabled() {
		return nil, nil
	}
	return aggregate.New(cfg.Aggregate, aggregate.WithLogger(s.log.With("component", "aggregate")))
}

// aggregator returns the holder in service (its a is nil when off).
func (s *Server) aggregator() *aggHolder {
	s.reload.comp.RLock()
	defer s.reload.comp.RUnlock()
	return s.reload.agg
}

// aggregateRoutes returns the aggregate routes for a path under
// /aggregate/ when the aggregator is configured.
func (s *Server) aggregateRoutes(p string) (map[string]*route, bool) {
	if h := s.aggregator(); h == nil || h.a == nil || !strings.HasPrefix(p, aggregateRoot) {
		return nil, false
	}
	return s.aggRoutes, true
}

// runAggregate keeps the aggregator's maps fresh until ctx ends; the
// returned channel is closed once it (and any started by a reload)
// stopped.
func (s *Server) runAggregate(ctx context.Context) <-chan struct{} {
	s.reload.comp.Lock()
	s.reload.aggCtx = ctx
	h := s.reload.agg
	s.startAggLocked(h)
	s.reload.comp.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		if h := s.aggregator(); h != nil && h.done != nil {
			<-h.done
		}
	}()
	return done
}

// startAggLocked runs h's map refresh under the daemon's run context.
func (s *Server) startAggLocked(h *aggHolder) {
	if h == nil || h.a == nil || s.reload.aggCtx == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.reload.aggCtx)
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		h.a.Run(ctx)
	}()
}

// swapAggregator puts a (nil: none) in service and retires the old one
// once its requests have finished.
func (s *Server) swapAggregator(a *aggregate.Aggregator) {
	nh := &aggHolder{a: a}
	s.reload.comp.Lock()
	old := s.reload.agg
	s.reload.agg = nh
	s.startAggLocked(nh)
	s.reload.comp.Unlock()
	if old != nil && old.a != nil {
		s.metrics.reg.Unregister(old.a)
	}
	if a != nil {
		if err := s.metrics.reg.Register(a); err != nil {
			s.log.Warn("sidecar: aggregate metrics not registered after reload", "err", err)
		}
	}
	if old != nil && old.a != nil {
		if old.cancel != nil {
			old.cancel()
			<-old.done
		}
		old.mu.Lock() // requests still using it finish first
		old.a.Close()
		old.mu.Unlock()
	}
}

func (s *Server) closeAggregate() {
	if h := s.aggregator(); h != nil && h.a != nil {
		h.mu.Lock()
		h.a.Close()
		h.mu.Unlock()
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
	if u := s.Live().Access.PublicURL; u != "" {
		base = strings.TrimSuffix(u, "/") + m
	}
	h := s.aggregator()
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.a == nil {
		return errorf(http.StatusNotFound, "no aggregate archives configured")
	}
	return replayError(w, h.a.Serve(w, r, rest, base+strings.TrimSuffix(aggregateRoot, "/")))
}

// aggregateStatus is the aggregator's part of /v1/status (nil when off).
func (s *Server) aggregateStatus() *api.AggregateStatus {
	h := s.aggregator()
	if h == nil || h.a == nil {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	st := aggregateWire(h.a.Stats())
	return &st
}
