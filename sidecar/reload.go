package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/aggregate"
	"github.com/wayside-archive/wayside/ingest"
)

// Reload: the daemon re-reads its configuration (SIGHUP, POST
// /v1/admin/reload) and applies the keys that can change while it runs:
//
//   - listen.token, listen.token_file, listen.cdx_token,
//     listen.allowed_hosts, listen.allowed_origins: the next request is
//     checked against the new values;
//   - ingest.dirs and ingest.poll_interval: the ingester finishes its
//     batch, writes its checkpoint and stops; a new one with the new
//     directories resumes from that checkpoint (the same path a restart
//     takes, so nothing is indexed twice or missed);
//   - access.public_url, access.max_results, access.timemap_page_size and
//     the replay's WARC directories: a new replay handler;
//   - fixity (sweeps, schedules, browser): the scheduler stops (a running
//     sweep stops between replays) and a new one starts;
//   - aggregate (archives and their MementoMaps): a new aggregator serves
//     the next request; the old one is closed once its requests finished.
//
// The new configuration is validated first (Validate, CheckDirs, and
// every other key unchanged: those need a restart); if it is invalid the
// daemon keeps serving with the old one, logs why and lists it among the
// problems of /v1/status until a reload succeeds.

// reloader holds the live configuration and the reload state.
type reloader struct {
	load func() (Config, error)

	mu       sync.Mutex
	live     Config
	loadedAt time.Time
	failed   string     // why the last reload was refused ("" after a good one)
	failedAt time.Time  //
	serial   sync.Mutex // one reload (or backup) at a time
	// gate is held shared while an ingester runs; a backup takes it once
	// the ingester stopped. hold (guarded by comp), while set, keeps the
	// successor from starting until the backup closes it.
	gate sync.RWMutex
	hold chan struct{}

	comp        sync.RWMutex // guards the components a reload replaces
	ingestNext  chan *ingest.Ingester
	ingestAck   chan struct{} // the supervisor took the next ingester
	ingestStop  context.CancelFunc
	fixityNext  chan *FixityService
	fixityAck   chan struct{}
	fixityStop  context.CancelFunc
	ingestCur   *ingest.Ingester
	fixityCur   *FixityService
	accessCur   *access
	initialised bool
	agg         *aggHolder      // the aggregator in service
	aggCtx      context.Context // Run's context, for aggregators started by a reload
}

func (r *reloader) init(cfg Config, load func() (Config, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live, r.load, r.loadedAt = cfg, load, time.Now()
	r.ingestNext = make(chan *ingest.Ingester, 1)
	r.fixityNext = make(chan *FixityService, 1)
	r.ingestAck = make(chan struct{}, 1)
	r.fixityAck = make(chan struct{}, 1)
}

// listen returns the live listen settings.
func (s *Server) listen() ListenConfig {
	s.reload.mu.Lock()
	defer s.reload.mu.Unlock()
	if s.reload.live.DataDir == "" {
		return s.cfg.Listen // before New finished
	}
	return s.reload.live.Listen
}

// Live returns the configuration the daemon serves with now.
func (s *Server) Live() Config {
	s.reload.mu.Lock()
	defer s.reload.mu.Unlock()
	return s.reload.live
}

func (s *Server) ing() *ingest.Ingester {
	s.reload.comp.RLock()
	defer s.reload.comp.RUnlock()
	if s.reload.ingestCur != nil {
		return s.reload.ingestCur
	}
	return s.ingest
}

func (s *Server) fix() *FixityService {
	s.reload.comp.RLock()
	defer s.reload.comp.RUnlock()
	if s.reload.fixityCur != nil {
		return s.reload.fixityCur
	}
	return s.fixity
}

func (s *Server) acc() *access {
	s.reload.comp.RLock()
	defer s.reload.comp.RUnlock()
	if s.reload.initialised {
		return s.reload.accessCur
	}
	return s.access
}

// problem is the status line of a refused reload, or "".
func (r *reloader) problem() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == "" {
		return ""
	}
	return fmt.Sprintf("config reload at %s refused, still serving the config loaded at %s: %s",
		r.failedAt.UTC().Format(time.RFC3339), r.loadedAt.UTC().Format(time.RFC3339), r.failed)
}

