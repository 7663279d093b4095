package interop_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/migrate"
	"github.com/wayside-archive/wayside/warcio"
)

// TestMigrateOutput crawls a site serving a BMP and a TIFF made by
// ImageMagick, runs `wayside migrate` in both workflows and reads every
// output in warcio.js: each record reads as Wayside's reader reads it and
// its declared digests hold; each conversion record refers to a record
// warcio.js read in the input; the replace workflow's copy holds every
// input record warcio.js read — the same ID, headers and digests — except
// the migrated ones, replaced by records of the same URI.
func TestMigrateOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	var tl migrate.Tools
	im, err := tl.ResolveTool(context.Background(), "imagemagick")
	if err != nil {
		testenv.MissingTool(t, "%v", err)
	}
	dir := t.TempDir()
	site := sitetest.New()
	page := "<html><head><title>legacy</title></head><body>"
	var links []string
	for _, f := range []struct{ name, spec, ctype string }{{"a.bmp", "BMP3:", "image/bmp"}, {"b.tif", "TIFF:", "image/tiff"}} {
		p := filepath.Join(dir, f.name)
		if out, err := exec.Command(im.Path, "-size", "32x24", "gradient:green-white", f.spec+p).CombinedOutput(); err != nil {
			t.Fatalf("imagemagick: %v\n%s", err, out)
		}
		body, _ := os.ReadFile(p)
		site.Add(&sitetest.Resource{Path: "/" + f.name, ContentType: f.ctype, Body: body})
		page += fmt.Sprintf("<img src=%q>", "/"+f.name)
		links = append(links, "/"+f.name)
	}
	site.Add(&sitetest.Resource{Path: "/legacy.html", ContentType: "text/html", Body: []byte(page + "</body></html>"), Links: links})
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	warcDir := filepath.Join(dir, "warcs")
	wayside(t, "crawl", "--warc-dir", warcDir, "--delay", "0", "--quiet", srv.URL+"/legacy.html")
	in := glob(t, filepath.Join(warcDir, "*.warc.gz"))
	conv, repl := filepath.Join(dir, "conv"), filepath.Join(dir, "repl")
	wayside(t, append([]string{"migrate", "-q", "-o", conv}, in...)...)
	wayside(t, append([]string{"migrate", "-q", "-o", repl, "--workflow", "replace"}, in...)...)
	convOut, replOut := glob(t, filepath.Join(conv, "*.warc.gz")), glob(t, filepath.Join(repl, "*.warc.gz"))
	if len(in) != 1 || len(convOut) != 1 || len(replOut) != 1 {
		t.Fatalf("inputs %v, outputs %v %v", in, convOut, replOut)
	}
	recs := js.warcioRecords(t, append(slices.Clone(in), convOut[0], replOut[0]))
	if t.Failed() {
		t.FailNow()
	}
	checkRecords(t, outputSet{name: "migrate", warcs: []string{convOut[0], replOut[0]}}, recs)
	byID := map[string]*jsRecord{}
	for i := range recs[in[0]] {
		byID[recs[in[0]][i].h("WARC-Record-ID")] = &recs[in[0]][i]
	}
	conversions := 0
	migratedIDs := map[string]bool{}
	for _, r := range recs[convOut[0]] {
		if r.h("WARC-Type") != "conversion" {
			continue
		}
		conversions++
		orig := byID[r.h("WARC-Refers-To")]
		switch {
		case orig == nil:
			t.Errorf("conversion of %s refers to %s: warcio.js read no such record in the input", r.h("WARC-Target-URI"), r.h("WARC-Refers-To"))
		case orig.h("WARC-Target-URI") != r.h("WARC-Target-URI"):
			t.Errorf("conversion of %s refers to a record of %s", r.h("WARC-Target-URI"), orig.h("WARC-Target-URI"))
		default:
			migratedIDs[orig.h("WARC-Record-ID")] = true
		}
	}
	if conversions != 2 {
		t.Errorf("%d conversion records, want 2 (the BMP and the TIFF)", conversions)
	}
	outByID := map[string]*jsRecord{}
	replaced := 0
	for i := range recs[replOut[0]] {
		r := &recs[replOut[0]][i]
		outByID[r.h("WARC-Record-ID")] = r
		if r.h("WARC-Type") == "metadata" && strings.Contains(r.h("Content-Type"), "warc-fields") {
			replaced++
		}
	}
	// The page linking the images is rewritten (TestMigrateReplay checks
	// how): a new record of the same URI, not a copy.
	pageURI := srv.URL + "/legacy.html"
	for id, r := range byID {
		o := outByID[id]
		switch {
		case migratedIDs[id] && o != nil:
			t.Errorf("migrated record %s (%s) is still in the replace workflow's copy", id, r.h("WARC-Target-URI"))
		case r.h("WARC-Target-URI") == pageURI && r.h("WARC-Type") == "response":
			if o != nil {
				t.Errorf("the page %s linking the migrated images was copied unchanged", pageURI)
			}
		case !migratedIDs[id] && o == nil:
			t.Errorf("record %s (%s) missing from the replace workflow's copy", id, r.h("WARC-Target-URI"))
		case !migratedIDs[id]:
			checkCopied(t, replOut[0]+" "+id, o, r)
		}
	}
	if replaced != 3 {
		t.Errorf("%d provenance records in the copy, want 3 (two migrations, the page's links)", replaced)
	}
}

