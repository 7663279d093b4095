package sidecar

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/fixity"
)

// FixityService runs the sweeps defined in the config on their cron
// schedules and on demand, and serves their results and the HTML report.
// Results are appended to one fixity.History in FixityConfig.Dir.
type FixityService struct {
	cfg     FixityConfig
	metrics *Metrics
	log     *slog.Logger

	// problem says why the sweeps cannot run (no browser), found at
	// start-up; "" when they can.
	problem string

	mu      sync.Mutex
	hist    *fixity.History
	sweeps  map[string]*sweepState
	order   []string
	cron    *cron.Cron
	wg      sync.WaitGroup
	baseCtx context.Context
}

type sweepState struct {
	cfg     SweepConfig
	entryID cron.EntryID
	sched   cron.Schedule // parsed from cfg.Schedule
	running bool
	done    chan struct{} // closed when the running sweep ends
	last    *api.SweepRun
}

func newFixityService(cfg FixityConfig, m *Metrics, log *slog.Logger) (*FixityService, error) {
	f := &FixityService{cfg: cfg, metrics: m, log: log.With("component", "fixity"), sweeps: map[string]*sweepState{}}
	for _, sc := range cfg.Sweeps {
		if _, err := fixityConfigFor(cfg, sc); err != nil {
			return nil, &ConfigError{Key: "fixity.sweeps." + sc.Name + ".archive_hosts", Err: err}
		}
		f.sweeps[sc.Name] = &sweepState{cfg: sc}
		f.order = append(f.order, sc.Name)
	}
	if len(cfg.Sweeps) > 0 {
		// The daemon still serves everything else, but says at start-up
		// and in status that its sweeps will fail.
		if _, err := fixity.FindBrowser(cfg.Browser); err != nil {
			f.problem = "fixity sweeps cannot run (fixity.browser): " + err.Error()
			f.log.Error("sidecar: " + f.problem)
		}
	}
	return f, nil
}

// fixityConfigFor builds the replay scope of a sweep: the configured
// archives holding one of its archive_hosts, or one archive per host.
func fixityConfigFor(cfg FixityConfig, sc SweepConfig) (*fixity.Config, error) {
	var archives []fixity.Archive
	used := map[string]bool{}
	for _, a := range cfg.Archives {
		for _, h := range a.Hosts {
			for _, want := range sc.ArchiveHosts {
				if strings.EqualFold(h, want) && !used[a.Name+"\x00"+strings.Join(a.Hosts, ",")] {
					used[a.Name+"\x00"+strings.Join(a.Hosts, ",")] = true
					cp := a
					cp.Hosts = append([]string{}, a.Hosts...)
					cp.Exclude = append([]fixity.Rule{}, a.Exclude...)
					archives = append(archives, cp)
				}
			}
		}
	}
	covered := func(h string) bool {
		for _, a := range archives {
			for _, x := range a.Hosts {
				if strings.EqualFold(x, h) {
					return true
				}
			}
		}
		return false
	}
	for _, h := range sc.ArchiveHosts {
		if !covered(h) {
			archives = append(archives, fixity.Archive{Name: h, Hosts: []string{h}})
		}
	}
	return fixity.NewConfig(archives...)
}

// Run starts the scheduler and returns when ctx ends and running sweeps
// have stopped (they stop between replays; what was recorded stays).
func (f *FixityService) Run(ctx context.Context) error {
	if len(f.sweeps) == 0 {
		<-ctx.Done()
		return nil
	}
	hist, err := fixity.OpenHistory(f.cfg.Dir, f.log)
	if err != nil {
		return fmt.Errorf("sidecar: fixity: %w", err)
	}
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	c := cron.New(cron.WithParser(parser), cron.WithLocation(time.UTC))
	f.mu.Lock()
	f.hist, f.cron, f.baseCtx = hist, c, ctx
	for _, name := range f.order {
		st := f.sweeps[name]
		if st.cfg.Schedule == "" {
			continue
		}
		name := name
		sched, err := parser.Parse(st.cfg.Schedule)
		if err != nil {
			f.mu.Unlock()
			hist.Close()
			return &ConfigError{Key: "fixity.sweeps." + name + ".schedule", Err: err}
		}
		st.entryID = c.Schedule(sched, cron.FuncJob(func() {
			if _, err := f.start(name); err != nil {
				f.log.Info("fixity: scheduled sweep skipped", "sweep", name, "err", err)
			}
		}))
		st.sched = sched
	}
	f.mu.Unlock()
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hist = nil
	if err := hist.Close(); err != nil {
		return fmt.Errorf("sidecar: fixity: %w", err)
	}
	return nil
}