// reloadable zeroes the keys a reload may change, so that what is left
// must be equal between the old and the new configuration.
func reloadable(c Config) Config {
	c.Listen.Token, c.Listen.TokenFile, c.Listen.CDXToken = "", "", ""
	c.Listen.AllowedHosts, c.Listen.AllowedOrigins = nil, nil
	c.Ingest.Dirs, c.Ingest.PollInterval = nil, 0
	c.Access.PublicURL, c.Access.MaxResults, c.Access.TimeMapPageSize = "", 0, 0
	c.Fixity = FixityConfig{}
	c.Aggregate = aggregate.Config{}
	return c
}

// needsRestart names the first top-level key that differs between old
// and next outside what a reload applies, or "".
func needsRestart(old, next Config) string {
	a, b := reflect.ValueOf(reloadable(old)), reflect.ValueOf(reloadable(next))
	t := a.Type()
	for i := range t.NumField() {
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			name := t.Field(i).Tag.Get("yaml")
			if sub := a.Field(i); sub.Kind() == reflect.Struct {
				st := sub.Type()
				for j := range st.NumField() {
					if st.Field(j).IsExported() && !reflect.DeepEqual(sub.Field(j).Interface(), b.Field(i).Field(j).Interface()) {
						return name + "." + st.Field(j).Tag.Get("yaml")
					}
				}
			}
			return name
		}
	}
	return ""
}

// Reload reads the configuration again (Options.LoadConfig) and applies
// it; on any error the old configuration stays in force and the error is
// returned, logged and shown in status.
func (s *Server) Reload(ctx context.Context) error {
	if s.reload.load == nil {
		return errors.New("sidecar: reload: this daemon was started without a config source")
	}
	next, err := s.reload.load()
	if err == nil {
		err = s.Apply(ctx, next)
	} else {
		err = fmt.Errorf("sidecar: reload: %w", err)
		s.refused(err)
	}
	return err
}

func (s *Server) refused(err error) {
	s.reload.mu.Lock()
	s.reload.failed, s.reload.failedAt = err.Error(), time.Now()
	s.reload.mu.Unlock()
	s.log.Error("sidecar: config reload refused; serving with the old config", "err", err)
}

// Apply validates next and applies its reloadable keys (see above).
func (s *Server) Apply(ctx context.Context, next Config) error {
	s.reload.serial.Lock()
	defer s.reload.serial.Unlock()
	err := s.apply(ctx, next)
	if err != nil {
		s.refused(err)
		return err
	}
	s.reload.mu.Lock()
	s.reload.failed = ""
	s.reload.loadedAt = time.Now()
	s.reload.mu.Unlock()
	s.log.Info("sidecar: config reloaded", "watch", next.Ingest.Dirs, "sweeps", len(next.Fixity.Sweeps))
	return nil
}

func (s *Server) apply(ctx context.Context, next Config) error {
	next.Defaults()
	if err := next.ResolveToken(); err != nil {
		return fmt.Errorf("sidecar: reload: %w", err)
	}
	if err := next.Validate(); err != nil {
		return fmt.Errorf("sidecar: reload: %w", err)
	}
	if err := next.CheckDirs(); err != nil {
		return fmt.Errorf("sidecar: reload: %w", err)
	}
	old := s.Live()
	if k := needsRestart(old, next); k != "" {
		return fmt.Errorf("sidecar: reload: %s changed: that key needs a restart (nothing was applied)", k)
	}
	if next.Characterize.Enabled && !reflect.DeepEqual(old.Ingest.Dirs, next.Ingest.Dirs) {
		// The characterizer reads records back from the directories it
		// was started with.
		return errors.New("sidecar: reload: ingest.dirs changed while characterize.enabled: that needs a restart (nothing was applied)")
	}
	// Build every new component before stopping any old one: a failure
	// here leaves the daemon as it was.
	ic := next.IngestConfig(s.cons.CatchUp, s.metrics.Ingest, s.log)
	ic.ObserveBatch = func(d time.Duration) { s.metrics.ingestBatches.Observe(d.Seconds()) }
	newIng, err := ingest.New(ic, s.idx, s.cons.Fanout)
	if err != nil {
		return fmt.Errorf("sidecar: reload: %w", err)
	}
	newFix, err := newFixityService(next.Fixity, s.metrics, s.log)
	if err != nil {
		return fmt.Errorf("sidecar: reload: %w", err)
	}
	newAcc, err := s.openAccessFor(next)
	if err != nil {
		return fmt.Errorf("sidecar: reload: %w", err)
	}
	aggChanged := !reflect.DeepEqual(old.Aggregate, next.Aggregate)
	var newAgg *aggregate.Aggregator
	if aggChanged {
		if newAgg, err = s.newAggregator(next); err != nil {
			return fmt.Errorf("sidecar: reload: %w", err)
		}
	}
	// Apply: listen settings and access at once; ingest and fixity hand
	// over through their supervisors.
	s.reload.mu.Lock()
	s.reload.live = next
	s.reload.mu.Unlock()
	if a := s.TCPAddr(); a != nil {
		s.setTCPAddr(a)
	}
	s.reload.comp.Lock()
	s.reload.accessCur, s.reload.initialised = newAcc, true
	stopIng, stopFix := s.reload.ingestStop, s.reload.fixityStop
	s.reload.comp.Unlock()
	if aggChanged {
		s.swapAggregator(newAgg)
	}
	if !reflect.DeepEqual(old.Ingest.Dirs, next.Ingest.Dirs) || old.Ingest.PollInterval != next.Ingest.PollInterval {
		if stopIng == nil {
			return errors.New("sidecar: reload: the daemon is not running yet")
		}
		s.reload.ingestNext <- newIng
		stopIng()
		if err := waitAck(ctx, s.reload.ingestAck); err != nil {
			return err
		}
	}
	if !reflect.DeepEqual(old.Fixity, next.Fixity) {
		if stopFix == nil {
			return errors.New("sidecar: reload: the daemon is not running yet")
		}
		s.reload.fixityNext <- newFix
		stopFix()
		if err := waitAck(ctx, s.reload.fixityAck); err != nil {
			return err
		}
	}
	return nil
}

