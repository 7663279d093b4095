package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
)

const backupTestConfig = `
data_dir: DIR/data
ingest:
  dirs: [DIR/warcs]
  poll_interval: 20ms
characterize:
  enabled: true
`

// cdxLines returns the capture index's answer for every capture of host
// (offset, URL, file name), sorted.
func cdxLines(t *testing.T, sock, host string) []string {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("http://wayside/default/cdx?url=" + host + "&matchType=host&output=text&fl=filename,offset,url,digest")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cdx: %s %s", resp.Status, b)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// TestE2EBackupWhileIngesting: `wayside backup` against the real daemon
// while it ingests (a WARC growing in chunks appended from another
// goroutine, another complete one), with the capture index, the live
// MementoMap and the characterization store on. The snapshot is restored
// into a fresh data directory and a daemon started on it (watching the
// WARC files as far as the snapshot's checkpoint reached): its CDX
// answer is exactly the records the snapshot's ingest checkpoint covers —
// every record of each file before its checkpointed offset, nothing
// after, as the live daemon answered for them — the snapshot cut the
// ingest mid-way (the live daemon went on past it), `index stats --check`
// and `index verify` pass on the restored dedup index, every live-map
// lookup of a snapshot capture is found, and the restored daemon reports
// no problem.
func TestE2EBackupWhileIngesting(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, backupTestConfig)
	warcs := filepath.Join(dir, "warcs")
	whole, wholeAt := testWARC(300, 7)
	writeFile(t, filepath.Join(warcs, "whole.warc.gz"), whole)
	growing, growAt := testWARC(1500, 8)
	at := map[string]map[int64]warcRec{"whole.warc.gz": wholeAt, "growing.warc.gz": growAt}
	open := filepath.Join(warcs, "growing.warc.gz.open")
	f, err := os.Create(open)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Appends go on until the snapshot is taken, and some more after.
	snapped := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var appendErr error
	go func() {
		defer wg.Done()
		const chunk = 6007
		after := 0
		for pos := 0; pos < len(growing); pos += chunk {
			if _, err := f.Write(growing[pos:min(pos+chunk, len(growing))]); err != nil {
				appendErr = err
				return
			}
			select {
			case <-snapped:
				after++
			default:
			}
			// Pace the appends by the daemon's progress, not by time: the
			// next chunk once a poll has seen this one.
			want := int64(min(pos+chunk, len(growing)))
			for i := 0; i < 20000; i++ {
				st, err := d.client.Ingest(ctx)
				if err != nil {
					appendErr = err
					return
				}
				seen := false
				for _, fp := range st.Files {
					seen = seen || fp.Name == "growing.warc.gz" && fp.Size >= want
				}
				if seen {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	// Take the snapshot once the growing file is partly ingested.
	waitFor(t, "part of the growing WARC ingested", func() bool {
		st, err := d.client.Ingest(ctx)
		if err != nil {
			return false
		}
		for _, fp := range st.Files {
			if fp.Name == "growing.warc.gz" && fp.Records > 50 {
				return true
			}
		}
		return false
	})
	backup := filepath.Join(dir, "backup")
	code, out, stderr := runBinary(t, "backup", "-addr", d.sock, "--json", backup)
	close(snapped)
	if code != 0 {
		t.Fatalf("wayside backup: exit %d\n%s\n%s\n%s", code, out, stderr, d.log())
	}
	var res api.BackupResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("backup --json: %v\n%s", err, out)
	}
	names := map[string]bool{}
	for _, s := range res.Stores {
		names[s.Name] = true
	}
	for _, n := range []string{"index", "ingest checkpoint", "cdxj", "capture index", "live mementomap", "characterization store"} {
		if !names[n] {
			t.Errorf("the snapshot lacks the %s: %+v", n, res.Stores)
		}
	}
	wg.Wait()
	f.Close()
	if appendErr != nil {
		t.Fatal(appendErr)
	}
	if err := os.Rename(open, strings.TrimSuffix(open, ".open")); err != nil {
		t.Fatal(err)
	}
	// The live daemon ingests everything: the snapshot was taken mid-way.
	total := int64(len(wholeAt) + len(growAt))
	waitFor(t, "the live daemon to ingest everything", func() bool {
		st, err := d.client.Ingest(ctx)
		return err == nil && st.Records == total
	})
	if res.Records <= 0 || res.Records >= total {
		t.Fatalf("snapshot at %d of %d records: not taken while ingesting", res.Records, total)
	}
	live := append(cdxLines(t, d.sock, "site7.example"), cdxLines(t, d.sock, "site8.example")...)

	// What the snapshot's checkpoint covers: each file's records before its
	// checkpointed offset.
	var cp struct {
		Files map[string]struct {
			Offset int64 `json:"offset"`
		} `json:"files"`
	}
	b, err := os.ReadFile(filepath.Join(backup, "ingest-checkpoint.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	inSnap := func(file string, off int64) bool {
		p, ok := cp.Files[file]
		return ok && off < p.Offset
	}
	var want []string
	n := 0
	for _, l := range live {
		var file, uri, dg string
		var off int64
		if _, err := fmt.Sscan(l, &file, &off, &uri, &dg); err != nil {
			t.Fatalf("CDX line %q: %v", l, err)
		}
		if _, ok := at[file][off]; !ok {
			t.Fatalf("CDX line %q: no record there", l)
		}
		if inSnap(file, off) {
			want = append(want, l)
			n++
		}
	}
	if int64(n) != res.Records {
		t.Errorf("the snapshot's checkpoint covers %d records, its summary says %d", n, res.Records)
	}

	// Restore into a fresh data directory; the daemon on it watches the
	// WARC files as far as the snapshot's checkpoint reached (the growing
	// one cut there), so it has nothing to add.
	dir2 := t.TempDir()
	warcs2 := filepath.Join(dir2, "warcs")
	if err := os.MkdirAll(warcs2, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"whole.warc.gz": whole, "growing.warc.gz": growing} {
		writeFile(t, filepath.Join(warcs2, name), data[:cp.Files[name].Offset])
	}
	if out, err := exec.Command("cp", "-a", backup, filepath.Join(dir2, "data")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	if err := d.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, d.log())
	}
	for _, args := range [][]string{
		{"index", "stats", "--check", "--index", filepath.Join(dir2, "data", "index")},
		{"index", "verify", "--index", filepath.Join(dir2, "data", "index"), "--captures", filepath.Join(dir2, "data", "capture-index"), "--dir", warcs2},
	} {
		if code, out, stderr := runBinary(t, args...); code != 0 {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, out, stderr)
		}
	}
	d2 := startDaemon(t, dir2, backupTestConfig)
	// Recovery (consumers caught up from the CDXJ files) comes before the
	// ingester's first poll: wait for the poll to report both files done.
	waitFor(t, "the restored daemon to recover and poll", func() bool {
		st, err := d2.client.Ingest(ctx)
		if err != nil {
			return false
		}
		done := 0
		for _, fp := range st.Files {
			if fp.Done && fp.Offset == cp.Files[fp.Name].Offset {
				done++
			}
		}
		return done == 2
	})
	var got []string
	waitFor(t, "the restored daemon's consumers to catch up", func() bool {
		got = append(cdxLines(t, d2.sock, "site7.example"), cdxLines(t, d2.sock, "site8.example")...)
		return len(got) >= len(want)
	})
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("restored CDX answer (%d lines) differs from the snapshot's (%d lines)", len(got), len(want))
		for i := 0; i < len(got) || i < len(want); i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("first difference at line %d: restored %q, snapshot %q", i, g, w)
				break
			}
		}
	}
	for _, l := range want[:min(20, len(want))] {
		var file, uri string
		var off int64
		fmt.Sscan(l, &file, &off, &uri)
		waitFor(t, "the restored live map to hold "+uri, func() bool {
			m, err := d2.client.MapLookup(ctx, uri)
			return err == nil && m.Found
		})
	}
	var st struct {
		Problems []string `json:"problems"`
	}
	if err := d2.client.Status(ctx, &st); err != nil || len(st.Problems) > 0 {
		t.Errorf("restored daemon: %v %v", err, st.Problems)
	}
	// The characterizer catches up from the CDXJ files what it had not
	// stored at the snapshot (it says so in the log) before the stop.
	if err := d2.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, d2.log())
	}
}
