package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/migrate"
	"github.com/wayside-archive/wayside/warcio"
)

// migrateJobs runs format migrations (package migrate) on the collection,
// one at a time, in the background of Run; it keeps the last jobs'
// statuses.
type migrateJobs struct {
	mu   sync.Mutex
	ctx  context.Context // Run's; nil before Run and after it ends
	wg   sync.WaitGroup
	jobs []*api.MigrateJob // newest last
	busy bool
	seq  int
}

// keptJobs is how many finished jobs' statuses are kept.
const keptJobs = 20

// bind lets jobs start, under ctx (Run's context).
func (mj *migrateJobs) bind(ctx context.Context) {
	mj.mu.Lock()
	mj.ctx = ctx
	mj.mu.Unlock()
}

// stop refuses new jobs and waits for the running one (its context is
// cancelled by Run first).
func (mj *migrateJobs) stop() {
	mj.mu.Lock()
	mj.ctx = nil
	mj.mu.Unlock()
	mj.wg.Wait()
}

func (s *Server) addMigrateRoutes() {
	s.add(&route{name: "migrate_risk", method: "GET", path: api.PathMigrateRisk, h: s.handleMigrateRisk})
	s.add(&route{name: "migrate_start", method: "POST", path: api.PathMigrate, maxBody: 64 << 10, h: s.handleMigrateStart})
	s.add(&route{name: "migrate_jobs", method: "GET", path: api.PathMigrate, h: s.handleMigrateJobs})
}

