package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/wayside-archive/wayside/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/fixity"
	"github.com/wayside-archive/wayside/fixity/testarchive"
)

func fixityRun(t *testing.T, ctx context.Context, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	err := run(ctx, append([]string{"fixity"}, args...), e)
	return out.String(), errb.String(), err
}

func fixityCorpus(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join("..", "..", "fixity", "testdata", "manifests", name+".json")
}

func TestFixityVerifyAndCompareCmd(t *testing.T) {
	ctx := context.Background()
	out, _, err := fixityRun(t, ctx, "", "verify", fixityCorpus(t, "baseline"), fixityCorpus(t, "status-flip"))
	if err != nil || strings.Count(out, "ok ") != 2 {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	b, err := os.ReadFile(fixityCorpus(t, "baseline"))
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.json")
	os.WriteFile(tampered, bytes.Replace(b, []byte(`"status": 200`), []byte(`"status": 203`), 1), 0o644)
	out, _, err = fixityRun(t, ctx, "", "verify", tampered)
	if err == nil || !strings.Contains(out, "FAIL") {
		t.Fatalf("verify of a tampered manifest: err %v out %s", err, out)
	}
	out, _, err = fixityRun(t, ctx, "", "compare", fixityCorpus(t, "baseline"), fixityCorpus(t, "status-flip"))
	if err != nil || !strings.Contains(out, "class: status") || !strings.Contains(out, "http://example.test/logo.png") {
		t.Fatalf("compare: %v\n%s", err, out)
	}
	out, _, err = fixityRun(t, ctx, "", "compare", "--json", fixityCorpus(t, "baseline"), fixityCorpus(t, "redirect-to-another-memento"))
	var ch fixity.Change
	if err != nil || json.Unmarshal([]byte(out), &ch) != nil || ch.Class != fixity.ClassURIMRepresentation {
		t.Fatalf("compare --json: %v\n%s", err, out)
	}
	if _, _, err := fixityRun(t, ctx, "", "compare", fixityCorpus(t, "baseline")); err == nil {
		t.Fatal("compare with one manifest succeeded")
	}
}

func TestFixityCmdEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			testenv.MissingTool(t, "fixity: no Chromium binary: install chromium to run the replay tests")
		}
	}
	arch, err := testarchive.New("web")
	if err != nil {
		t.Fatal(err)
	}
	defer arch.Close()
	if _, err := arch.LoadBuiltin(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	archFlags := []string{"--archive", "test=" + arch.Host() + "," + arch.AliasHost(), "--quiet", "400ms", "--cap", "8s", "--raw-timeout", "3s"}
	page := arch.URIM(testarchive.SiteTS, testarchive.PageDeterministic)
	man := filepath.Join(dir, "m.json")
	out, _, err := fixityRun(t, ctx, "", append(append([]string{"replay"}, archFlags...), "-o", man, page)...)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if out2, _, err := fixityRun(t, ctx, "", "verify", man); err != nil || !strings.Contains(out2, strings.Fields(out)[0]) {
		t.Fatalf("verify of the replayed manifest: %v %s (replay printed %s)", err, out2, out)
	}
	if _, _, err := fixityRun(t, ctx, "", append(append([]string{"replay"}, archFlags...), "file:///etc/passwd")...); !errors.Is(err, fixity.ErrOutOfScope) {
		t.Fatalf("replay of file:///etc/passwd: %v", err)
	}

	store := filepath.Join(dir, "store")
	list := page + "\n# a comment\n" + arch.URIM(testarchive.SiteTS, testarchive.PageLeak) + "\n"
	for i := range 2 {
		out, _, err := fixityRun(t, ctx, list, append(append([]string{"sweep", "--store", store}, archFlags...), "--parallel", "2")...)
		if err != nil || !strings.Contains(out, "2 mementos, 0 changed") {
			t.Fatalf("sweep %d: %v\n%s", i, err, out)
		}
	}
	// A scheduled sweep runs until interrupted.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	live := filepath.Join(dir, "live.html")
	out, _, err = fixityRun(t, sctx, "", append(append([]string{"sweep", "--store", store, "--schedule", "@every 1s", "--report", live}, archFlags...), page)...)
	cancel()
	if err != nil || !strings.Contains(out, "1 mementos, 0 changed, 0 failed") {
		t.Fatalf("scheduled sweep: %v\n%s", err, out)
	}
	if lb, err := os.ReadFile(live); err != nil || !bytes.Contains(lb, []byte("<svg")) {
		t.Fatalf("--report after a scheduled sweep: %v", err)
	}
	// The report reads the store while a sweep holds it.
	hold, err := fixity.OpenHistory(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "r.html")
	_, _, err = fixityRun(t, ctx, "", "report", "--store", store, "-o", html)
	hold.Close()
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := os.ReadFile(html)
	if !bytes.Contains(hb, []byte("<svg")) || !bytes.Contains(hb, []byte("<rect")) {
		t.Fatalf("report has no heatmap:\n%s", hb)
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=|<script|<link|@import|url\(`).Find(hb); m != nil {
		t.Fatalf("report is not self-contained: found %q", m)
	}
	out, _, err = fixityRun(t, ctx, "", "report", "--store", store, "--json")
	var rep fixity.Report
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Totals["replays"] < 5 || len(rep.Archives) != 1 {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	hist, err := fixity.OpenHistory(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hist.Close()
	if err := hist.Check(); err != nil {
		t.Fatal(err)
	}
}
