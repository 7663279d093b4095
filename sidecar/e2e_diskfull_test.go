//go:build linux

package sidecar_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/dedupindex"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/internal/warctest"
)

// smallDisk mounts a real tmpfs of size bytes on dir (testenv.SmallDisk).
// crawl's TestDiskFullFailpoint covers the crawl's side with injected
// ENOSPC wherever no tmpfs can be mounted.
func smallDisk(t *testing.T, dir string, size int64) func(int64) {
	return testenv.SmallDisk(t, dir, size)
}

// TestE2ECrawlDiskFull crawls onto a small real tmpfs with `wayside
// crawl`: once with everything (WARCs, CDXJ, dedup and capture indexes) on
// it, where the reserve (--min-free) stops the crawl before the disk is
// full, and once with only the WARCs on it and no reserve, where a write
// meets ENOSPC. Each time the crawl exits 1 with an error naming the full
// disk (no panic); the WARC files read; no CDXJ line is torn and every
// line of a closed WARC's CDXJ is `wayside cdxj` of it; every dedup index
// entry points at a complete record. After the tmpfs is enlarged, the
// same command continues: the unfinished file is recovered, the rest of
// the site is captured, and the same holds for every file.
func TestE2ECrawlDiskFull(t *testing.T) {
	site := sitetest.NewLarge(300, 40000) // about 7 MiB of WARC
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	uris := srv.URLs()
	for _, tc := range []struct {
		name        string
		size        int64
		args        []string
		elsewhere   bool // the indexes are on another disk
		wantMessage string
	}{
		{"reserve", 20 << 20, []string{"--min-free", fmt.Sprint(8 << 20)}, false, "disk nearly full"},
		{"enospc", 3 << 20, []string{"--min-free", "0"}, true, "no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := filepath.Join(t.TempDir(), "disk")
			resize := smallDisk(t, disk, tc.size)
			warcs := filepath.Join(disk, "warcs")
			index := filepath.Join(warcs, crawl.IndexSubdir)
			args := append([]string{"crawl", "--warc-dir", warcs, "--delay", "0", "--quiet", "--max-file-size", fmt.Sprint(2 << 20)}, tc.args...)
			if tc.elsewhere {
				index = filepath.Join(t.TempDir(), "index")
				args = append(args, "--index", index, "--capture-index", filepath.Join(t.TempDir(), "captures"))
			}
			args = append(args, srv.URL+"/")

			code, stdout, stderr := runBinary(t, args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if code != 1 || !strings.HasPrefix(last, "wayside: ") || !strings.Contains(last, tc.wantMessage) || strings.Contains(stderr, "panic") {
				t.Fatalf("crawl onto a full disk: exit %d, stderr:\n%s\nwant exit 1 and a last line naming %q", code, stderr, tc.wantMessage)
			}
			if !strings.Contains(stderr, "free space and run the same command again") || !strings.Contains(stdout, "crawl summary") {
				t.Errorf("no summary or no hint:\n%s\n%s", stdout, stderr)
			}
			checkCrawlDisk(t, warcs, index, uris, false)

			resize(64 << 20)
			code, stdout, stderr = runBinary(t, args...)
			if code != 0 {
				t.Fatalf("re-run after freeing space: exit %d\n%s\n%s", code, stdout, stderr)
			}
			checkCrawlDisk(t, warcs, index, uris, true)
		})
	}
}

// checkCrawlDisk checks what the crawl left in warcs (see
// TestE2ECrawlDiskFull); complete also wants every URI captured and no
// .open file.
func checkCrawlDisk(t *testing.T, warcs, index string, uris []string, complete bool) {
	t.Helper()
	recs := warctest.ReadDirs(t, warcs) // every record of every file reads
	at := map[string]bool{}
	for _, r := range recs {
		at[fmt.Sprintf("%s@%d+%d", strings.TrimSuffix(filepath.Base(r.Path), ".open"), r.Record.Offset, r.Record.Length)] = true
	}
	sides, _ := filepath.Glob(filepath.Join(warcs, "*.cdxj"))
	for _, p := range sides {
		for _, l := range cdxjtest.CheckWhole(t, p) {
			if k := fmt.Sprintf("%s@%d+%d", l.Filename, l.Offset, l.Length); !at[k] {
				t.Errorf("%s: line for %s points at no complete record (%s)", filepath.Base(p), l.URL, k)
			}
		}
	}
	closed, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz"))
	for _, w := range closed {
		side := cdxj.SideFileName(filepath.Base(w))
		if got, _ := os.ReadFile(filepath.Join(warcs, side)); string(got) != cdxjtest.IndexOf(t, w) {
			t.Errorf("%s is not `wayside cdxj` of its WARC", side)
		}
	}
	ix, err := dipebble.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	warctest.CheckIndexed(t, recs, ix, dedupindex.DefaultScope, uris)
	if !complete {
		return
	}
	if open, _ := filepath.Glob(filepath.Join(warcs, "*.open")); len(open) > 0 {
		t.Errorf("files left open: %v", open)
	}
	captured := map[string]bool{}
	for _, r := range recs {
		if r.Record.Type == "response" || r.Record.Type == "revisit" {
			captured[r.Record.TargetURI] = true
		}
	}
	for _, u := range uris {
		if !captured[u] {
			t.Errorf("%s was never captured", u)
		}
	}
}

