package interop_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/migrate"
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
	for id, r := range byID {
		o := outByID[id]
		switch {
		case migratedIDs[id] && o != nil:
			t.Errorf("migrated record %s (%s) is still in the replace workflow's copy", id, r.h("WARC-Target-URI"))
		case !migratedIDs[id] && o == nil:
			t.Errorf("record %s (%s) missing from the replace workflow's copy", id, r.h("WARC-Target-URI"))
		case !migratedIDs[id]:
			checkCopied(t, replOut[0]+" "+id, o, r)
		}
	}
	if replaced != 2 {
		t.Errorf("%d provenance records in the copy, want 2", replaced)
	}
}