// waitAck waits for a supervisor to take over the new component.
func waitAck(ctx context.Context, ack <-chan struct{}) error {
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sidecar: reload: %w", ctx.Err())
	}
}

// superviseIngest runs the ingester until ctx ends; a reload stops it
// (batch finished, checkpoint written) and starts its successor.
func (s *Server) superviseIngest(ctx context.Context) error {
	r := &s.reload
	cur := s.ing()
	for {
		ictx, cancel := context.WithCancel(ctx)
		r.comp.Lock()
		r.ingestCur, r.ingestStop = cur, cancel
		r.comp.Unlock()
		if cur != s.ingest {
			r.ingestAck <- struct{}{} // the successor is in place
		}
		r.gate.RLock()
		err := cur.Run(ictx)
		r.gate.RUnlock()
		cancel()
		if ctx.Err() != nil {
			return err
		}
		select {
		case next := <-r.ingestNext:
			if err != nil {
				r.ingestAck <- struct{}{}
				return err
			}
			r.comp.Lock()
			hold := r.hold
			r.comp.Unlock()
			if hold != nil { // a backup is taking its snapshot
				select {
				case <-hold:
				case <-ctx.Done():
					return err
				}
			}
			s.log.Info("sidecar: ingest restarted with the reloaded config")
			cur = next
		default:
			return err // stopped by itself: an error the daemon stops on
		}
	}
}

// superviseFixity runs the fixity scheduler, replaced on reload.
func (s *Server) superviseFixity(ctx context.Context) error {
	r := &s.reload
	cur := s.fix()
	for {
		fctx, cancel := context.WithCancel(ctx)
		r.comp.Lock()
		r.fixityCur, r.fixityStop = cur, cancel
		r.comp.Unlock()
		if cur != s.fixity {
			r.fixityAck <- struct{}{}
		}
		err := cur.Run(fctx)
		cancel()
		if ctx.Err() != nil {
			return err
		}
		select {
		case next := <-r.fixityNext:
			if err != nil {
				s.log.Error("sidecar: fixity scheduler stopped with an error before the reload", "err", err)
			}
			cur = next
		default:
			return err
		}
	}
}

// handleReload is POST /v1/admin/reload: 200 with the live watched
// directories, or 422 naming why the new config was refused (the old one
// still serves).
func (s *Server) handleReload(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	if s.reload.load == nil {
		return &apiError{code: http.StatusNotImplemented, msg: "this daemon cannot reload its config (no config source)"}
	}
	if err := s.Reload(r.Context()); err != nil {
		return &apiError{code: http.StatusUnprocessableEntity, msg: err.Error() + " (still serving with the old config)"}
	}
	live := s.Live()
	writeJSON(w, http.StatusOK, map[string]any{"reloaded": true, "watch": live.Ingest.Dirs, "sweeps": len(live.Fixity.Sweeps)})
	return nil
}
