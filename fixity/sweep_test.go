package fixity

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/fixity/testarchive"
)

func newSweeper(t *testing.T, e *testEnv, parallel int) (*Sweeper, *History) {
	t.Helper()
	h, err := OpenHistory(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	s, err := NewSweeper(SweeperOptions{Replayer: e.rep, Config: e.cfg, History: h, Parallel: parallel, Retries: 1, RetryDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

func lastRecord(t *testing.T, h *History, urim string) Record {
	t.Helper()
	recs := h.Records()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == KindReplay && recs[i].URIM == urim {
			return recs[i]
		}
	}
	t.Fatalf("no replay record for %s", urim)
	return Record{}
}

// TestSweepJSRandomSettles sweeps a page that picks one of two images at
// random: its roots stay within two states, the second state is reported
// as a change (class Set) only the first time it appears, and the memento
// then settles into its accepted-state set.
func TestSweepJSRandomSettles(t *testing.T) {
	e := newEnv(t)
	s, h := newSweeper(t, e, 1)
	u := e.arch.URIM(testarchive.SiteTS, testarchive.PageRandom)
	canon, _ := e.cfg.Canonical(u)
	ctx := context.Background()
	changes := 0
	for i := range 8 {
		res, err := s.Run(ctx, []string{u})
		if err != nil {
			t.Fatal(err)
		}
		rec := lastRecord(t, h, canon)
		if rec.Transient {
			t.Fatalf("sweep %d transient: %v", i, rec.Errors)
		}
		if rec.Class.IsChange() {
			changes++
			if rec.Class != ClassSet {
				t.Fatalf("sweep %d: a random image choice classified %s, want set", i, rec.Class)
			}
			for _, rc := range rec.Changed {
				if rc.Key != testarchive.SiteHost+"/r/a.png" && rc.Key != testarchive.SiteHost+"/r/b.png" {
					t.Fatalf("sweep %d: change blamed on %s", i, rc.Key)
				}
			}
		}
		if res.Total != 1 {
			t.Fatalf("sweep result %+v", res)
		}
	}
	st := h.State(canon)
	if len(st.Seen) > 2 {
		t.Fatalf("%d distinct roots for a page with two states", len(st.Seen))
	}
	if changes > 1 {
		t.Fatalf("%d changes reported; a two-state page must settle after the first sighting of its second state", changes)
	}
	for root, n := range st.Seen {
		if n >= 2 && !containsHash(st.Accepted, root) {
			t.Fatalf("root %s seen %d times but not accepted", root, n)
		}
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestSweepTransientNotCompared checks that a 5xx is retried, recorded as
// transient, and that the next good replay is compared with the last
// comparable one (no change), not with the transient one.
func TestSweepTransientNotCompared(t *testing.T) {
	e := newEnv(t)
	s, h := newSweeper(t, e, 2)
	page := e.arch.URIM(testarchive.SiteTS, testarchive.PageDeterministic)
	leak := e.arch.URIM(testarchive.SiteTS, testarchive.PageLeak)
	canon, _ := e.cfg.Canonical(page)
	ctx := context.Background()
	if _, err := s.Run(ctx, []string{page, leak}); err != nil {
		t.Fatal(err)
	}
	e.arch.Inject(testarchive.Logo, testarchive.Fault{Status: 503})
	before := e.arch.Requests()
	res, err := s.Run(ctx, []string{page})
	if err != nil {
		t.Fatal(err)
	}
	rec := lastRecord(t, h, canon)
	if !rec.Transient || rec.Class != ClassTransient || rec.Attempts != 2 {
		t.Fatalf("503 replay: %+v, want transient after 2 attempts", rec)
	}
	if res.Changed != 0 || e.arch.Requests()-before < 10 {
		t.Fatalf("sweep result %+v (archive requests %d)", res, e.arch.Requests()-before)
	}
	e.arch.ClearFaults()
	if _, err := s.Run(ctx, []string{page}); err != nil {
		t.Fatal(err)
	}
	if rec := lastRecord(t, h, canon); rec.Class != ClassNone {
		t.Fatalf("replay after the transient error: class %s, want none; %+v", rec.Class, rec.Changed)
	}
	// A changed memento is reported against the last comparable replay.
	e.arch.Inject(testarchive.Logo, testarchive.Fault{Status: 404})
	if _, err := s.Run(ctx, []string{page}); err != nil {
		t.Fatal(err)
	}
	if rec := lastRecord(t, h, canon); rec.Class != ClassStatus || len(rec.Changed) != 1 || rec.Changed[0].Key != testarchive.Logo {
		t.Fatalf("status flip: %+v", rec)
	}
	rep := BuildReport(h.Records())
	if len(rep.Archives) != 1 || len(rep.Sweeps) != 4 || rep.Totals["changed"] != 1 || rep.Totals["transient"] != 1 {
		t.Fatalf("report: archives %+v sweeps %d totals %v", rep.Archives, len(rep.Sweeps), rep.Totals)
	}
}

// TestSweepSurvivesBrowserCrash kills the shared browser between sweeps;
// the next sweep restarts it and records comparable replays.
func TestSweepSurvivesBrowserCrash(t *testing.T) {
	e := newEnv(t)
	s, h := newSweeper(t, e, 2)
	page := e.arch.URIM(testarchive.SiteTS, testarchive.PageDeterministic)
	canon, _ := e.cfg.Canonical(page)
	ctx := context.Background()
	if _, err := s.Run(ctx, []string{page}); err != nil {
		t.Fatal(err)
	}
	e.rep.mu.Lock()
	proc := chromedp.FromContext(e.rep.bctx).Browser.Process()
	e.rep.mu.Unlock()
	if proc == nil {
		t.Fatal("no browser process to kill")
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	proc.Wait()
	if _, err := s.Run(ctx, []string{page}); err != nil {
		t.Fatal(err)
	}
	rec := lastRecord(t, h, canon)
	if rec.Transient || rec.Class != ClassNone {
		t.Fatalf("after a browser crash: %+v", rec)
	}
}

// TestSweepRecordsRefusedTargets checks that a URI-M outside the archive
// list is recorded as refused (never replayed, never a change).
func TestSweepRecordsRefusedTargets(t *testing.T) {
	cfg, err := NewConfig(Archive{Hosts: []string{"archive.example"}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReplayer(ReplayOptions{Config: cfg, ExecPath: "/nonexistent/chromium"})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	h, err := OpenHistory(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := NewSweeper(SweeperOptions{Replayer: rep, Config: cfg, History: h})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), []string{"file:///etc/passwd", "http://10.1.2.3/web/20200101000000/http://x/"})
	if err != nil {
		t.Fatal(err)
	}
	recs := h.Records()
	if res.Failed != 2 || res.Changed != 0 || len(recs) != 2 || recs[0].Class != ClassRefused || recs[1].Class != ClassRefused {
		t.Fatalf("result %+v records %+v", res, recs)
	}
}

// TestSweepEvidenceBudget sweeps with every replay kept as evidence and a
// budget of about two and a half replays' evidence: after every sweep the
// store holds at most the budget (on disk too: nothing staged is left), the
// newest replay's evidence is there and intact, older evidence was evicted
// with a record, and the store's invariants hold. Without retention nothing
// is kept.
func TestSweepEvidenceBudget(t *testing.T) {
	e := newEnv(t)
	page := e.arch.URIM(testarchive.SiteTS, testarchive.PageDeterministic)
	dir := t.TempDir()
	h, err := OpenHistory(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sweeper := func(ret Retention, budget int64) *Sweeper {
		s, err := NewSweeper(SweeperOptions{Replayer: e.rep, Config: e.cfg, History: h, Retries: 1, RetryDelay: 10 * time.Millisecond, Evidence: ret, EvidenceMaxBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	if _, err := sweeper(RetainNone, 0).Run(ctx, []string{page}); err != nil {
		t.Fatal(err)
	}
	if h.EvidenceBytes() != 0 || dirBytes(t, filepath.Join(dir, evidenceRoot)) != 0 {
		t.Fatalf("retention none kept %d bytes", h.EvidenceBytes())
	}
	if _, err := sweeper(RetainAll, 1<<40).Run(ctx, []string{page}); err != nil {
		t.Fatal(err)
	}
	one := h.EvidenceBytes()
	if one == 0 {
		t.Fatal("keep-all kept nothing")
	}
	budget := one*5/2 + one/10
	s := sweeper(RetainAll, budget)
	canon, _ := e.cfg.Canonical(page)
	for i := range 4 {
		if _, err := s.Run(ctx, []string{page}); err != nil {
			t.Fatal(err)
		}
		onDisk := dirBytes(t, filepath.Join(dir, evidenceRoot))
		if h.EvidenceBytes() > budget || onDisk != h.EvidenceBytes() {
			t.Fatalf("sweep %d: %d bytes of evidence accounted, %d on disk, budget %d", i, h.EvidenceBytes(), onDisk, budget)
		}
		last := lastRecord(t, h, canon)
		if last.Evidence == "" {
			t.Fatalf("sweep %d: the newest replay kept no evidence", i)
		}
		m, err := h.LoadManifest(last.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		checkEvidence(t, m, filepath.Join(dir, last.Manifest))
		if err := h.Check(); err != nil {
			t.Fatalf("sweep %d: %v", i, err)
		}
	}
	evicted := 0
	for _, r := range h.Records() {
		if r.Kind == KindEvict {
			evicted++
		}
	}
	if evicted != 3 {
		t.Fatalf("%d evictions; 5 sets kept in turn under a budget of 2.5 sets should evict 3", evicted)
	}
}
