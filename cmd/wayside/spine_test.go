package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
	"github.com/wayside-archive/wayside/mementomap"
)

// stuckMap is a live map whose consumer blocks on every capture until the
// Fanout gives up on it at close (its context ends). When released it
// checks that the crawl's WARC path did not wait for it: every WARC file
// is closed and has its CDXJ file.
type stuckMap struct {
	*mementomap.Live
	t       *testing.T
	warcDir string

	mu       sync.Mutex
	released bool
}

func (s *stuckMap) OnCapture(ctx context.Context, c wayside.Capture) error {
	<-ctx.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		s.released = true
		if open, _ := filepath.Glob(filepath.Join(s.warcDir, "*.open")); len(open) > 0 {
			s.t.Errorf("the blocked consumer was released before the crawl's WARC files were closed: %v", open)
		}
		warcs, _ := filepath.Glob(filepath.Join(s.warcDir, "*.warc.gz"))
		sides, _ := filepath.Glob(filepath.Join(s.warcDir, "*.cdxj"))
		if len(warcs) == 0 || len(sides) != len(warcs) {
			s.t.Errorf("while a consumer was blocked: %d WARC files, %d CDXJ files", len(warcs), len(sides))
		}
	}
	return ctx.Err()
}

// TestCrawlConsumersBlockFailAndCatchUp crawls a local site with three
// consumers besides the CDXJ files: the live map (--live-map), one that
// fails on every capture and one that blocks until the crawl closes it. The
// WARC files, CDXJ files and dedup index come out complete and correct, the
// healthy map knows every URI, the crawl reports both bad consumers and
// exits 1, and the blocked map catches up from the CDXJ files when reopened.
func TestCrawlConsumersBlockFailAndCatchUp(t *testing.T) {
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	stuckPath := filepath.Join(dir, "stuck.ukvs")
	stuckLive, err := mementomap.OpenLive(stuckPath, mementomap.LiveOptions{CDXJDirs: []string{warcs}})
	if err != nil {
		t.Fatal(err)
	}
	stuck := &stuckMap{Live: stuckLive, t: t, warcDir: warcs}
	var failed sync.Mutex
	failures := 0
	failing := wayside.SubscriberFunc(func(context.Context, wayside.Capture) error {
		failed.Lock()
		failures++
		failed.Unlock()
		return errors.New("disk on fire")
	})
	var o, e bytes.Buffer
	ev := &env{stdout: &o, stderr: &e, getenv: func(string) string { return "" },
		consumers: consumers.Config{QueueSize: 2, DrainTimeout: 3 * time.Second,
			Extra: []consumers.Named{{Name: "failing", Sub: failing}, {Name: "stuck", Sub: stuck}}}}
	live := filepath.Join(dir, "live.ukvs")
	err = run(context.Background(), []string{"crawl", "--warc-dir", warcs, "--live-map", live, "--robots", "--delay", "0",
		"--parallel", "2", "--quiet", srv.URL + "/"}, ev)
	if code := report(&bytes.Buffer{}, err, false); code != exitFailure {
		t.Fatalf("crawl with failing consumers: exit %d (%v), want 1\n%s\n%s", code, err, o.String(), e.String())
	}
	for _, want := range []string{"consumer failing", "consumer stuck"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), consumers.NameLiveMap) {
		t.Errorf("the healthy live map is reported as failing: %v", err)
	}
	out := o.String()
	for _, want := range []string{"pages fetched        18", "consumer live-map", "consumer failing", "FAILED (disk on fire)", "consumer stuck"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if failures == 0 {
		t.Error("the failing consumer was never called")
	}
	if !stuck.released {
		t.Error("the blocking consumer never blocked")
	}
	t.Logf("summary:\n%s", out)

	// The WARC path was not held up: the CDXJ files beside the WARCs are
	// `wayside cdxj` of them (merged with `wayside cdxj --merge`), sorted
	// and searchable, and the index passes its check.
	ws, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz"))
	sides, _ := filepath.Glob(filepath.Join(warcs, "*.cdxj"))
	all, merged := filepath.Join(dir, "all.cdxj"), filepath.Join(dir, "merged.cdxj")
	if _, stderr, err := runCLI(context.Background(), append([]string{"cdxj", "-q", "-o", all}, ws...)...); err != nil {
		t.Fatalf("wayside cdxj: %v\n%s", err, stderr)
	}
	if _, stderr, err := runCLI(context.Background(), append([]string{"cdxj", "--merge", "-o", merged}, sides...)...); err != nil {
		t.Fatalf("wayside cdxj --merge of the crawl's CDXJ files: %v\n%s", err, stderr)
	}
	a, _ := os.ReadFile(all)
	m, _ := os.ReadFile(merged)
	if len(a) == 0 || !bytes.Equal(a, m) {
		t.Errorf("the crawl's CDXJ files differ from `wayside cdxj` of its WARCs:\n%s\n---\n%s", m, a)
	}
	lines := cdxjtest.CheckSorted(t, sides)
	if out, stderr, err := runCLI(context.Background(), "index", "stats", "--warc-dir", warcs, "--check"); err != nil || !strings.Contains(out, "check:      ok") {
		t.Errorf("index stats --check: %v\n%s%s", err, out, stderr)
	}

	// The healthy map knows every URI; the stuck one catches up when
	// reopened, from the CDXJ files.
	stuckLive.Close()
	for _, path := range []string{live, stuckPath} {
		l, err := mementomap.OpenLive(path, mementomap.LiveOptions{CDXJDirs: []string{warcs}})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, s := range lines {
			ln, err := cdxj.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			if mt, err := l.Lookup(ln.URL); err != nil || !mt.Present {
				t.Errorf("%s: %s absent (%v)", filepath.Base(path), ln.URL, err)
			}
		}
		l.Close()
	}
}