// TestMigrateReplay is the pragmatic workflow as a viewer that ignores
// conversion records sees it: a site whose gzip-encoded page shows a BMP
// (src, relative), a TIFF (srcset) and a stylesheet whose url() names the
// BMP is crawled, migrated with --workflow replace, and the copy is loaded
// into wabac.js as ReplayWeb.page loads a WARC file. wabac.js must replay
// a page whose HTML names the new files (a.png, b.png) and not the old
// ones, a stylesheet naming a.png, each new URL with image/png and exactly
// the migrated bytes (a PNG of the original's size, decoded here), and the
// old URLs as 301 redirects to the new ones.
func TestMigrateReplay(t *testing.T) {
	t.Parallel()
	js := tools(t)
	var tl migrate.Tools
	im, err := tl.ResolveTool(context.Background(), "imagemagick")
	if err != nil {
		testenv.MissingTool(t, "%v", err)
	}
	dir := t.TempDir()
	site := sitetest.New()
	for _, f := range []struct{ name, spec, ctype string }{{"a.bmp", "BMP3:", "image/bmp"}, {"b.tif", "TIFF:", "image/tiff"}} {
		p := filepath.Join(dir, f.name)
		if out, err := exec.Command(im.Path, "-size", "32x24", "gradient:green-white", f.spec+p).CombinedOutput(); err != nil {
			t.Fatalf("imagemagick: %v\n%s", err, out)
		}
		body, _ := os.ReadFile(p)
		site.Add(&sitetest.Resource{Path: "/img/" + f.name, ContentType: f.ctype, Body: body})
	}
	site.Add(&sitetest.Resource{Path: "/css/site.css", ContentType: "text/css", Body: []byte("body { background: url(\"../img/a.bmp\") }\n")})
	page := `<!DOCTYPE html><html><head><title>legacy</title><link rel="stylesheet" href="/css/site.css"></head>` +
		`<body><img src="img/a.bmp" alt="a"><img src="img/b.tif" srcset="img/b.tif 1x" alt="b"></body></html>`
	site.Add(&sitetest.Resource{Path: "/legacy.html", ContentType: "text/html; charset=utf-8", Body: []byte(page), Gzip: true,
		Links: []string{"/css/site.css", "/img/a.bmp", "/img/b.tif"}})
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	warcDir := filepath.Join(dir, "warcs")
	wayside(t, "crawl", "--warc-dir", warcDir, "--delay", "0", "--quiet", srv.URL+"/legacy.html")
	in := glob(t, filepath.Join(warcDir, "*.warc.gz"))
	repl := filepath.Join(dir, "repl")
	wayside(t, append([]string{"migrate", "-q", "-o", repl, "--workflow", "replace"}, in...)...)
	out := glob(t, filepath.Join(repl, "*.warc.gz"))
	if len(in) != 1 || len(out) != 1 {
		t.Fatalf("inputs %v, outputs %v", in, out)
	}
	// The migrated payloads as Wayside's reader reads them from the copy.
	r, err := warcio.Open(out[0], warcio.Options{KeepPayload: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	payload := map[string][]byte{}
	dates := map[string]int64{}
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		if rec.Type == "response" {
			payload[rec.TargetURI] = append([]byte(nil), rec.Payload...)
			dates[rec.TargetURI] = rec.Date.UnixMilli()
		}
	}
	r.Close()
	u := func(p string) string { return srv.URL + p }
	type query struct {
		URL string `json:"url"`
		TS  int64  `json:"ts"`
	}
	paths := []string{"/legacy.html", "/css/site.css", "/img/a.png", "/img/b.png", "/img/a.bmp", "/img/b.tif"}
	var qs []query
	for _, p := range paths {
		ts, ok := dates[u(p)]
		if !ok {
			t.Fatalf("the copy holds no response record for %s", u(p))
		}
		qs = append(qs, query{u(p), ts})
	}
	qf := filepath.Join(dir, "queries.json")
	b, _ := json.Marshal(qs)
	os.WriteFile(qf, b, 0o644)
	var got struct {
		Answers []*struct {
			Status      int    `json:"status"`
			ContentType string `json:"contentType"`
			Location    string `json:"location"`
			Length      int    `json:"length"`
			SHA256      string `json:"sha256"`
			Text        string `json:"text"`
		} `json:"answers"`
	}
	js.nodeJSON(t, &got, "replay-get.mjs", append([]string{qf}, out...)...)
	if len(got.Answers) != len(paths) {
		t.Fatalf("wabac.js answered %d of %d requests", len(got.Answers), len(paths))
	}
	for i, a := range got.Answers {
		if a == nil {
			t.Fatalf("wabac.js replays nothing for %s", paths[i])
		}
	}
	html, css := got.Answers[0], got.Answers[1]
	if html.Status != 200 || !strings.Contains(html.Text, `src="img/a.png"`) || !strings.Contains(html.Text, `srcset="img/b.png 1x"`) ||
		!strings.Contains(html.Text, `src="img/b.png"`) || strings.Contains(html.Text, ".bmp") || strings.Contains(html.Text, ".tif") {
		t.Errorf("page as wabac.js replays it (%d):\n%s", html.Status, html.Text)
	}
	if css.Status != 200 || css.Text != "body { background: url(\"../img/a.png\") }\n" {
		t.Errorf("stylesheet as wabac.js replays it (%d): %q", css.Status, css.Text)
	}
	for i, p := range []string{"/img/a.png", "/img/b.png"} {
		a := got.Answers[2+i]
		body := payload[u(p)]
		sum := sha256.Sum256(body)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(body))
		if err != nil || format != "png" || cfg.Width != 32 || cfg.Height != 24 {
			t.Errorf("%s in the copy: %v %s %dx%d", p, err, format, cfg.Width, cfg.Height)
		}
		if a.Status != 200 || !strings.HasPrefix(a.ContentType, "image/png") || a.Length != len(body) || a.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("wabac.js replays %s as %d %s, %d bytes (the copy's PNG has %d)", p, a.Status, a.ContentType, a.Length, len(body))
		}
	}
	for i, p := range []string{"/img/a.bmp", "/img/b.tif"} {
		a := got.Answers[4+i]
		want := u(strings.TrimSuffix(strings.TrimSuffix(p, ".bmp"), ".tif") + ".png")
		if a.Status != 301 || a.Location != want {
			t.Errorf("wabac.js replays %s as %d to %q, want a 301 to %s", p, a.Status, a.Location, want)
		}
	}
}
