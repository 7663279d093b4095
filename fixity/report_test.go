package fixity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wayside-archive/wayside/fixity/testarchive"

	"github.com/wayside-archive/wayside/internal/ddtest"
)

// historyStore is a real multi-sweep history (two test archives, six
// sweeps with changes injected between them, real Chromium), recorded by
// go test -run TestStudyTables -update.
const historyStore = "testdata/history"

// recordHistory sweeps two test archives six times, injecting changes
// between sweeps, and copies the store (log and manifests) to
// testdata/history.
func recordHistory(t *testing.T) {
	archA, archB := newArchive(t), newArchive(t)
	cfg, err := NewConfig(Archive{Name: "archive-a", Hosts: []string{archA.Host(), archA.AliasHost()}},
		Archive{Name: "archive-b", Hosts: []string{archB.Host(), archB.AliasHost()}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReplayer(ReplayOptions{Config: cfg, ExecPath: chromiumPath(t), Quiet: 400 * time.Millisecond, HardCap: 6 * time.Second, RawTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	dir := t.TempDir()
	h, err := OpenHistory(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := NewSweeper(SweeperOptions{Replayer: rep, Config: cfg, History: h, Parallel: 2, Retries: 1, RetryDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	urims := []string{
		archA.URIM(testarchive.SiteTS, testarchive.PageDeterministic), archA.URIM(testarchive.SiteTS, testarchive.PageRandom),
		archB.URIM(testarchive.SiteTS, testarchive.PageDeterministic), archB.URIM(testarchive.SiteTS, testarchive.PageLeak),
	}
	schedule := []func(){
		func() {},
		func() { archA.Inject(testarchive.PageDeterministic, testarchive.Fault{AliasLinks: true}) },
		func() {
			archA.ClearFaults()
			archA.Inject(testarchive.Logo, testarchive.Fault{Header: map[string]string{"Server": "OtherServer/2.0"}})
			archB.Inject(testarchive.App, testarchive.Fault{Body: []byte("var changed = 1;\n")})
		},
		func() {
			archA.ClearFaults()
			archB.ClearFaults()
			archB.Inject(testarchive.Logo, testarchive.Fault{Status: 503})
		},
		func() {
			archA.Inject(testarchive.Logo, testarchive.Fault{Body: []byte("\x89PNG\r\n\x1a\nchanged")})
			archB.ClearFaults()
			archB.Inject(testarchive.Logo, testarchive.Fault{Cached: true})
		},
		func() { archA.ClearFaults(); archB.ClearFaults() },
	}
	for i, f := range schedule {
		f()
		if _, err := s.Run(context.Background(), urims); err != nil {
			t.Fatalf("sweep %d: %v", i+1, err)
		}
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(historyStore); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"history.jsonl", "manifests"} {
		if err := os.CopyFS(filepath.Join(historyStore, sub), os.DirFS(filepath.Join(dir, sub))); err != nil && sub == "manifests" {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(historyStore, "history.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// studyReport builds the report of the recorded history.
func studyReport(t testing.TB) *Report {
	t.Helper()
	recs, err := ReadHistory(historyStore)
	if err != nil {
		t.Fatal(err)
	}
	return BuildReport(recs, WithManifests(StoreManifests(historyStore)))
}

// TestStudyTables computes Table 5 and the data of Figs 20, 21 and 27-28
// from the recorded history and compares them with
// testdata/study-tables.txt (rewritten, with the history, by -update).
func TestStudyTables(t *testing.T) {
	const golden = "testdata/study-tables.txt"
	if ddtest.Update() {
		recordHistory(t)
	}
	rep := studyReport(t)
	got := rep.StudyText()
	if ddtest.Update() {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("study tables differ from %s (run go test -run TestStudyTables -update after checking):\n%s", golden, got)
	}
	// The recorded history is not trivial: both archives, all three
	// policies, several hashes somewhere, Algorithm 1 seeing changes the
	// hardened root does not (the alias host), a guideline finding.
	if len(rep.Study) != 2 {
		t.Fatalf("%d archives in the study tables", len(rep.Study))
	}
	distinct := map[string]int{} // distinct hashes summed over mementos
	for _, st := range rep.Study {
		if len(st.Policies) != 3 || st.Downloads < 5 {
			t.Fatalf("%s: %d policies, %d downloads", st.Archive, len(st.Policies), st.Downloads)
		}
		for _, p := range st.Policies {
			for k, n := range p.Histogram {
				distinct[p.Policy] += (k + 1) * n
			}
		}
	}
	if distinct[PolicyWayside] <= rep.Study[0].Mementos+rep.Study[1].Mementos || distinct[PolicyAlgorithm1] <= distinct[PolicyWayside] {
		t.Fatalf("distinct hashes per policy: %v", distinct)
	}
	if rep.Totals["checks"] == 0 || rep.Totals["manifests_unreadable"] != 0 {
		t.Fatalf("totals %v", rep.Totals)
	}
}

// TestReportHTMLInChromium renders the HTML report of the recorded history
// in headless Chromium and checks, in the DOM and in a screenshot of each
// chart, that every chart is there: the heatmap, and per archive Table 5,
// Fig 20, Fig 21 and Figs 27-28.
func TestReportHTMLInChromium(t *testing.T) {
	rep := studyReport(t)
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, html.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("no-proxy-server", true), chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"), chromedp.WindowSize(1200, 900))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
	defer tcancel()
	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	js, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		charts: Object.fromEntries([...document.querySelectorAll('svg.chart')].map(s => [s.id, {
			bars: s.querySelectorAll('rect.bar').length, lines: s.querySelectorAll('polyline.line').length,
			cells: s.querySelectorAll('rect[fill^="hsl"], rect[fill="#e0e0e0"]').length,
			w: s.getBoundingClientRect().width, h: s.getBoundingClientRect().height}])),
		table5: Object.fromEntries([...document.querySelectorAll('table.table5')].map(t => [t.id, t.querySelectorAll('tr').length]))})`))
	if err != nil {
		t.Fatal(err)
	}
	var dom struct {
		Charts map[string]struct {
			Bars, Lines, Cells int
			W, H               float64
		}
		Table5 map[string]int
	}
	if err := json.Unmarshal([]byte(js), &dom); err != nil {
		t.Fatal(err)
	}
	need := map[string]func(bars, lines, cells int) bool{
		"heatmap": func(_, _, cells int) bool { return cells == len(rep.Archives)*len(rep.Sweeps) },
	}
	for i, st := range rep.Study {
		np := len(st.Policies)
		need[fmt.Sprintf("fig20-%d", i)] = func(bars, _, _ int) bool { return bars >= np }
		need[fmt.Sprintf("fig21-%d", i)] = func(_, lines, _ int) bool { return lines == np }
		need[fmt.Sprintf("fig27-28-%d", i)] = func(_, lines, _ int) bool { return lines == np }
		if got := dom.Table5[fmt.Sprintf("table5-%d", i)]; got != 1+np {
			t.Errorf("table5-%d has %d rows, want %d", i, got, 1+np)
		}
	}
	for id, ok := range need {
		c, found := dom.Charts[id]
		if !found || !ok(c.Bars, c.Lines, c.Cells) || c.W < 50 || c.H < 50 {
			t.Errorf("chart %s: found %v, %+v", id, found, c)
			continue
		}
		shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("screenshot of %s: %v", id, err)
		}
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatalf("screenshot of %s: %v", id, err)
		}
		if b := img.Bounds(); b.Dx() < int(c.W) || b.Dy() < int(c.H) {
			t.Errorf("screenshot of %s is %v", id, b)
		}
	}
	if len(dom.Charts) != len(need) {
		t.Errorf("charts in the page %d, want %d", len(dom.Charts), len(need))
	}
	if strings.Contains(html.String(), "<script") {
		t.Error("the report has a script")
	}
}