var errSweepRunning = errors.New("sweep is already running")

// start launches a sweep in the background and returns a channel closed
// when it ends.
func (f *FixityService) start(name string) (<-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.sweeps[name]
	if !ok {
		return nil, errorf(http.StatusNotFound, "no sweep named %q in fixity.sweeps", name)
	}
	if f.hist == nil || f.baseCtx == nil || f.baseCtx.Err() != nil {
		return nil, errorf(http.StatusServiceUnavailable, "fixity is not running")
	}
	if st.running {
		return st.done, errorf(http.StatusConflict, "sweep %q: %v", name, errSweepRunning)
	}
	st.running = true
	st.done = make(chan struct{})
	run := &api.SweepRun{Started: time.Now().UTC().Format(time.RFC3339), Classes: map[string]int{}}
	st.last = run
	hist, ctx, done := f.hist, f.baseCtx, st.done
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		start := time.Now()
		res, err := f.runSweep(ctx, st.cfg, hist)
		f.metrics.sweepDuration.WithLabelValues(st.cfg.Name).Observe(time.Since(start).Seconds())
		f.mu.Lock()
		run.Finished = time.Now().UTC().Format(time.RFC3339)
		for c, n := range res.ByClass {
			run.Classes[string(c)] = n
		}
		if res.Failed > 0 {
			run.Classes["failed"] = res.Failed
		}
		if err != nil {
			run.Error = err.Error()
		}
		run.Report = "/v1/fixity/report"
		st.running = false
		f.mu.Unlock()
		f.metrics.SweepRuns.Add(1)
		if err != nil {
			f.metrics.SweepFailures.Add(1)
		}
		for c, n := range res.ByClass {
			f.metrics.ObserveSweep(st.cfg.Name, string(c), int64(n))
		}
		if res.Failed > 0 {
			f.metrics.ObserveSweep(st.cfg.Name, "failed", int64(res.Failed))
		}
		close(done)
	}()
	return done, nil
}

func (f *FixityService) runSweep(ctx context.Context, sc SweepConfig, hist *fixity.History) (fixity.SweepResult, error) {
	urims, err := sweepURIMs(sc)
	if err != nil {
		return fixity.SweepResult{}, err
	}
	fcfg, err := fixityConfigFor(f.cfg, sc)
	if err != nil {
		return fixity.SweepResult{}, err
	}
	rp, err := fixity.NewReplayer(fixity.ReplayOptions{Config: fcfg, ExecPath: f.cfg.Browser, HardCap: sc.Timeout, Logger: f.log})
	if err != nil {
		return fixity.SweepResult{}, err
	}
	defer rp.Close()
	sw, err := fixity.NewSweeper(fixity.SweeperOptions{Replayer: rp, Config: fcfg, History: hist, Parallel: sc.Parallelism, Logger: f.log,
		Evidence: fixity.Retention(sc.Evidence), EvidenceMaxBytes: sc.EvidenceMaxBytes})
	if err != nil {
		return fixity.SweepResult{}, err
	}
	f.log.Info("fixity: sweep started", "sweep", sc.Name, "urims", len(urims))
	res, err := sw.Run(ctx, urims)
	f.log.Info("fixity: sweep finished", "sweep", sc.Name, "total", res.Total, "changed", res.Changed, "failed", res.Failed, "err", err)
	return res, err
}