// TestE2EIngestDiskFull runs `wayside serve` with its data directory on a
// small real tmpfs while it ingests a crawler's WARCs (on another disk).
// When the free space falls below ingest.min_free_bytes, and when the
// disk is full outright with no reserve (its CDXJ and checkpoint writes
// meet ENOSPC), ingest pauses: the daemon keeps serving, `status` and
// /metrics say why, nothing it wrote is torn, and once space is freed it
// ingests what arrived meanwhile, by itself.
func TestE2EIngestDiskFull(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reserve string
		want    string
	}{
		{"reserve", fmt.Sprint(4 << 20), "less than the 4.00 MiB kept free"},
		{"enospc", "-1", "no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			disk := filepath.Join(dir, "data")
			smallDisk(t, disk, 16<<20)
			warcs := filepath.Join(dir, "warcs")
			os.MkdirAll(warcs, 0o755)
			// The daemon's data directory is on the small disk; its dedup
			// and capture indexes elsewhere (pebble stops the process on a
			// full disk, by design: the crawl test covers that case).
			cfg := fmt.Sprintf(`
data_dir: %s
index:
  path: DIR/index
access:
  index: DIR/captures
ingest:
  dirs: [DIR/warcs]
  poll_interval: 20ms
  min_free_bytes: %s
`, disk, tc.reserve)
			d := startDaemon(t, dir, cfg)
			ctx := context.Background()
			first, _ := testWARC(200, 1)
			os.WriteFile(filepath.Join(warcs, "a.warc.gz"), first, 0o644)
			waitFor(t, "the first WARC ingested", func() bool {
				st, err := d.client.Ingest(ctx)
				return err == nil && st.Records == 200
			})

			// Fill the disk: below the reserve, or entirely.
			ballast := filepath.Join(disk, "ballast")
			fill := int64(-1)
			if tc.reserve != "-1" {
				free := freeBytes(t, disk)
				fill = free - (2 << 20)
			}
			writeBallast(t, ballast, fill)
			second, _ := testWARC(300, 2)
			os.WriteFile(filepath.Join(warcs, "b.warc.gz"), second, 0o644)
			var st api.Status
			waitFor(t, "ingest paused", func() bool {
				st = api.Status{}
				return d.client.Status(ctx, &st) == nil && st.Ingest.Paused != ""
			})
			if !strings.Contains(st.Ingest.Paused, tc.want) || !strings.Contains(st.Ingest.Paused, "resumes once space is freed") ||
				len(st.Problems) == 0 || !strings.Contains(st.Problems[0], "ingest paused") {
				t.Errorf("status while the disk is full: paused %q, problems %q", st.Ingest.Paused, st.Problems)
			}
			if st.Ingest.Records >= 500 {
				t.Errorf("ingested everything on a full disk: %+v", st.Ingest)
			}
			m, _ := d.client.Metrics(ctx)
			if !strings.Contains(m, "wayside_ingest_paused 1\n") {
				t.Errorf("metrics do not show the pause")
			}
			if err := d.client.Healthz(ctx); err != nil {
				t.Fatalf("daemon stopped serving on a full disk: %v", err)
			}
			checkCDXJDir(t, filepath.Join(disk, "cdxj"))

			// Free the space: ingest goes on by itself.
			if err := os.Remove(ballast); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "ingest resumed and both files done", func() bool {
				st = api.Status{} // omitempty fields absent from the answer must not keep old values
				if err := d.client.Status(ctx, &st); err != nil || st.Ingest.Paused != "" || st.Ingest.Records != 500 || len(st.Ingest.Files) != 2 {
					return false
				}
				return st.Ingest.Files[0].Done && st.Ingest.Files[1].Done
			})
			if len(st.Problems) != 0 {
				t.Errorf("problems after space was freed: %q", st.Problems)
			}
			if err := d.term(); err != nil {
				t.Fatalf("SIGTERM: %v\n%s", err, d.log())
			}
			checkCDXJDir(t, filepath.Join(disk, "cdxj"))
			for _, name := range []string{"a.warc.gz", "b.warc.gz"} {
				got, _ := os.ReadFile(filepath.Join(disk, "cdxj", name+".cdxj"))
				if string(got) != cdxjtest.IndexOf(t, filepath.Join(warcs, name)) {
					t.Errorf("%s.cdxj is not `wayside cdxj` of it", name)
				}
			}
		})
	}
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// writeBallast writes n bytes to path, or until the disk is full when n
// is negative.
func writeBallast(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n < 0 || n > 0 {
		k := int64(len(buf))
		if n > 0 {
			k = min(k, n)
			n -= k
		}
		if _, err := f.Write(buf[:k]); err != nil {
			if n < 0 && errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// checkCDXJDir checks that every CDXJ file in dir is made of whole lines.
func checkCDXJDir(t *testing.T, dir string) {
	t.Helper()
	sides, _ := filepath.Glob(filepath.Join(dir, "*.cdxj"))
	for _, p := range sides {
		cdxjtest.CheckWhole(t, p)
	}
}
