package sidecar_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
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

func doTCP(t *testing.T, method, url, token string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestE2EReloadToken: a reload replaces the TCP token at once (the old
// one is refused, the new one accepted); the reload route itself needs the
// token and passes the Host and Origin checks of every route.
func TestE2EReloadToken(t *testing.T) {
	dir := t.TempDir()
	const cfg = "data_dir: DIR/data\ningest:\n  dirs: [DIR/warcs]\nlisten:\n  tcp: 127.0.0.1:0\n  token: TOKEN\n"
	oldTok, newTok := "first-token-0123456789", "second-token-9876543210"
	d := startDaemon(t, dir, strings.ReplaceAll(cfg, "TOKEN", oldTok))
	status, reload := d.tcp+"/v1/status", d.tcp+"/v1/admin/reload"
	if c := doTCP(t, "GET", status, oldTok, nil); c != 200 {
		t.Fatalf("status with the token: %d", c)
	}
	os.WriteFile(d.cfgPath, []byte(strings.ReplaceAll(strings.ReplaceAll(cfg, "DIR", dir), "TOKEN", newTok)), 0o600)
	for _, tc := range []struct {
		token string
		hdr   map[string]string
		want  int
	}{
		{"", nil, http.StatusUnauthorized},
		{"wrong-token-0000000000", nil, http.StatusUnauthorized},
		{oldTok, map[string]string{"Host": "evil.example:80"}, http.StatusForbidden},
		{oldTok, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
	} {
		if c := doTCP(t, "POST", reload, tc.token, tc.hdr); c != tc.want {
			t.Errorf("reload with token %q headers %v: %d, want %d", tc.token, tc.hdr, c, tc.want)
		}
	}
	if c := doTCP(t, "GET", status, oldTok, nil); c != 200 {
		t.Fatalf("refused reload requests changed the token: %d", c)
	}
	if c := doTCP(t, "POST", reload, oldTok, nil); c != 200 {
		t.Fatalf("reload: %d\n%s", c, d.log())
	}
	if c := doTCP(t, "GET", status, oldTok, nil); c != http.StatusUnauthorized {
		t.Errorf("old token after the reload: %d, want 401", c)
	}
	if c := doTCP(t, "GET", status, newTok, nil); c != 200 {
		t.Errorf("new token after the reload: %d, want 200", c)
	}
	if err := d.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, d.log())
	}
}

// TestE2ENotifyReady: with $NOTIFY_SOCKET (as systemd sets it for
// Type=notify) the daemon sends READY=1 with its pid once it answers on
// its socket, and STOPPING=1 on SIGTERM.
func TestE2ENotifyReady(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "warcs"), 0o755)
	notify := filepath.Join(dir, "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfgPath := filepath.Join(dir, "wayside.yaml")
	os.WriteFile(cfgPath, []byte(strings.ReplaceAll("data_dir: DIR/data\ningest:\n  dirs: [DIR/warcs]\n", "DIR", dir)), 0o600)
	cmd := exec.Command(waysideBin, "serve", "-config", cfgPath)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notify)
	var logb strings.Builder
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	}()
	read := func(what string) string {
		ln.SetReadDeadline(time.Now().Add(2 * time.Minute))
		buf := make([]byte, 4096)
		n, err := ln.Read(buf)
		if err != nil {
			t.Fatalf("no %s notification: %v\n%s", what, err, logb.String())
		}
		return string(buf[:n])
	}
	msg := read("READY=1")
	if !strings.Contains(msg, "READY=1") || !strings.Contains(msg, "MAINPID="+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("first notification %q, want READY=1 and MAINPID=%d", msg, cmd.Process.Pid)
	}
	// Ready means serving: the socket answers now, without a retry.
	resp := httpGetRawUnix(t, filepath.Join(dir, "data", "wayside.sock"), "/healthz")
	if resp.StatusCode != 200 {
		t.Errorf("healthz right after READY=1: %d", resp.StatusCode)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if msg := read("STOPPING=1"); msg != "STOPPING=1" {
		t.Errorf("notification on SIGTERM %q, want STOPPING=1", msg)
	}
	if err := <-done; err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, logb.String())
	}
}

// TestE2EReloadFixitySchedule: a reload replaces the fixity sweeps and
// their schedules (the scheduler restarts with the new ones; /v1/fixity/
// sweeps shows them with their next start), and a bad cron spec is refused
// with the old schedule left running.
func TestE2EReloadFixitySchedule(t *testing.T) {
	dir := t.TempDir()
	const base = "data_dir: DIR/data\ningest:\n  dirs: [DIR/warcs]\nfixity:\n  sweeps:\n"
	sweep := func(name, sched string) string {
		return "  - name: " + name + "\n    schedule: \"" + sched + "\"\n    archive_hosts: [archive.example]\n    urims: [http://archive.example/web/2020/http://example.org/]\n"
	}
	d := startDaemon(t, dir, base+sweep("nightly", "15 3 * * *"))
	sweeps := func() map[string]api.SweepStatus {
		resp, err := (&http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
		}}}).Get("http://wayside/v1/fixity/sweeps")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l api.SweepList
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		out := map[string]api.SweepStatus{}
		for _, s := range l.Sweeps {
			out[s.Name] = s
		}
		return out
	}
	// The fixity service schedules its sweeps once it runs, which may be
	// after the daemon answers (at start and after a reload): wait,
	// bounded, until every sweep has its next run.
	scheduled := func(n int) map[string]api.SweepStatus {
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			s := sweeps()
			all := len(s) == n
			for _, sw := range s {
				all = all && sw.Next != ""
			}
			if all || time.Now().After(deadline) {
				return s
			}
		}
	}
	if s := scheduled(1); len(s) != 1 || s["nightly"].Schedule != "15 3 * * *" || s["nightly"].Next == "" {
		t.Fatalf("sweeps at start: %+v", s)
	}
	write := func(cfg string) { os.WriteFile(d.cfgPath, []byte(strings.ReplaceAll(cfg, "DIR", dir)), 0o600) }
	write(base + sweep("nightly", "45 4 * * *") + sweep("hourly", "@every 1h"))
	if code, body := postUnix(t, d.sock, "/v1/admin/reload"); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	s := scheduled(2)
	if len(s) != 2 || s["nightly"].Schedule != "45 4 * * *" || !strings.Contains(s["nightly"].Next, "T04:45:00") || s["hourly"].Next == "" {
		t.Errorf("sweeps after the reload: %+v", s)
	}
	write(base + sweep("nightly", "61 * * * *"))
	if code, body := postUnix(t, d.sock, "/v1/admin/reload"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "schedule") {
		t.Errorf("reload with a bad schedule: %d %s, want 422 naming the schedule", code, body)
	}
	if s := sweeps(); len(s) != 2 || s["nightly"].Schedule != "45 4 * * *" {
		t.Errorf("sweeps after a refused reload: %+v", s)
	}
	if err := d.term(); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, d.log())
	}
}
