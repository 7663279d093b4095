package migrate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/testenv"
)

func TestDefaultRegistries(t *testing.T) {
	m := DefaultRiskModel()
	p := DefaultPathways()
	// Every pathway source is rated, and every target rates lower than
	// every source of its pathway: migration lowers risk.
	for _, pw := range p.List {
		for _, s := range pw.Sources {
			rs, ok := m.Risk(s)
			if !ok {
				t.Errorf("pathway %s: source %s is not in the risk registry", pw.Name, s)
				continue
			}
			for _, tg := range pw.Targets {
				rt, ok := m.Risk(tg)
				if !ok || rt >= rs {
					t.Errorf("pathway %s: target %s (risk %v, listed %v) is not less at risk than source %s (%v)", pw.Name, tg, rt, ok, s, rs)
				}
			}
		}
	}
	// The default threshold selects the legacy formats, not PDF, WAV or PNG.
	at := strings.Join(m.AtRisk(0.5), " ")
	for _, want := range []string{"fmt/119", "fmt/353", "x-fmt/382", "fmt/133", "fmt/414"} {
		if !strings.Contains(at+" ", want+" ") {
			t.Errorf("AtRisk(0.5) lacks %s: %s", want, at)
		}
	}
	for _, not := range []string{"fmt/17", "fmt/141", "fmt/11", "fmt/471"} {
		if strings.Contains(at+" ", not+" ") {
			t.Errorf("AtRisk(0.5) holds %s: %s", not, at)
		}
	}
}

func TestRiskWeights(t *testing.T) {
	m := DefaultRiskModel()
	before, _ := m.Risk("fmt/141")
	// Weighting only "proprietary" makes WAV (answer 0.5) exactly 0.5.
	if err := m.SetWeights([]string{"undisclosed=0", "adoption=0", "tools=0", "obsolete=0", "proprietary=3"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := m.Risk("fmt/141"); r != 0.5 || r == before {
		t.Errorf("risk of fmt/141 with only proprietary weighted = %v (was %v)", r, before)
	}
	for _, bad := range []string{"nosuch=1", "tools=-1", "tools", "tools=x"} {
		if err := DefaultRiskModel().SetWeights([]string{bad}); err == nil {
			t.Errorf("SetWeights(%q) accepted", bad)
		}
	}
	if err := DefaultRiskModel().SetWeights([]string{"proprietary=0", "undisclosed=0", "adoption=0", "tools=0", "obsolete=0"}); err == nil {
		t.Error("all weights 0 accepted")
	}
}

func TestRegistryFilesRejected(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown-field.json": `{"questions":[{"id":"a","weight":1}],"formats":{},"extra":1}`,
		"bad-answer.json":    `{"questions":[{"id":"a","weight":1}],"formats":{"fmt/1":{"answers":{"a":2}}}}`,
		"unknown-q.json":     `{"questions":[{"id":"a","weight":1}],"formats":{"fmt/1":{"answers":{"b":1}}}}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := LoadRiskModel(p); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v (want an error naming the file)", name, err)
		}
	}
	for name, body := range map[string]string{
		"no-out.json":   `{"pathways":[{"name":"x","kind":"image","sources":["a"],"targets":["b"],"mime":"m","ext":"e","tool":"ffmpeg","args":["{in}"]}]}`,
		"dup-src.json":  `{"pathways":[{"name":"x","kind":"image","sources":["a"],"targets":["b"],"mime":"m","ext":"e","tool":"ffmpeg","args":["{in}","{out}"]},{"name":"y","kind":"image","sources":["a"],"targets":["b"],"mime":"m","ext":"e","tool":"ffmpeg","args":["{in}","{out}"]}]}`,
		"bad-tool.json": `{"pathways":[{"name":"x","kind":"image","sources":["a"],"targets":["b"],"mime":"m","ext":"e","tool":"rm","args":["{in}","{out}"]}]}`,
		"bad-kind.json": `{"pathways":[{"name":"x","kind":"font","sources":["a"],"targets":["b"],"mime":"m","ext":"e","tool":"ffmpeg","args":["{in}","{out}"]}]}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := LoadPathways(p); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v (want an error naming the file)", name, err)
		}
	}
}

// fakeTool writes a shell script standing for a converter that misbehaves
// in a way real ones do but cannot be made to on demand.
func fakeTool(t *testing.T, body string) Tool {
	t.Helper()
	p := filepath.Join(t.TempDir(), "conv")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Tool{Name: "exec:" + p, Path: p}
}

// TestSandboxFaults runs converters that are killed, hang past the time
// limit, write nothing, write an empty file, or exceed the output limit:
// each is a RunError naming what happened, the run returns (the hanging
// one and its child are killed), and nothing is left in the work area.
func TestSandboxFaults(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		testenv.MissingTool(t, "prlimit: %v", err)
	}
	work := t.TempDir()
	ctx := context.Background()
	sb, err := NewSandbox(ctx, Limits{Timeout: 3 * time.Second, Output: 1 << 20}, work, true)
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cases := []struct {
		name, body, want string
	}{
		{"killed", `kill -9 $$`, "killed by signal"},
		{"hangs", `sleep 600 & echo $! > ` + pidFile + `; wait`, "timed out"},
		{"fails", `echo "bad input" >&2; exit 3`, "exit status 3: bad input"},
		{"nothing", `exit 0`, "wrote no output"},
		{"empty", `: > "$2"`, "output is empty"},
		{"too-big", `head -c 2000000 /dev/zero > "$2"`, ""}, // file-size limit or output cap
		{"symlink", `ln -s /etc/passwd "$2"`, "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool := fakeTool(t, c.body)
			out, err := sb.Convert(ctx, tool, []string{"{in}", "{out}"}, []byte("input"), "png")
			var re *RunError
			if !errors.As(err, &re) {
				t.Fatalf("Convert = %d bytes, %v; want a RunError", len(out), err)
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q lacks %q", err, c.want)
			}
		})
	}
	// The hanging converter's child was killed with its group.
	if b, err := os.ReadFile(pidFile); err == nil {
		pid := strings.TrimSpace(string(b))
		if _, err := os.Stat("/proc/" + pid); err == nil {
			if st, _ := os.ReadFile("/proc/" + pid + "/stat"); !strings.Contains(string(st), ") Z ") {
				t.Errorf("the hanging converter's child %s is still running", pid)
			}
		}
	} else {
		t.Errorf("the hanging converter did not start its child: %v", err)
	}
	left, _ := os.ReadDir(work)
	if len(left) != 0 {
		t.Errorf("work area holds %d entries after the runs", len(left))
	}
}

// TestSandboxNoNetwork checks a converter cannot reach even loopback when
// the sandbox isolates the network.
func TestSandboxNoNetwork(t *testing.T) {
	ctx := context.Background()
	sb, err := NewSandbox(ctx, Limits{Timeout: 10 * time.Second}, t.TempDir(), false)
	if err != nil {
		t.Fatalf("no network isolation here: %v", err)
	}
	if !sb.Isolated {
		t.Fatal("sandbox not isolated")
	}
	// Inside a new network namespace only a down loopback exists.
	tool := fakeTool(t, `cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' > "$2"`)
	out, err := sb.Convert(ctx, tool, []string{"{in}", "{out}"}, []byte("x"), "txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "lo" {
		t.Errorf("interfaces inside the sandbox: %q, want only lo", got)
	}
}
