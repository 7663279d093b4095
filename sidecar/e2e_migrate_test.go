package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/migrate"
	"github.com/wayside-archive/wayside/sidecar"
	"github.com/wayside-archive/wayside/warcio"
)

const migrateTestConfig = `
data_dir: DIR/data
listen:
  tcp: 127.0.0.1:0
  token: ${WAYSIDE_TEST_TOKEN}
ingest:
  dirs: [DIR/warcs]
  poll_interval: 50ms
characterize:
  enabled: true
`

// TestE2EMigrateAPI runs a migration through the daemon's API on the real
// binary: a WARC file holding a BMP made by ImageMagick is ingested and
// characterized; GET /v1/migrate/risk rates the BMP at risk and PNG not;
// POST /v1/migrate (refused without the token, and for a bad workflow)
// starts a job whose status GET /v1/migrate reports until it is done, with
// the BMP migrated and a conversion WARC (and its CDXJ) in the job's
// output directory, its conversion record referring to the original.
func TestE2EMigrateAPI(t *testing.T) {
	var tools migrate.Tools
	im, err := tools.ResolveTool(context.Background(), "imagemagick")
	if err != nil {
		testenv.MissingTool(t, "%v", err)
	}
	bmp, err := exec.Command(im.Path, "-size", "16x12", "gradient:red-blue", "BMP3:-").Output()
	if err != nil {
		t.Fatalf("imagemagick: %v", err)
	}
	dir := t.TempDir()
	d := startDaemon(t, dir, migrateTestConfig)
	origID := recID(1)
	warc := append(warcRec{Type: "response", URI: "http://example.org/img/a.bmp", Date: time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC),
		ID: origID, Body: bmp, MIME: "image/bmp"}.bytes(),
		warcRec{Type: "response", URI: "http://example.org/", Date: time.Date(2024, 3, 1, 8, 0, 1, 0, time.UTC),
			ID: recID(2), Body: []byte(`<img src="img/a.bmp">`)}.bytes()...)
	tmp := filepath.Join(dir, "warcs", ".tmp")
	if err := os.WriteFile(tmp, warc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "warcs", "legacy.warc.gz")); err != nil {
		t.Fatal(err)
	}

	call := func(method, path string, body any, token bool) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, d.tcp+path, rd)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	// Characterized: the store lists the file.
	waitFor(t, "the WARC file characterized", func() bool {
		code, b := call("GET", api.PathCharFiles, nil, true)
		return code == 200 && strings.Contains(string(b), `"legacy.warc.gz"`)
	})

	if code, _ := call("GET", api.PathMigrateRisk, nil, false); code != http.StatusUnauthorized {
		t.Errorf("risk without a token: %d", code)
	}
	code, b := call("GET", api.PathMigrateRisk+"?threshold=0.5", nil, true)
	var risk api.MigrateRisk
	if code != 200 || json.Unmarshal(b, &risk) != nil {
		t.Fatalf("risk: %d %s", code, b)
	}
	at := map[string]bool{}
	for _, f := range risk.Formats {
		at[f.PUID] = f.AtRisk
		if f.Risk < 0 || f.Risk > 1 || f.AtRisk != (f.Risk >= 0.5) {
			t.Errorf("risk of %s: %v, at risk %v", f.PUID, f.Risk, f.AtRisk)
		}
	}
	if !at["fmt/116"] || at["fmt/11"] || len(risk.Questions) == 0 {
		t.Errorf("risk: BMP 3.0 at risk %v, PNG at risk %v, %d questions", at["fmt/116"], at["fmt/11"], len(risk.Questions))
	}

	if code, _ := call("POST", api.PathMigrate, api.MigrateRequest{}, false); code != http.StatusUnauthorized {
		t.Errorf("POST %s without a token: %d", api.PathMigrate, code)
	}
	if code, b := call("POST", api.PathMigrate, api.MigrateRequest{Workflow: "sideways"}, true); code != http.StatusBadRequest {
		t.Errorf("bad workflow: %d %s", code, b)
	}
	if code, b := call("POST", api.PathMigrate, api.MigrateRequest{Files: []string{"../etc/passwd"}}, true); code != http.StatusBadRequest {
		t.Errorf("file outside the collection: %d %s", code, b)
	}
	code, b = call("POST", api.PathMigrate, api.MigrateRequest{Files: []string{"legacy.warc.gz"}}, true)
	var job api.MigrateJob
	if code != http.StatusAccepted || json.Unmarshal(b, &job) != nil || job.ID == "" {
		t.Fatalf("start: %d %s", code, b)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		code, b := call("GET", api.PathMigrate+"?id="+job.ID, nil, true)
		var jobs api.MigrateJobs
		if code != 200 || json.Unmarshal(b, &jobs) != nil || len(jobs.Jobs) != 1 {
			t.Fatalf("status: %d %s", code, b)
		}
		job = jobs.Jobs[0]
		if job.State != api.MigrateRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still running after 3 minutes: %+v", job)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if job.State != api.MigrateDone || job.Located != 1 || job.Counts["migrated"] != 1 || len(job.Outputs) != 1 || job.Error != "" {
		t.Fatalf("job: %+v\n%s", job, d.log())
	}
	if !strings.HasPrefix(job.Outputs[0], filepath.Join(dir, "data", "migrate", job.ID)+string(filepath.Separator)) {
		t.Errorf("output %s is not in the job's directory under the data directory", job.Outputs[0])
	}
	if _, err := os.Stat(job.Outputs[0] + ".cdxj"); err != nil {
		t.Errorf("no CDXJ beside the output: %v", err)
	}
	r, err := warcio.Open(job.Outputs[0], warcio.Options{KeepPayload: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	found := false
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		if rec.Type == "conversion" {
			found = true
			if rec.Headers.Get("WARC-Refers-To") != origID || rec.TargetURI != "http://example.org/img/a.bmp" || !bytes.HasPrefix(rec.Payload, []byte("\x89PNG")) {
				t.Errorf("conversion record: refers to %s, URI %s, payload %q", rec.Headers.Get("WARC-Refers-To"), rec.TargetURI, rec.Payload[:min(8, len(rec.Payload))])
			}
		}
	}
	if !found {
		t.Error("no conversion record in the output")
	}
	// The list shows the job, newest first.
	code, b = call("GET", api.PathMigrate, nil, true)
	if code != 200 || !strings.Contains(string(b), job.ID) {
		t.Errorf("jobs: %d %s", code, b)
	}
}

