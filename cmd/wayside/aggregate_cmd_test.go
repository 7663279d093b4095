package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestAggregateCommand runs `wayside aggregate timemap|timegate|eval`
// against archives on loopback: one holding a page (with a MementoMap),
// one holding nothing (its map says so: never asked), one failing.
func TestAggregateCommand(t *testing.T) {
	var (
		mu    sync.Mutex // the archives' handlers run concurrently
		asked = map[string]int{}
	)
	askedOf := func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return asked[name]
	}
	archive := func(name, body string, status int, mapBody string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/map" {
				fmt.Fprint(w, mapBody)
				return
			}
			mu.Lock()
			asked[name]++
			mu.Unlock()
			if status == 200 && r.URL.Path != "/tm/http://example.com/" {
				http.NotFound(w, r) // it holds that page only
				return
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	held := archive("held", `<http://h.test/20200101000000/http://example.com/>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT"`, 200, "com,example)/ 1\n")
	empty := archive("empty", "", 404, "!meta {\"type\":\"MementoMap\"}\n")
	broken := archive("broken", "oops", 503, "")
	dir := t.TempDir()
	writeCfg := func(withBroken bool) string {
		cfg := fmt.Sprintf("data_dir: %s\naggregate:\n  deadline: 5s\n  archives:\n", dir)
		for _, a := range []struct {
			name string
			srv  *httptest.Server
			m    bool
		}{{"held", held, true}, {"empty", empty, true}, {"broken", broken, false}} {
			if a.name == "broken" && !withBroken {
				continue
			}
			cfg += fmt.Sprintf("    - name: %s\n      timemap: %s/tm/\n", a.name, a.srv.URL)
			if a.m {
				cfg += fmt.Sprintf("      mementomap: %s/map\n", a.srv.URL)
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("agg-%v.yaml", withBroken))
		os.WriteFile(p, []byte(cfg), 0o644)
		return p
	}
	good, withBroken := writeCfg(false), writeCfg(true)
	runArgs := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }})
		return report(&errb, err, false), out.String(), errb.String()
	}

	code, out, stderr := runArgs("aggregate", "timemap", "-config", good, "http://example.com/")
	if code != exitOK || !strings.Contains(out, `<http://h.test/20200101000000/http://example.com/>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT"; archive="held"`) ||
		!strings.Contains(stderr, "empty: not asked") || askedOf("empty") != 0 {
		t.Errorf("timemap: exit %d\n%s\n%s (asked the empty archive %d times)", code, out, stderr, askedOf("empty"))
	}
	code, out, _ = runArgs("aggregate", "timegate", "-config", good, "http://example.com/", "2021")
	if code != exitOK || out != "20200101000000 http://h.test/20200101000000/http://example.com/ held\n" {
		t.Errorf("timegate: exit %d %q", code, out)
	}
	code, _, stderr = runArgs("aggregate", "timemap", "-config", withBroken, "http://example.com/")
	if code != exitFailure || !strings.Contains(stderr, "broken: FAILED: TimeMap: HTTP 503") || !strings.Contains(stderr, "partial answer") {
		t.Errorf("partial: exit %d %s", code, stderr)
	}
	code, _, stderr = runArgs("aggregate", "timemap", "-config", good, "http://example.com/nothing")
	if code != exitFailure || !strings.Contains(stderr, "no mementos") {
		t.Errorf("nothing: exit %d %s", code, stderr)
	}

	set := filepath.Join(dir, "set.txt")
	os.WriteFile(set, []byte("held http://example.com/\n- http://example.com/nothing\n"), 0o644)
	code, out, stderr = runArgs("aggregate", "eval", "-config", good, "--set", set, "--all", "-q")
	if code != exitOK || !strings.Contains(out, "recall             1.0000 (1 of 1") || !strings.Contains(out, "2 of 2 equal") {
		t.Errorf("eval: exit %d\n%s\n%s", code, out, stderr)
	}
	// A label the maps contradict: recall < 1, exit 1.
	os.WriteFile(set, []byte("held,empty http://example.com/\n"), 0o644)
	code, out, stderr = runArgs("aggregate", "eval", "-config", good, "--set", set, "-q")
	if code != exitFailure || !strings.Contains(stderr, "recall 0.5000 < 1") || !strings.Contains(out, "HIDDEN by a map: empty http://example.com/") {
		t.Errorf("eval, hidden holding: exit %d\n%s\n%s", code, out, stderr)
	}

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"aggregate", "eval", "--set", set}, "-config and --set are required"},
		{[]string{"aggregate", "timemap", "-config", good}, "want"},
		{[]string{"aggregate", "timemap", "-config", good, "ftp://x/"}, `scheme "ftp"`},
		{[]string{"aggregate", "timegate", "-config", good, "http://x/", "2021-01"}, "timestamp"},
		{[]string{"aggregate", "frobnicate"}, "unknown subcommand"},
	} {
		code, _, stderr := runArgs(tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d %s", tc.args, code, stderr)
		}
	}
	code, _, stderr = runArgs("aggregate", "eval", "-config", filepath.Join(dir, "missing.yaml"), "--set", set)
	if code != exitFailure || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("missing config: exit %d %s", code, stderr)
	}
}
