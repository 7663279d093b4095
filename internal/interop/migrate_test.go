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
	"regexp"
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
// BMP is crawled, migrated with --workflow replace (migrateReplaceCopy),
// and the copy is loaded
// into wabac.js as ReplayWeb.page loads a WARC file. wabac.js must replay
// a page whose HTML names the new files (a.png, b.png) and not the old
// ones, a stylesheet naming a.png, each new URL with image/png and exactly
// the migrated bytes (a PNG of the original's size, decoded here), and the
// old URLs as 301 redirects to the new ones.
func TestMigrateReplay(t *testing.T) {
	t.Parallel()
	js := tools(t)
	base, out := migrateReplaceCopy(t)
	// The migrated payloads as Wayside's reader reads them from the copy.
	r, err := warcio.Open(out, warcio.Options{KeepPayload: 16 << 20})
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
	u := func(p string) string { return base + p }
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
	qf := filepath.Join(t.TempDir(), "queries.json")
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
	js.nodeJSON(t, &got, "replay-get.mjs", qf, out)
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
		if sz := migrateImageSizes[p]; err != nil || format != "png" || cfg.Width != sz[0] || cfg.Height != sz[1] {
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

// migrateRWPScript runs in ReplayWeb.page's test page (rwpSession.eval)
// with the migrated page loaded: once the collection is up (rwpReady) it
// waits, bounded, for the replay frame of the page to finish loading with
// every <img> complete and the body's CSS background image fetched by the
// page, then reports each <img>'s currentSrc and natural size, the
// background's URL, the page's own fetch of it (Resource Timing) and the
// natural size of that URL loaded as an image in the frame.
const migrateRWPScript = `(async () => {` + rwpCommonJS + `
  const out = { pages: null, title: "", images: [], background: "", bgFetched: "", bgStatus: -1, bgWidth: 0, bgHeight: 0, errors: [] };
  const ready = await rwpReady(out, false);
  out.pages = ready.pages;
  if (out.pages === null) return JSON.stringify(out);
  let d = null, state = "no replay frame";
  for (let i = 0; i < 600; i++) {
    const f = rwpFind(document);
    if (f && f.readyState === "complete" && f.body) {
      const imgs = Array.from(f.images);
      const bg = f.defaultView.getComputedStyle(f.body).backgroundImage;
      const m = bg.match(/^url\("?(.*?)"?\)$/);
      // wombat.js answers computed styles with the original URL; the
      // page fetched its replay URL, which ends with it.
      const entries = m ? f.defaultView.performance.getEntriesByType("resource").filter((e) => e.name.includes("/replay/w/wayside/") && e.name.endsWith("/" + m[1])) : [];
      state = "replay frame " + f.location.href + ": " + imgs.filter((im) => im.complete).length + " of " + imgs.length + " images complete, background " + bg + " fetched " + entries.length + " times";
      if (imgs.length && imgs.every((im) => im.complete) && entries.length) {
        d = f;
        out.title = f.title;
        out.images = imgs.map((im) => ({ alt: im.alt, currentSrc: im.currentSrc, width: im.naturalWidth, height: im.naturalHeight }));
        out.background = m[1];
        out.bgFetched = entries[0].name;
        out.bgStatus = entries[0].responseStatus;
        break;
      }
    }
    await sleep(200);
  }
  if (!d) { out.errors.push("the replayed page never finished loading: " + state); return JSON.stringify(out); }
  const im = new d.defaultView.Image();
  const loaded = new Promise((res) => { im.onload = () => res("load"); im.onerror = () => res("error"); });
  im.src = out.bgFetched;
  const how = await Promise.race([loaded, sleep(60000).then(() => "timeout")]);
  if (how !== "load") out.errors.push("the background image " + out.bgFetched + " as an image: " + how);
  out.bgWidth = im.naturalWidth;
  out.bgHeight = im.naturalHeight;
  return JSON.stringify(out);
})()`

// TestMigrateReplayWebPage opens the pragmatic workflow's copy
// (migrateReplaceCopy) in ReplayWeb.page itself — the pinned package's
// ui.js and sw.js in headless Chromium, loading the .warc.gz by its URL as
// a user opens a WARC file — at the migrated page, and checks in the
// replayed page: each <img> shows the migrated PNG (its currentSrc is the
// replay of the new .png URL, its natural size the original image's) and
// the stylesheet's background image is the new a.png, fetched by the page
// with status 200 and decoding to the original's size.
func TestMigrateReplayWebPage(t *testing.T) {
	t.Parallel()
	rwp := newRWP(t)
	base, out := migrateReplaceCopy(t)
	rwp.start(t, out, base+"/legacy.html")
	raw := rwp.eval(t, migrateRWPScript)
	var res struct {
		Pages []struct {
			URL string `json:"url"`
		} `json:"pages"`
		Title  string `json:"title"`
		Images []struct {
			Alt        string `json:"alt"`
			CurrentSrc string `json:"currentSrc"`
			Width      int    `json:"width"`
			Height     int    `json:"height"`
		} `json:"images"`
		Background string   `json:"background"`
		BgFetched  string   `json:"bgFetched"`
		BgStatus   int      `json:"bgStatus"`
		BgWidth    int      `json:"bgWidth"`
		BgHeight   int      `json:"bgHeight"`
		Errors     []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatalf("the page's result is not JSON: %v\n%s", err, tail(raw, 2000))
	}
	if len(res.Errors) > 0 {
		t.Fatalf("in the browser: %v", res.Errors)
	}
	if res.Title != "legacy" {
		t.Errorf("ReplayWeb.page shows a page titled %q, want the migrated page %s (legacy)", res.Title, base+"/legacy.html")
	}
	// A replayed URL is the original's after ReplayWeb.page's prefix
	// (/replay/w/COLL/[:FILE/]TIMESTAMP[MODIFIER]/).
	replayed := func(u string) string {
		if m := rwpReplayURL.FindStringSubmatch(u); m != nil {
			return m[1]
		}
		return u
	}
	want := map[string]string{"a": "/img/a.png", "b": "/img/b.png"}
	if len(res.Images) != len(want) {
		t.Fatalf("the replayed page shows %d images, want %d: %+v", len(res.Images), len(want), res.Images)
	}
	for _, im := range res.Images {
		p := want[im.Alt]
		sz := migrateImageSizes[p]
		if replayed(im.CurrentSrc) != base+p || im.Width != sz[0] || im.Height != sz[1] {
			t.Errorf("image %q shows %s at %dx%d, want %s at %dx%d (the original's size)", im.Alt, im.CurrentSrc, im.Width, im.Height, base+p, sz[0], sz[1])
		}
	}
	sz := migrateImageSizes["/img/a.png"]
	if replayed(res.Background) != base+"/img/a.png" || replayed(res.BgFetched) != base+"/img/a.png" || res.BgStatus != 200 || res.BgWidth != sz[0] || res.BgHeight != sz[1] {
		t.Errorf("the page's background is %s, fetched as %s with status %d, %dx%d as an image; want %s, 200, %dx%d",
			res.Background, res.BgFetched, res.BgStatus, res.BgWidth, res.BgHeight, base+"/img/a.png", sz[0], sz[1])
	}
	t.Logf("ReplayWeb.page (Chromium) shows %s from the replace workflow's WARC: images %+v, background %s; %d bytes of WARC sent",
		base+"/legacy.html", res.Images, res.BgFetched, rwp.archiveBytes.Load())
}

// rwpReplayURL matches a URL replayed by ReplayWeb.page; group 1 is the
// original URL.
var rwpReplayURL = regexp.MustCompile(`/replay/w/wayside/(?::[0-9a-f]+/)?[0-9]*[a-z_]*/(.+)$`)

// migrateImageSizes is the size of each image of migrateReplaceCopy's
// site, by the path of its migrated copy; the two differ so that an image
// shown in place of the other is seen.
var migrateImageSizes = map[string][2]int{"/img/a.png": {32, 24}, "/img/b.png": {40, 30}}

// migrateReplaceCopy builds the pragmatic workflow's copy TestMigrateReplay
// and TestMigrateReplayWebPage replay: a site whose gzip-encoded page
// /legacy.html shows a BMP (/img/a.bmp, src, relative), a TIFF
// (/img/b.tif, srcset) made by ImageMagick (sizes in migrateImageSizes)
// and a stylesheet /css/site.css whose url() names the BMP is crawled by
// `wayside crawl` and migrated with `wayside migrate --workflow replace`.
// It returns the site's base URL (the server is stopped) and the copy.
func migrateReplaceCopy(t *testing.T) (base, out string) {
	t.Helper()
	var tl migrate.Tools
	im, err := tl.ResolveTool(context.Background(), "imagemagick")
	if err != nil {
		testenv.MissingTool(t, "%v", err)
	}
	dir := t.TempDir()
	site := sitetest.New()
	for _, f := range []struct{ name, spec, ctype, png string }{{"a.bmp", "BMP3:", "image/bmp", "/img/a.png"}, {"b.tif", "TIFF:", "image/tiff", "/img/b.png"}} {
		p := filepath.Join(dir, f.name)
		sz := migrateImageSizes[f.png]
		if out, err := exec.Command(im.Path, "-size", fmt.Sprintf("%dx%d", sz[0], sz[1]), "gradient:green-white", f.spec+p).CombinedOutput(); err != nil {
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
	outs := glob(t, filepath.Join(repl, "*.warc.gz"))
	if len(in) != 1 || len(outs) != 1 {
		t.Fatalf("inputs %v, outputs %v", in, outs)
	}
	return srv.URL, outs[0]
}