func (s *Server) handleMigrateRisk(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	threshold := 0.5
	if v := r.URL.Query().Get("threshold"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return errorf(http.StatusBadRequest, "threshold %q: want a number from 0 to 1", v)
		}
		threshold = f
	}
	m := migrate.DefaultRiskModel()
	out := api.MigrateRisk{Threshold: threshold, Questions: []api.MigrateQuestion{}, Formats: []api.MigrateRiskFormat{}}
	for _, q := range m.Questions {
		out.Questions = append(out.Questions, api.MigrateQuestion{ID: q.ID, Text: q.Text, Weight: q.Weight})
	}
	for puid, f := range m.Formats {
		risk, _ := m.Risk(puid)
		out.Formats = append(out.Formats, api.MigrateRiskFormat{PUID: puid, Name: f.Name, Risk: risk, AtRisk: risk >= threshold})
	}
	sort.Slice(out.Formats, func(i, j int) bool {
		a, b := out.Formats[i], out.Formats[j]
		if a.Risk != b.Risk {
			return a.Risk > b.Risk
		}
		return a.PUID < b.PUID
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleMigrateJobs(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	id := r.URL.Query().Get("id")
	mj := &s.mig
	mj.mu.Lock()
	out := api.MigrateJobs{Jobs: []api.MigrateJob{}}
	for i := len(mj.jobs) - 1; i >= 0; i-- {
		if id == "" || mj.jobs[i].ID == id {
			out.Jobs = append(out.Jobs, copyJob(mj.jobs[i]))
		}
	}
	mj.mu.Unlock()
	if id != "" && len(out.Jobs) == 0 {
		return errorf(http.StatusNotFound, "no migration job %q", id)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func copyJob(j *api.MigrateJob) api.MigrateJob {
	c := *j
	c.PUIDs = slices.Clone(j.PUIDs)
	c.Outputs = slices.Clone(j.Outputs)
	c.Problems = slices.Clone(j.Problems)
	if j.Counts != nil {
		c.Counts = map[string]int{}
		for k, v := range j.Counts {
			c.Counts[k] = v
		}
	}
	return c
}

func (s *Server) handleMigrateStart(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.MigrateRequest
	if err := decodeJSON(w, r, 64<<10, &in); err != nil {
		return err
	}
	st := s.cons.CharStore
	if st == nil {
		return errorf(http.StatusNotFound, "characterization is not enabled (characterize.enabled): migration locates formats through its store")
	}
	if in.Workflow == "" {
		in.Workflow = migrate.Conversion
	}
	if in.Workflow != migrate.Conversion && in.Workflow != migrate.Replace {
		return errorf(http.StatusBadRequest, "workflow %q: want conversion or replace", in.Workflow)
	}
	threshold := 0.5
	if in.RiskThreshold != nil {
		threshold = *in.RiskThreshold
		if threshold < 0 || threshold > 1 {
			return errorf(http.StatusBadRequest, "risk_threshold %v: want a number from 0 to 1", threshold)
		}
	}
	puids := migrate.SelectPUIDs(in.PUIDs, migrate.DefaultRiskModel(), threshold)
	if len(puids) == 0 {
		return errorf(http.StatusBadRequest, "no format selected (none has a risk of %v or more)", threshold)
	}
	names := in.Files
	if len(names) == 0 {
		for _, f := range st.Files() {
			names = append(names, f.File)
		}
	}
	// Complete files of the collection only (not a crawler's ".open" file).
	var paths []string
	for _, n := range names {
		if err := warcio.CheckFileName(n); err != nil {
			return errorf(http.StatusBadRequest, "files: %v", err)
		}
		p := ""
		for _, d := range s.cfg.Ingest.Dirs {
			if fi, err := os.Stat(filepath.Join(d, n)); err == nil && fi.Mode().IsRegular() {
				p = filepath.Join(d, n)
				break
			}
		}
		if p == "" {
			if len(in.Files) > 0 {
				return errorf(http.StatusBadRequest, "files: %s is not a complete WARC file of ingest.dirs", n)
			}
			continue // in the store, gone from the directories
		}
		paths = append(paths, p)
	}
	mj := &s.mig
	mj.mu.Lock()
	defer mj.mu.Unlock()
	if mj.ctx == nil || mj.ctx.Err() != nil {
		return errorf(http.StatusServiceUnavailable, "the daemon is not running")
	}
	if mj.busy {
		return errorf(http.StatusConflict, "a migration job is running: GET %s", api.PathMigrate)
	}
	mj.seq++
	now := time.Now().UTC()
	id := now.Format("20060102T150405Z") + "-" + strconv.Itoa(mj.seq)
	job := &api.MigrateJob{ID: id, State: api.MigrateRunning, Started: now.Format(time.RFC3339), Workflow: in.Workflow,
		PUIDs: puids, Files: len(paths), OutDir: filepath.Join(s.cfg.DataDir, "migrate", id)}
	mj.jobs = append(mj.jobs, job)
	if len(mj.jobs) > keptJobs {
		mj.jobs = slices.Delete(mj.jobs, 0, len(mj.jobs)-keptJobs)
	}
	mj.busy = true
	ctx := mj.ctx
	mj.wg.Add(1)
	go func() {
		defer mj.wg.Done()
		err := s.runMigrateJob(ctx, job, st, paths)
		mj.mu.Lock()
		defer mj.mu.Unlock()
		job.Finished = time.Now().UTC().Format(time.RFC3339)
		switch {
		case err != nil:
			job.State, job.Error = api.MigrateFailed, err.Error()
		case len(job.Problems) > 0:
			job.State = api.MigrateFailed
		default:
			job.State = api.MigrateDone
		}
		mj.busy = false
		s.log.Info("migrate: job finished", "id", job.ID, "state", job.State, "counts", job.Counts, "err", err)
	}()
	writeJSON(w, http.StatusAccepted, copyJob(job))
	return nil
}

// runMigrateJob locates, converts and writes; it fills job (under s.mig.mu)
// as it learns.
func (s *Server) runMigrateJob(ctx context.Context, job *api.MigrateJob, st *characterize.Store, paths []string) error {
	bases := make([]string, len(paths))
	for i, p := range paths {
		bases[i] = filepath.Base(p)
	}
	targets, _ := migrate.Locate(st, bases, job.PUIDs)
	set := func(f func()) {
		s.mig.mu.Lock()
		f()
		s.mig.mu.Unlock()
	}
	set(func() { job.Located = len(targets) })
	if len(targets) == 0 {
		return nil
	}
	if err := os.MkdirAll(job.OutDir, 0o755); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	work, err := migrate.PrepareWork(job.OutDir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	sb, err := migrate.NewSandbox(ctx, migrate.Limits{}, work, false)
	if err != nil {
		return err
	}
	eng, err := characterize.NewEngine()
	if err != nil {
		return err
	}
	cc := s.cfg.Characterize
	lim := characterize.Limits{MaxDepth: cc.MaxDepth, MaxObject: cc.MaxObjectBytes, MaxRatio: cc.MaxRatio}
	m, err := migrate.New(migrate.Options{Store: st, Identifer: characterize.NewIdentifier(eng, lim), Pathways: migrate.DefaultPathways(),
		Sandbox: sb, Dirs: s.cfg.Ingest.Dirs, Logger: s.log, MaxDepth: cc.MaxDepth})
	if err != nil {
		return err
	}
	res, err := m.Run(ctx, migrate.RunOptions{Files: paths, Targets: targets, Workflow: job.Workflow, OutDir: job.OutDir, WorkDir: work})
	set(func() {
		job.Counts = res.Counts()
		job.Outputs = append(res.Written, res.Kept...)
		for _, oc := range res.Outcomes {
			if oc.Status != migrate.StatusMigrated && len(job.Problems) < 100 {
				job.Problems = append(job.Problems, fmt.Sprintf("%s offset %d (%s, %s): %s: %s", oc.File, oc.Offset, oc.URI, oc.PUID, oc.Status, oc.Reason))
			}
		}
	})
	return err
}
