package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcfile"
)

// diskBudget is a writer failpoint that lets budget bytes through at one
// point, then writes a short piece and fails with ENOSPC, as a file
// system filling up does.
type diskBudget struct {
	point string
	mu    sync.Mutex
	left  int
}

func (d *diskBudget) hook(point string, n int) (int, error) {
	if point != d.point {
		return n, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if n <= d.left {
		d.left -= n
		return n, nil
	}
	k := d.left
	d.left = 0
	return k, syscall.ENOSPC
}

// TestDiskFullFailpoint fills the disk under a crawl with the writer's
// failpoint (the fault injection used where no small file system can be
// mounted; the e2e test TestE2ECrawlDiskFull uses a real tmpfs): once in
// the middle of a WARC record, once in the middle of a CDXJ line. The
// crawl stops with an error wrapping ENOSPC; every WARC file reads; no
// CDXJ file holds a torn line; every closed WARC's CDXJ is exactly
// `wayside cdxj` of it; every index entry points at a complete record.
// A re-run with room continues: the unfinished file is recovered, the
// rest of the site is fetched, and the same invariants hold.
func TestDiskFullFailpoint(t *testing.T) {
	site := sitetest.NewLarge(120, 20000)
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	uris := srv.URLs()
	for _, tc := range []struct {
		point  string
		budget int
	}{
		{"warc-write", 700_000},
		{"cdxj-append", 30_000},
	} {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			runErr, closeErr := crawlWithFailpoint(t, dir, srv.URL, (&diskBudget{point: tc.point, left: tc.budget}).hook)
			if !errors.Is(runErr, syscall.ENOSPC) || !fsutil.IsDiskFull(runErr) || !strings.HasPrefix(runErr.Error(), "crawl: stopped: ") {
				t.Fatalf("crawl on a full disk: %v, want it stopped with ENOSPC", runErr)
			}
			if tc.point == "cdxj-append" && !errors.Is(closeErr, syscall.ENOSPC) {
				t.Errorf("close after a failed CDXJ append: %v, want the failure again (the file stays .open)", closeErr)
			}
			checkDiskState(t, dir, uris, false)

			runErr, closeErr = crawlWithFailpoint(t, dir, srv.URL, nil)
			if runErr != nil || closeErr != nil {
				t.Fatalf("re-run with room: %v, %v", runErr, closeErr)
			}
			checkDiskState(t, dir, uris, true)
		})
	}
}

// crawlWithFailpoint crawls the site into dir as `wayside crawl` does
// (several WARC files: 512 KiB each), the writer's failpoints armed with fp
// (failpoint.Enable) until it returns.
func crawlWithFailpoint(t *testing.T, dir, base string, fp func(string, int) (int, error)) (runErr, closeErr error) {
	t.Helper()
	seed, _ := ParseSeed(base + "/")
	s, err := Open(Config{WARCDir: dir, Writer: warcfile.WriterOptions{MaxFileSize: 512 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	if fp != nil {
		// The writer's failpoints, under the names this test has always
		// used for them.
		defer failpoint.Enable(warcfile.PointWrite, func(n int) (int, error) { return fp("warc-write", n) })()
		defer failpoint.Enable("cdxj.side-append", func(n int) (int, error) { return fp("cdxj-append", n) })()
	}
	c, err := NewCrawler(CrawlConfig{Seeds: []*url.URL{seed}, Recorder: s.Recorder, MaxDepth: -1, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	runErr = c.Run(context.Background())
	return runErr, s.Close()
}

// checkDiskState checks what a crawl left in dir: every WARC file reads,
// every CDXJ line is whole, the CDXJ of every closed WARC is `wayside
// cdxj` of it, and every index entry points at a complete record; with
// complete, every URI of the site was captured.
func checkDiskState(t *testing.T, dir string, uris []string, complete bool) {
	t.Helper()
	sides, _ := filepath.Glob(filepath.Join(dir, "*.cdxj"))
	for _, p := range sides {
		cdxjtest.CheckWhole(t, p)
	}
	warcs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(warcs) == 0 {
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			fi, _ := e.Info()
			names = append(names, fmt.Sprintf("%s %d", e.Name(), fi.Size()))
		}
		t.Fatalf("no closed WARC file in %v", names)
	}
	for _, w := range warcs {
		side := filepath.Join(dir, cdxj.SideFileName(filepath.Base(w)))
		if got, want := readFile(t, side), indexOf(t, w); got != want {
			t.Errorf("%s differs from `wayside cdxj` of its WARC:\n got %d bytes\nwant %d bytes", filepath.Base(side), len(got), len(want))
		}
	}
	ix, err := dipebble.Open(filepath.Join(dir, IndexSubdir))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	checkReferences(t, dir, ix, uris)
	if !complete {
		return
	}
	captured := map[string]bool{}
	for _, r := range readDir(t, dir) {
		if r.rec.Type == "response" || r.rec.Type == "revisit" {
			captured[r.rec.TargetURI] = true
		}
	}
	for _, u := range uris {
		if !captured[u] {
			t.Errorf("%s was never captured", u)
		}
	}
}
