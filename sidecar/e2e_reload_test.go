package sidecar_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/sidecar"
)

func postUnix(t *testing.T, sock, path string) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := c.Post("http://wayside"+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestE2EReloadWhileWARCsGrow: four WARCs grow, two in the watched
// directory and two in one the daemon is told to watch by a SIGHUP
// mid-way; an invalid config sent to POST /v1/admin/reload is refused (422,
// named in status) and the daemon goes on with the old one. Every record of
// the four files ends up in the CDXJ exactly once.
func TestE2EReloadWhileWARCsGrow(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "warcs"), filepath.Join(dir, "heritrix", "warcs")
	d := startDaemon(t, dir, "data_dir: DIR/data\ningest:\n  dirs: [DIR/warcs]\n  poll_interval: 20ms\n")
	type growing struct {
		open, final string
		data        []byte
		at          map[int64]warcRec
		f           *os.File
	}
	var files []*growing
	for i, wd := range []string{a, a, b, b} {
		data, at := testWARC(400, 10+i)
		open := filepath.Join(wd, "RELOAD-"+string(rune('A'+i))+".warc.gz.open")
		f, err := os.Create(open)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, &growing{open: open, final: strings.TrimSuffix(open, ".open"), data: data, at: at, f: f})
	}
	const chunk = 5003
	maxLen := 0
	for _, g := range files {
		maxLen = max(maxLen, len(g.data))
	}
	reloaded, refused := false, false
	for pos := 0; pos < maxLen; pos += chunk {
		for _, g := range files {
			if pos < len(g.data) {
				if _, err := g.f.Write(g.data[pos:min(pos+chunk, len(g.data))]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !reloaded && pos > maxLen/3 {
			// Watch both directories from now on.
			os.WriteFile(d.cfgPath, []byte(strings.ReplaceAll("data_dir: DIR/data\ningest:\n  dirs: [DIR/warcs, DIR/heritrix/warcs]\n  poll_interval: 20ms\n", "DIR", dir)), 0o600)
			d.cmd.Process.Signal(syscall.SIGHUP)
			waitFor(t, "the reload to take effect", func() bool {
				st, err := d.client.Ingest(context.Background())
				if err != nil {
					return false
				}
				for _, fp := range st.Files {
					if strings.HasPrefix(fp.Name, "RELOAD-C") {
						return true
					}
				}
				return false
			})
			reloaded = true
		}
		if reloaded && !refused && pos > 2*maxLen/3 {
			os.WriteFile(d.cfgPath, []byte(strings.ReplaceAll("data_dir: DIR/data\ningest:\n  dirs: [DIR/warcs, DIR/no-such-dir]\n  poll_interval: 20ms\n", "DIR", dir)), 0o600)
			code, body := postUnix(t, d.sock, "/v1/admin/reload")
			if code != http.StatusUnprocessableEntity || !strings.Contains(body, "no-such-dir") {
				t.Errorf("reload with a missing directory: %d %s, want 422 naming it", code, body)
			}
			var st sidecar.Status
			if err := d.client.Status(context.Background(), &st); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(st.Problems, "\n"), "config reload") {
				t.Errorf("status problems %q do not name the refused reload", st.Problems)
			}
			os.WriteFile(d.cfgPath, []byte(strings.ReplaceAll("data_dir: DIR/other\ningest:\n  dirs: [DIR/warcs]\n", "DIR", dir)), 0o600)
			if code, body := postUnix(t, d.sock, "/v1/admin/reload"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "data_dir") {
				t.Errorf("reload changing data_dir: %d %s, want 422 naming data_dir", code, body)
			}
			refused = true
		}
	}
	for _, g := range files {
		g.f.Close()
		if err := os.Rename(g.open, g.final); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "all four files done", func() bool {
		st, err := d.client.Ingest(context.Background())
		if err != nil {
			return false
		}
		done := 0
		for _, g := range files {
			for _, fp := range st.Files {
				if fp.Name == filepath.Base(g.final) && fp.Done && fp.Offset == int64(len(g.data)) {
					done++
				}
			}
		}
		return done == 4
	})
	for _, g := range files {
		base := filepath.Base(g.final)
		cf, err := os.Open(filepath.Join(dir, "data", "cdxj", base+".cdxj"))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		sc := bufio.NewScanner(cf)
		for sc.Scan() {
			l, err := cdxj.Parse(sc.Text())
			if err != nil {
				t.Fatalf("bad CDXJ line %q: %v", sc.Text(), err)
			}
			r, ok := g.at[l.Offset]
			if !ok {
				t.Fatalf("%s: CDXJ line at offset %d is not a record start", base, l.Offset)
			}
			seen[r.ID]++
		}
		cf.Close()
		for _, r := range g.at {
			if seen[r.ID] != 1 {
				t.Errorf("%s: record %s in CDXJ %d times, want exactly once", base, r.ID, seen[r.ID])
			}
		}
		if cp := readCheckpoint(t, dir)[base]; cp.Records != int64(len(g.at)) {
			t.Errorf("%s: checkpoint counts %d records, want %d", base, cp.Records, len(g.at))
		}
	}
	checkCaptureIndex(t, d, "site10.example", files[0].at)
	checkCaptureIndex(t, d, "site13.example", files[3].at)
	if err := d.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, d.log())
	}
}