// TestE2EMigratedReplayChromium replays the replace workflow's copy in
// headless Chromium through Wayside's own public replay: a WARC file of a
// page showing a BMP (made by ImageMagick) is migrated by `wayside migrate
// --workflow replace` (the real binary), the copy is put in the daemon's
// watched directory, and the replayed page's image is the migrated PNG,
// loaded: its source is a.png and its naturalWidth the original's width.
func TestE2EMigratedReplayChromium(t *testing.T) {
	exe := chromium(t)
	var tools migrate.Tools
	im, err := tools.ResolveTool(context.Background(), "imagemagick")
	if err != nil {
		testenv.MissingTool(t, "%v", err)
	}
	bmp, err := exec.Command(im.Path, "-size", "23x17", "gradient:red-blue", "BMP3:-").Output()
	if err != nil {
		t.Fatalf("imagemagick: %v", err)
	}
	when := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	page := `<html><head><title>legacy</title></head><body><img id="a" src="img/a.bmp" alt="a"></body></html>`
	in := filepath.Join(t.TempDir(), "legacy.warc.gz")
	warc := append(warcRec{Type: "response", URI: "http://legacy.test/page.html", Date: when, ID: recID(1), Body: []byte(page)}.bytes(),
		warcRec{Type: "response", URI: "http://legacy.test/img/a.bmp", Date: when, ID: recID(2), Body: bmp, MIME: "image/bmp"}.bytes()...)
	if err := os.WriteFile(in, warc, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if code, stdout, stderr := runBinary(t, "migrate", "-q", "-o", out, "--workflow", "replace", in); code != 0 {
		t.Fatalf("migrate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	copyOut := filepath.Join(out, "legacy.migrated.warc.gz")
	b, err := os.ReadFile(copyOut)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "warcs"), 0o755)
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "warcs", "legacy.migrated.warc.gz"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, publicConfig)
	var st sidecar.AccessState
	if err := d.client.GetJSON(context.Background(), "/v1/access", &st); err != nil {
		t.Fatal(err)
	}
	urim := st.Fronts[0].ContentURL + "/default/" + when.Format("20060102150405") + "/http://legacy.test/page.html"
	waitFor(t, "ingest", func() bool {
		resp, _ := get(t, urim, nil)
		return resp.StatusCode == 200
	})
	tctx := browser(t, exe)
	if err := chromedp.Do(tctx, chromedp.Navigate(urim)); err != nil {
		t.Fatal(err)
	}
	// The public front shows a memento framed: the page is read inside
	// the frame.
	img, err := chromedp.Run(tctx, chromedp.Poll[map[string]any](`document.readyState === "complete" && Array.from(document.images).every(i => i.complete) && (() => { const i = document.getElementById("a"); return i && {src: i.currentSrc, w: i.naturalWidth, h: i.naturalHeight}; })()`,
		chromedp.WithPollingInFrame(replayFrame(t, tctx))))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := img["src"].(string)
	if !strings.HasSuffix(src, "/http://legacy.test/img/a.png") || img["w"] != float64(23) || img["h"] != float64(17) {
		t.Errorf("the replayed page's image: %v; want a.png loaded, 23×17", img)
	}
}
