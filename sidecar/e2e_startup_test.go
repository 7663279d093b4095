package sidecar_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/api"
)

// TestE2EStartupRefusesWhatItCannotDo runs `wayside serve` with a part it
// cannot open: an index, a watched WARC directory, the capture index, the
// characterization store, a data directory others may write. Each time
// the daemon exits 1 at start-up with one error line naming the part, and
// serves nothing.
func TestE2EStartupRefusesWhatItCannotDo(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"index", "index:\n  url: FILE\n", "open index"},
		{"redis index", "index:\n  url: redis://127.0.0.1:1/?cluster=0\n", "does not answer"},
		{"watch dir", "ingest:\n  dirs: [FILE]\n", "ingest.dirs[0]"},
		{"capture index", "access:\n  index: FILE\n", "captureindex: open " + file},
		{"characterization", "characterize:\n  enabled: true\n  store: FILE\n", "characterize: store"},
		{"shared data dir", "data_dir: " + shared + "\n", "data_dir: " + shared + " is writable by group or others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "wayside.yaml")
			body := strings.ReplaceAll(tc.yaml, "FILE", file)
			if !strings.HasPrefix(body, "data_dir") {
				body = "data_dir: " + filepath.Join(t.TempDir(), "data") + "\n" + body
			}
			os.WriteFile(cfg, []byte(body), 0o600)
			code, _, stderr := runBinary(t, "serve", "-config", cfg)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if code != 1 || !strings.HasPrefix(last, "wayside: ") || !strings.Contains(last, tc.want) {
				t.Errorf("serve with a bad %s: exit %d, last line %q, want exit 1 naming %q\n%s", tc.name, code, last, tc.want, stderr)
			}
			if ents, _ := os.ReadDir(shared); len(ents) != 0 {
				t.Errorf("something was created in the refused data dir: %v", ents)
			}
		})
	}
}

// TestE2EStartupReportsMissingBrowser: fixity sweeps configured with no
// browser to run them do not stop the daemon (it serves dedup and ingest),
// but it says so at start-up (an error in its log) and in `wayside
// status`, and /metrics counts the problem. (The data directory it
// created is 0700, its socket 0600.)
func TestE2EStartupReportsMissingBrowser(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, `
data_dir: DIR/data
fixity:
  browser: DIR/no-such-chromium
  sweeps:
    - name: nightly
      urims: ["http://127.0.0.1:9/web/20240101000000/http://example.org/"]
      archive_hosts: ["127.0.0.1:9"]
      schedule: "@daily"
`)
	for path, want := range map[string]os.FileMode{filepath.Join(dir, "data"): os.ModeDir | 0o700, d.sock: os.ModeSocket | 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", path, fi.Mode(), err, want)
		}
	}
	var st api.Status
	if err := d.client.Status(context.Background(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) != 1 || !strings.Contains(st.Problems[0], "fixity sweeps cannot run (fixity.browser)") || !strings.Contains(st.Problems[0], "no-such-chromium") {
		t.Errorf("status problems %q, want the missing browser", st.Problems)
	}
	if log := d.log(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "fixity sweeps cannot run") {
		t.Errorf("start-up log does not report the missing browser:\n%s", log)
	}
	code, out, stderr := runBinary(t, "status", "-addr", d.sock)
	if code != 0 || !strings.Contains(out, "PROBLEM:    fixity sweeps cannot run") {
		t.Errorf("wayside status: exit %d\n%s%s", code, out, stderr)
	}
	m, _ := d.client.Metrics(context.Background())
	if !strings.Contains(m, "wayside_problems 1\n") {
		t.Errorf("metrics do not count the problem")
	}
	if err := d.client.Healthz(context.Background()); err != nil {
		t.Fatal(err)
	}
}