// sweepURIMs returns the configured URI-Ms plus those of urim_file (one per
// line, # comments).
func sweepURIMs(sc SweepConfig) ([]string, error) {
	out := append([]string{}, sc.URIMs...)
	if sc.URIMFile == "" {
		return out, nil
	}
	fh, err := os.Open(sc.URIMFile)
	if err != nil {
		return nil, fmt.Errorf("sidecar: fixity: sweep %s: %w", sc.Name, err)
	}
	defer fh.Close()
	s := bufio.NewScanner(fh)
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("sidecar: fixity: sweep %s: %s: %w", sc.Name, sc.URIMFile, err)
	}
	return out, nil
}

// Sweeps lists the sweeps and their last runs.
func (f *FixityService) Sweeps() []api.SweepStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []api.SweepStatus
	for _, name := range f.order {
		st := f.sweeps[name]
		s := api.SweepStatus{Name: name, Schedule: st.cfg.Schedule, URIMs: len(st.cfg.URIMs), Running: st.running}
		if st.last != nil {
			cp := *st.last
			cp.Classes = map[string]int{}
			for k, v := range st.last.Classes {
				cp.Classes[k] = v
			}
			s.LastRun = &cp
		}
		if f.cron != nil && st.entryID != 0 {
			// cron computes Next in its own goroutine once it runs: until
			// then, from the schedule, so the answer never depends on that
			// hand-over (a status right after start-up or a reload).
			next := f.cron.Entry(st.entryID).Next
			if next.IsZero() && st.sched != nil {
				next = st.sched.Next(time.Now())
			}
			if !next.IsZero() {
				s.Next = next.UTC().Format(time.RFC3339)
			}
		}
		out = append(out, s)
	}
	return out
}

func (s *Server) addFixityRoutes() {
	s.add(&route{name: "fixity_sweeps", method: "GET", path: api.PathFixitySweeps, h: s.handleFixitySweeps})
	s.add(&route{name: "fixity_run", method: "POST", path: api.PathFixityRun, h: s.handleFixityRun})
	s.add(&route{name: "fixity_results", method: "GET", path: api.PathFixityResults, h: s.handleFixityReport})
	s.add(&route{name: "fixity_report", method: "GET", path: api.PathFixityReport, h: s.handleFixityReport})
}

func (s *Server) handleFixitySweeps(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	writeJSON(w, http.StatusOK, api.SweepList{Sweeps: s.fix().Sweeps()})
	return nil
}

func (s *Server) handleFixityRun(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.RunSweepRequest
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
		return err
	}
	if in.Sweep == "" {
		return errorf(http.StatusBadRequest, "sweep: missing")
	}
	done, err := s.fix().start(in.Sweep)
	if err != nil {
		return err
	}
	code := http.StatusAccepted
	if in.Wait {
		select {
		case <-done:
			code = http.StatusOK
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	for _, st := range s.fix().Sweeps() {
		if st.Name == in.Sweep {
			writeJSON(w, code, st)
			return nil
		}
	}
	return errorf(http.StatusNotFound, "no sweep named %q", in.Sweep)
}

// handleFixityReport serves the report over the whole history: HTML on
// /v1/fixity/report, JSON on /v1/fixity/results.
func (s *Server) handleFixityReport(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	s.fix().mu.Lock()
	hist := s.fix().hist
	s.fix().mu.Unlock()
	var recs []fixity.Record
	if hist != nil {
		recs = hist.Records()
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time.Before(recs[j].Time) })
	rep := fixity.BuildReport(recs, fixity.WithManifests(fixity.StoreManifests(s.fix().cfg.Dir)))
	if r.URL.Path == api.PathFixityResults {
		w.Header().Set("Content-Type", "application/json")
		return rep.WriteJSON(w)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	return rep.WriteHTML(w)
}
