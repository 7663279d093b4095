package main

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/png"
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

	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/migrate"
	"github.com/wayside-archive/wayside/warcio"
)

// legacyFile is a file of an old format made with the real tool.
type legacyFile struct {
	path, ctype string
	body        []byte
}

// makeLegacyFiles makes real files of the default pathways' source formats
// with ImageMagick, FFmpeg and Ghostscript (the tools the pathways use are
// also the ones that write the old formats), plus a corrupt BMP and a BMP
// "bomb" (a header claiming 30000×30000 pixels over a few bytes).
func makeLegacyFiles(t *testing.T) []legacyFile {
	t.Helper()
	ctx := context.Background()
	var tools migrate.Tools
	get := func(name string) string {
		tl, err := tools.ResolveTool(ctx, name)
		if err != nil {
			testenv.MissingTool(t, "%v", err)
		}
		return tl.Path
	}
	im, ff, gs := get("imagemagick"), get("ffmpeg"), get("ghostscript")
	dir := t.TempDir()
	run := func(prog string, args ...string) {
		t.Helper()
		if out, err := exec.Command(prog, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", prog, args, err, out)
		}
	}
	p := func(n string) string { return filepath.Join(dir, n) }
	run(im, "-size", "64x48", "gradient:red-blue", "-fill", "yellow", "-draw", "circle 20,20 30,30", "BMP3:"+p("a.bmp"))
	run(im, "-size", "40x30", "plasma:fractal", "-seed", "7", "TIFF:"+p("b.tif"))
	run(ff, "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1.5", p("c.wav"))
	run(ff, "-nostdin", "-loglevel", "error", "-y", "-i", p("c.wav"), p("d.aiff"))
	run(ff, "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=1:size=64x48:rate=10",
		"-f", "lavfi", "-i", "sine=duration=1", "-shortest", "-c:v", "flv", "-c:a", "mp3", p("e.flv"))
	run(ff, "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=1:size=64x48:rate=10", "-c:v", "wmv2", p("f.wmv"))
	if err := os.WriteFile(p("g.ps"), []byte("%!PS\n/Helvetica findfont 20 scalefont setfont 72 700 moveto (one) show showpage 72 700 moveto (two) show showpage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(gs, "-q", "-dSAFER", "-dNOPAUSE", "-dBATCH", "-sDEVICE=pdfwrite", "-dCompatibilityLevel=1.3", "-sOutputFile="+p("g.pdf"), p("g.ps"))
	read := func(n string) []byte {
		b, err := os.ReadFile(p(n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bmp := read("a.bmp")
	corrupt := append([]byte(nil), bmp[:200]...) // header intact, pixels cut
	bomb := append([]byte(nil), bmp[:54]...)
	putLE32(bomb[18:], 30000)
	putLE32(bomb[22:], 30000)
	bomb = append(bomb, make([]byte, 64)...)
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("icons/inner.bmp")
	w.Write(bmp)
	zw.Close()
	return []legacyFile{
		{"/old/a.bmp", "image/bmp", bmp},
		{"/old/b.tif", "image/tiff", read("b.tif")},
		{"/old/c.wav", "audio/wav", read("c.wav")},
		{"/old/d.aiff", "audio/aiff", read("d.aiff")},
		{"/old/e.flv", "video/x-flv", read("e.flv")},
		{"/old/f.wmv", "video/x-ms-wmv", read("f.wmv")},
		{"/old/g.pdf", "application/pdf", read("g.pdf")},
		{"/old/corrupt.bmp", "image/bmp", corrupt},
		{"/old/bomb.bmp", "image/bmp", bomb},
		{"/old/icons.zip", "application/zip", zb.Bytes()},
	}
}

func putLE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// crawlLegacySite serves files on a local site with a page linking them
// and crawls it with `wayside crawl`; it returns the WARC files.
func crawlLegacySite(t *testing.T, files []legacyFile) []string {
	t.Helper()
	site := sitetest.New()
	var page strings.Builder
	page.WriteString("<!DOCTYPE html><html><head><title>Old formats</title></head><body>\n")
	var links []string
	for _, f := range files {
		site.Add(&sitetest.Resource{Path: f.path, ContentType: f.ctype, Body: f.body})
		if strings.HasSuffix(f.path, ".bmp") || strings.HasSuffix(f.path, ".tif") {
			fmt.Fprintf(&page, "<img src=%q>\n", f.path)
		} else {
			fmt.Fprintf(&page, "<a href=%q>%s</a>\n", f.path, f.path)
		}
		links = append(links, f.path)
	}
	page.WriteString("</body></html>\n")
	site.Add(&sitetest.Resource{Path: "/old.html", ContentType: "text/html; charset=utf-8", Body: []byte(page.String()), Links: links})
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	warcs := filepath.Join(t.TempDir(), "warcs")
	if out, stderr, err := runCLI(context.Background(), "crawl", "--warc-dir", warcs, "--delay", "0", "--quiet", srv.URL+"/old.html"); err != nil {
		t.Fatalf("crawl: %v\n%s\n%s", err, out, stderr)
	}
	got, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz"))
	if len(got) == 0 {
		t.Fatal("crawl wrote no WARC file")
	}
	return got
}

type migrateReport struct {
	Selected []string          `json:"selected_puids"`
	Outputs  []string          `json:"outputs"`
	Outcomes []migrate.Outcome `json:"outcomes"`
}

func readMigrateReport(t *testing.T, path string) migrateReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r migrateReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// statusByPath maps "PATH[ → member]" to the outcome's status.
func statusByPath(r migrateReport) map[string]string {
	m := map[string]string{}
	for _, oc := range r.Outcomes {
		k := oc.URI[strings.Index(oc.URI, "/old/"):]
		if len(oc.Path) > 0 {
			k += " → " + strings.Join(oc.Path, " → ")
		}
		m[k] = oc.Status
	}
	return m
}

func readAllRecords(t *testing.T, path string) []*warcio.Record {
	t.Helper()
	r, err := warcio.Open(path, warcio.Options{KeepPayload: 64 << 20, BlockDigest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*warcio.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		cp := *rec
		cp.Payload = append([]byte(nil), rec.Payload...)
		out = append(out, &cp)
	}
}

// TestMigrateEndToEnd crawls a local site of real legacy files and runs
// `wayside migrate` in both workflows: exactly the at-risk objects are
// located through the store (the WAV and PDF rate below the default
// threshold; the BMP inside the ZIP is located as nested), the good ones
// are converted and validated, the corrupt and bomb BMPs are reported
// failed with nothing written for them, and the outputs hold what the
// workflows promise.
func TestMigrateEndToEnd(t *testing.T) {
	files := makeLegacyFiles(t)
	warcs := crawlLegacySite(t, files)
	before := map[string][]byte{}
	for _, w := range warcs {
		b, _ := os.ReadFile(w)
		before[w] = b
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	out := filepath.Join(dir, "conv")
	rep := filepath.Join(dir, "conv.json")
	// Conversions must be dated in a later second than the crawl (14-digit
	// timestamps): wait for the clock's next second, bounded.
	for start := time.Now().Unix(); time.Now().Unix() == start; {
		time.Sleep(10 * time.Millisecond)
	}
	args := append([]string{"migrate", "-o", out, "--store", store, "--report", rep}, warcs...)
	stdout, stderr, err := runCLI(context.Background(), args...)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("migrate with failing objects: err %v (want exit 1)\n%s\n%s", err, stdout, stderr)
	}
	r := readMigrateReport(t, rep)
	want := map[string]string{
		"/old/a.bmp": migrate.StatusMigrated, "/old/b.tif": migrate.StatusMigrated, "/old/d.aiff": migrate.StatusMigrated,
		"/old/e.flv": migrate.StatusMigrated, "/old/f.wmv": migrate.StatusMigrated,
		"/old/corrupt.bmp": migrate.StatusFailed, "/old/bomb.bmp": migrate.StatusFailed,
		"/old/icons.zip → icons/inner.bmp": migrate.StatusMigrated,
	}
	got := statusByPath(r)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outcomes:\n got %v\nwant %v", got, want)
	}
	for _, name := range []string{"corrupt.bmp", "bomb.bmp"} {
		if !strings.Contains(stderr, name) {
			t.Errorf("stderr does not name %s:\n%s", name, stderr)
		}
	}
	for _, w := range warcs {
		if b, _ := os.ReadFile(w); !bytes.Equal(b, before[w]) {
			t.Fatalf("input %s changed", w)
		}
	}
	// The conversion file: one conversion and one provenance record per
	// migrated object, each referring to an original record of the input.
	if len(r.Outputs) != 1 {
		t.Fatalf("outputs %v", r.Outputs)
	}
	originals := map[string]*warcio.Record{}
	for _, w := range warcs {
		for _, rec := range readAllRecords(t, w) {
			originals[rec.RecordID] = rec
		}
	}
	conv := readAllRecords(t, r.Outputs[0])
	types := map[string]int{}
	convIDs := map[string]bool{}
	for _, rec := range conv {
		types[rec.Type]++
		if rec.BlockDigest != "" && rec.Headers.Get("WARC-Block-Digest") != "" && !strings.EqualFold(rec.BlockDigest, rec.Headers.Get("WARC-Block-Digest")) {
			t.Errorf("%s: block digest %s, header %s", rec.RecordID, rec.BlockDigest, rec.Headers.Get("WARC-Block-Digest"))
		}
		switch rec.Type {
		case "conversion":
			convIDs[rec.RecordID] = true
			orig := originals[rec.Headers.Get("WARC-Refers-To")]
			if orig == nil {
				t.Errorf("conversion %s refers to %q: no such record in the input", rec.TargetURI, rec.Headers.Get("WARC-Refers-To"))
				continue
			}
			if orig.TargetURI != rec.TargetURI {
				t.Errorf("conversion of %s has target %s", orig.TargetURI, rec.TargetURI)
			}
			if rec.PayloadDigest != rec.Headers.Get("WARC-Payload-Digest") {
				t.Errorf("conversion %s: payload digest %s, header %s", rec.TargetURI, rec.PayloadDigest, rec.Headers.Get("WARC-Payload-Digest"))
			}
		case "metadata":
			if !convIDs[rec.Headers.Get("WARC-Refers-To")] {
				t.Errorf("provenance record refers to %q, not a conversion record before it", rec.Headers.Get("WARC-Refers-To"))
			}
			for _, f := range []string{"pathway: ", "tool: ", "migrated-from: <urn:uuid:", "validation: width", "validation: format"} {
				if strings.Contains(rec.TargetURI, ".bmp") && !bytes.Contains(rec.Payload, []byte(f)) {
					t.Errorf("provenance of %s lacks %q:\n%s", rec.TargetURI, f, rec.Payload)
				}
			}
		}
	}
	if types["conversion"] != 6 || types["metadata"] != 6 || types["warcinfo"] != 1 {
		t.Errorf("conversion file holds %v, want 6 conversion, 6 metadata, 1 warcinfo", types)
	}
	// The zip's conversion is the zip rebuilt: the member under its name,
	// now a PNG of the same size.
	for _, rec := range conv {
		if rec.Type != "conversion" || !strings.HasSuffix(rec.TargetURI, "/old/icons.zip") {
			continue
		}
		zr, err := zip.NewReader(bytes.NewReader(rec.Payload), int64(len(rec.Payload)))
		if err != nil || len(zr.File) != 1 || zr.File[0].Name != "icons/inner.bmp" {
			t.Fatalf("zip conversion: %v %v", err, zr)
		}
		rc, _ := zr.File[0].Open()
		b, _ := io.ReadAll(rc)
		if cfg, format, err := image.DecodeConfig(bytes.NewReader(b)); err != nil || format != "png" || cfg.Width != 64 || cfg.Height != 48 {
			t.Errorf("migrated zip member: %v %s %dx%d", err, format, cfg.Width, cfg.Height)
		}
	}

	// Re-ingest: the output's migrated formats are in the store.
	st, err := characterize.OpenStore(store, characterize.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hits := st.Risk("fmt/11", "fmt/279", "fmt/573")
	st.Close()
	if len(hits) != 1 || hits[0].File != filepath.Base(r.Outputs[0]) {
		t.Errorf("store after migrate: files holding PNG, FLAC or WebM = %v, want the conversion file", hits)
	}

	// A re-run keeps the complete output and migrates nothing again.
	prev, _ := os.ReadFile(r.Outputs[0])
	if _, stderr, err := runCLI(context.Background(), args...); err != nil && !strings.Contains(stderr, "exists: kept") {
		t.Fatalf("re-run: %v\n%s", err, stderr)
	}
	if b, _ := os.ReadFile(r.Outputs[0]); !bytes.Equal(b, prev) {
		t.Error("re-run changed a complete output")
	}

	// The replace workflow: migrated records replaced, every other record
	// byte-identical, provenance after each replacement.
	out2 := filepath.Join(dir, "repl")
	rep2 := filepath.Join(dir, "repl.json")
	_, stderr, err = runCLI(context.Background(), append([]string{"migrate", "-o", out2, "--store", store, "--report", rep2,
		"--workflow", "replace", "--puid", "fmt/353,fmt/141,fmt/17"}, warcs...)...)
	if err != nil {
		t.Fatalf("replace workflow: %v\n%s", err, stderr)
	}
	r2 := readMigrateReport(t, rep2)
	if len(r2.Outputs) != 1 {
		t.Fatalf("replace outputs %v", r2.Outputs)
	}
	migrated := map[int64]bool{}
	for _, oc := range r2.Outcomes {
		if oc.Status == migrate.StatusMigrated {
			migrated[oc.Offset] = true
		}
	}
	if len(migrated) != 3 {
		t.Errorf("replace workflow migrated %d records, want 3 (b.tif, c.wav, g.pdf): %v", len(migrated), statusByPath(r2))
	}
	// b.tif and c.wav get new names (and the page's links follow); the PDF
	// stays a .pdf.
	host := r2.Outcomes[0].URI[:strings.Index(r2.Outcomes[0].URI, "/old/")]
	renames := map[string]string{host + "/old/b.tif": host + "/old/b.png", host + "/old/c.wav": host + "/old/c.flac"}
	got2 := checkReplaced(t, warcs[0], r2.Outputs[0], migrated, renames)
	if p := got2[host+"/old/b.png"]; p == nil || p.MIME != "image/png" {
		t.Errorf("replace workflow: no image/png record at %s/old/b.png", host)
	}

	// Access: the daemon indexes the conversion as a later capture of the
	// same URI (as pywb does): the TimeGate's latest memento is the
	// migrated PNG, while id_ of the original capture stays byte-exact.
	checkConversionReplay(t, warcs[0], r.Outputs[0], files[0])
}

func checkConversionReplay(t *testing.T, warc, conv string, bmp legacyFile) {
	t.Helper()
	watch := t.TempDir()
	testenv.CopyFiles(t, watch, warc, conv)
	sock := serveInTest(t, "--watch", watch, "--poll", "50ms", "--log-level", "warn")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var origURI string
	for _, rec := range readAllRecords(t, warc) {
		if rec.Type == "response" && strings.HasSuffix(rec.TargetURI, bmp.path) {
			origURI = rec.TargetURI
		}
	}
	var convRec *warcio.Record
	for _, rec := range readAllRecords(t, conv) {
		if rec.Type == "conversion" && rec.TargetURI == origURI {
			convRec = rec
		}
	}
	if convRec == nil {
		t.Fatalf("no conversion record of %s", origURI)
	}
	try := func(path string) (*http.Response, []byte, error) {
		resp, err := hc.Get("http://wayside" + path)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	get := func(path string) (*http.Response, []byte) {
		resp, b, err := try(path)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	// Wait (bounded) until both captures are indexed.
	var tm string
	for deadline := time.Now().Add(2 * time.Minute); ; {
		resp, body, err := try("/default/timemap/link/" + origURI)
		tm = string(body)
		if err == nil && resp.StatusCode == 200 && strings.Count(tm, `rel="memento"`)+strings.Count(tm, `rel="first memento"`)+strings.Count(tm, `rel="last memento"`) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not index both captures of %s:\n%s", origURI, tm)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, _ := get("/default/21000101000000id_/" + origURI)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 302 || !strings.Contains(loc, convRec.Date.UTC().Format("20060102150405")+"id_/") {
		t.Fatalf("TimeGate for the latest memento: %d %s, want the conversion dated %s", resp.StatusCode, loc, convRec.Date)
	}
	resp, body := get(strings.TrimPrefix(loc, "http://wayside"))
	if resp.StatusCode != 200 || !bytes.Equal(body, convRec.Payload) || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("latest memento: %d %s, %d bytes (conversion holds %d)", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), len(convRec.Payload))
	}
	var orig *warcio.Record
	for _, rec := range readAllRecords(t, warc) {
		if rec.RecordID == convRec.Headers.Get("WARC-Refers-To") {
			orig = rec
		}
	}
	resp, body = get("/default/" + orig.Date.UTC().Format("20060102150405") + "id_/" + origURI)
	if resp.StatusCode != 200 || !bytes.Equal(body, bmp.body) {
		t.Errorf("id_ of the original: %d, %d bytes, byte-exact %v", resp.StatusCode, len(body), bytes.Equal(body, bmp.body))
	}
}

// checkReplaced checks the replace workflow's output against its input
// with raw bytes: every record neither migrated nor linking to a renamed
// object is byte-identical (same gzip member); each migrated one is
// replaced by a record of the same date at its new URI (renames: old URI
// → new; the same URI when absent), then, when renamed, a 301 redirect
// from the old URI, then its provenance; each HTML record linking to a
// renamed object is the same document with exactly those links changed
// (the old URI strings replaced by the new ones in the test's pages),
// followed by its provenance. It returns the output's records by URI.
func checkReplaced(t *testing.T, in, out string, migrated map[int64]bool, renames map[string]string) map[string]*warcio.Record {
	t.Helper()
	inRecs, outRecs := readAllRecords(t, in), readAllRecords(t, out)
	inRaw, _ := os.ReadFile(in)
	outRaw, _ := os.ReadFile(out)
	byURI := map[string]*warcio.Record{}
	for _, o := range outRecs {
		if o.Type == "response" || o.Type == "resource" {
			byURI[o.TargetURI] = o
		}
	}
	j := 0
	provenance := func(of *warcio.Record, want string) {
		t.Helper()
		if j >= len(outRecs) || outRecs[j].Type != "metadata" || outRecs[j].Headers.Get("WARC-Refers-To") != of.RecordID ||
			!bytes.Contains(outRecs[j].Payload, []byte(want)) {
			t.Errorf("new record of %s is not followed by its provenance (with %q)", of.TargetURI, want)
			return
		}
		j++
	}
	for _, rec := range inRecs {
		if j >= len(outRecs) {
			t.Fatalf("output ends before input record at %d", rec.Offset)
		}
		o := outRecs[j]
		j++
		if migrated[rec.Offset] {
			newURI := rec.TargetURI
			if n, ok := renames[rec.TargetURI]; ok {
				newURI = n
			}
			if o.TargetURI != newURI || !o.Date.Equal(rec.Date) || o.Type != rec.Type {
				t.Errorf("replacement of %s %s: got %s %s %s, want URI %s", rec.TargetURI, rec.Date, o.Type, o.TargetURI, o.Date, newURI)
			}
			if o.PayloadDigest != o.Headers.Get("WARC-Payload-Digest") || o.PayloadDigest == rec.PayloadDigest {
				t.Errorf("replacement of %s: payload digest %s (header %s, original %s)", rec.TargetURI, o.PayloadDigest, o.Headers.Get("WARC-Payload-Digest"), rec.PayloadDigest)
			}
			if newURI != rec.TargetURI {
				if j >= len(outRecs) {
					t.Fatalf("output ends after the replacement of %s", rec.TargetURI)
				}
				rd := outRecs[j]
				j++
				if rd.Type != "response" || rd.TargetURI != rec.TargetURI || rd.HTTP == nil || rd.HTTP.Status != 301 ||
					rd.HTTP.Header.Get("Location") != newURI || !rd.Date.Equal(rec.Date) {
					t.Errorf("replacement of %s is not followed by a 301 to %s: %s %s", rec.TargetURI, newURI, rd.Type, rd.TargetURI)
				}
				provenance(o, "renamed-from: "+rec.TargetURI)
			} else {
				provenance(o, "migrated-from: "+rec.RecordID)
			}
			continue
		}
		if bytes.Equal(inRaw[rec.Offset:rec.Offset+rec.Length], outRaw[o.Offset:o.Offset+o.Length]) {
			continue
		}
		// Not a copy: it must be an HTML page with links rewritten.
		if rec.MIME != "text/html" || o.TargetURI != rec.TargetURI || !o.Date.Equal(rec.Date) {
			t.Errorf("record %s (%s) at %d not copied byte for byte", rec.RecordID, rec.TargetURI, rec.Offset)
			continue
		}
		want := string(rec.Payload)
		for old, n := range renames {
			want = strings.ReplaceAll(want, `"`+old[strings.Index(old, "/old/"):]+`"`, `"`+n[strings.Index(n, "/old/"):]+`"`)
		}
		if string(o.Payload) != want || want == string(rec.Payload) {
			t.Errorf("page %s rewritten:\n%s\nwant\n%s", rec.TargetURI, o.Payload, want)
		}
		if o.PayloadDigest != o.Headers.Get("WARC-Payload-Digest") || o.HTTP == nil || o.HTTP.Header.Get("Content-Length") != strconv.Itoa(len(o.Payload)) {
			t.Errorf("page %s: payload digest %s (header %s), Content-Length %s for %d bytes", rec.TargetURI, o.PayloadDigest,
				o.Headers.Get("WARC-Payload-Digest"), o.HTTP.Header.Get("Content-Length"), len(o.Payload))
		}
		provenance(o, "links-rewritten-from: "+rec.RecordID)
	}
	if j != len(outRecs) {
		t.Errorf("output has %d records after the input's end", len(outRecs)-j)
	}
	return byURI
}

func exitCode(err error) int {
	var buf bytes.Buffer
	return report(&buf, err, false)
}

// Crash children: the test binary re-executed runs one command.
const (
	cliChildEnv   = "WAYSIDE_TEST_CLI_ARGS"   // the command's arguments, JSON
	failpointsEnv = "WAYSIDE_TEST_FAILPOINTS" // failpoint.Arm spec
)

func runCLIChild(argsJSON string) int {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if spec := os.Getenv(failpointsEnv); spec != "" {
		if _, err := failpoint.Arm(spec); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
	}
	// As the process runs it: a signal cancels the command (serve tests).
	return runProcess(args, &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
}

// TestMigrateKilled kills `wayside migrate` (SIGKILL at a failpoint while it
// writes its first output) and checks that the inputs are intact, that
// OUTDIR holds nothing but complete files, and that a re-run finishes with
// the outputs of an uninterrupted run.
func TestMigrateKilled(t *testing.T) {
	files := makeLegacyFiles(t)[:2] // a.bmp, b.tif: both migrate
	warcs := crawlLegacySite(t, files)
	in := t.TempDir()
	a := testenv.CopyFiles(t, in, warcs[0])[0]
	b := filepath.Join(in, "SECOND-"+filepath.Base(a))
	raw, _ := os.ReadFile(a)
	os.WriteFile(b, raw, 0o644)
	inputs := []string{a, b}
	dir := t.TempDir()
	outKilled, outClean := filepath.Join(dir, "killed"), filepath.Join(dir, "clean")
	args := func(out string) []string {
		return append([]string{"migrate", "-q", "-o", out}, inputs...)
	}
	js, _ := json.Marshal(args(outKilled))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), cliChildEnv+"="+string(js), failpointsEnv+"=migrate.write-record=2*kill")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v (want killed)\n%s", err, stderr.String())
	}
	for _, p := range inputs {
		if b, _ := os.ReadFile(p); !bytes.Equal(b, raw) {
			t.Fatalf("input %s changed by the killed run", p)
		}
	}
	ents, _ := os.ReadDir(outKilled)
	for _, e := range ents {
		if e.Name() != ".wayside-migrate-work" {
			t.Errorf("the killed run left %s in OUTDIR", e.Name())
		}
	}
	if _, stderr, err := runCLI(context.Background(), args(outKilled)...); err != nil {
		t.Fatalf("re-run: %v\n%s", err, stderr)
	}
	if _, stderr, err := runCLI(context.Background(), args(outClean)...); err != nil {
		t.Fatalf("clean run: %v\n%s", err, stderr)
	}
	summary := func(out string) []string {
		var s []string
		ents, _ := os.ReadDir(out)
		for _, e := range ents {
			if e.IsDir() {
				t.Errorf("%s left in %s", e.Name(), out)
				continue
			}
			s = append(s, "file "+e.Name())
			if strings.HasSuffix(e.Name(), ".warc.gz") {
				for _, r := range readAllRecords(t, filepath.Join(out, e.Name())) {
					s = append(s, r.Type+" "+r.TargetURI+" "+r.Headers.Get("WARC-Refers-To")+" "+r.PayloadDigest)
				}
			}
		}
		return s
	}
	got, want := summary(outKilled), summary(outClean)
	if fmt.Sprint(got) != fmt.Sprint(want) || len(want) < 8 {
		t.Errorf("after kill and re-run:\n%s\nuninterrupted:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// warcToARC writes the response records of a WARC file as an ARC v1 file
// (filedesc record first; one gzip member per record when gz), as ARC
// crawlers wrote them: the URL line, then the HTTP response as received.
func warcToARC(t *testing.T, warc, arc string, gz bool, version int) {
	t.Helper()
	var blocks []*bytes.Buffer
	r, err := warcio.Open(warc, warcio.Options{BlockSink: func() io.Writer {
		b := &bytes.Buffer{}
		blocks = append(blocks, b)
		return b
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	add := func(rec []byte) {
		if !gz {
			out.Write(rec)
			return
		}
		mw, _ := warcio.NewMemberWriter(6)
		if _, err := mw.WriteMember(&out, rec); err != nil {
			t.Fatal(err)
		}
	}
	if version == 2 {
		desc := "2 0 Wayside test\nURL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n"
		add([]byte(fmt.Sprintf("filedesc://%s 0.0.0.0 20240301080000 text/plain 200 - - 0 %s %d\n%s\n", filepath.Base(arc), filepath.Base(arc), len(desc), desc)))
	} else {
		desc := "1 0 Wayside test\nURL IP-address Archive-date Content-type Archive-length\n"
		add([]byte(fmt.Sprintf("filedesc://%s 0.0.0.0 20240301080000 text/plain %d\n%s\n", filepath.Base(arc), len(desc), desc)))
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Type != "response" {
			continue
		}
		block := blocks[len(blocks)-1].Bytes()
		line := fmt.Sprintf("%s 127.0.0.1 %s %s %d\n", rec.TargetURI, rec.Date.UTC().Format("20060102150405"), rec.MIME, len(block))
		if version == 2 {
			line = fmt.Sprintf("%s 127.0.0.1 %s %s %d - - %d %s %d\n", rec.TargetURI, rec.Date.UTC().Format("20060102150405"), rec.MIME,
				rec.HTTP.Status, out.Len(), filepath.Base(arc), len(block))
		}
		add(append(append([]byte(line), block...), '\n'))
	}
	if err := os.WriteFile(arc, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateReplaceARC runs the replace workflow on ARC files (v1 gzip
// and plain, v2 gzip), which cannot hold conversion records: the copy is an ARC file
// in which the BMP and TIFF are PNG records at a.png and b.png, their old
// URLs 301 redirects to them, the page's links point at the new names,
// and every other record is the input's, byte for byte.
func TestMigrateReplaceARC(t *testing.T) {
	files := makeLegacyFiles(t)[:2] // a.bmp, b.tif
	warcs := crawlLegacySite(t, files)
	for _, c := range []struct {
		gz      bool
		version int
	}{{true, 1}, {false, 1}, {true, 2}} {
		name := "legacy.arc"
		if c.gz {
			name += ".gz"
		}
		gz := c.gz
		t.Run(fmt.Sprintf("v%d-%s", c.version, name), func(t *testing.T) {
			in := filepath.Join(t.TempDir(), name)
			warcToARC(t, warcs[0], in, gz, c.version)
			raw, _ := os.ReadFile(in)
			out := filepath.Join(t.TempDir(), "out")
			rep := filepath.Join(t.TempDir(), "rep.json")
			if _, stderr, err := runCLI(context.Background(), "migrate", "-q", "-o", out, "--workflow", "replace", "--report", rep, in); err != nil {
				t.Fatalf("migrate: %v\n%s", err, stderr)
			}
			if b, _ := os.ReadFile(in); !bytes.Equal(b, raw) {
				t.Fatal("input changed")
			}
			r := readMigrateReport(t, rep)
			if len(r.Outputs) != 1 || filepath.Base(r.Outputs[0]) != "legacy.migrated.arc.gz" {
				t.Fatalf("outputs %v, want legacy.migrated.arc.gz", r.Outputs)
			}
			inRecs, outRecs := readAllRecords(t, in), readAllRecords(t, r.Outputs[0])
			outRaw, _ := os.ReadFile(r.Outputs[0])
			host := ""
			for _, rec := range inRecs {
				if i := strings.Index(rec.TargetURI, "/old/"); i > 0 {
					host = rec.TargetURI[:i]
				}
			}
			byURI := map[string]*warcio.Record{}
			for _, o := range outRecs {
				if o.ARC == nil || o.ARC.Version != c.version {
					t.Fatalf("output record %s is not an ARC v%d record: %+v", o.TargetURI, c.version, o.ARC)
				}
				// New v2 records declare where they are (copied ones keep
				// their input's line, byte for byte).
				if c.version == 2 && strings.HasSuffix(o.TargetURI, ".png") && o.ARC.Offset != strconv.FormatInt(o.Offset, 10) {
					t.Errorf("ARC v2 record %s at %d declares offset %s", o.TargetURI, o.Offset, o.ARC.Offset)
				}
				byURI[o.TargetURI] = o
			}
			if len(outRecs) != len(inRecs)+2 {
				t.Errorf("output holds %d records, want the input's %d and two redirects", len(outRecs), len(inRecs))
			}
			for _, rec := range inRecs {
				o := byURI[rec.TargetURI]
				switch {
				case rec.TargetURI == "":
					o = outRecs[0] // filedesc
				case strings.HasSuffix(rec.TargetURI, "/old.html"):
					want := strings.NewReplacer(`"/old/a.bmp"`, `"/old/a.png"`, `"/old/b.tif"`, `"/old/b.png"`).Replace(string(rec.Payload))
					if o == nil || string(o.Payload) != want || want == string(rec.Payload) || o.ARC.Date != rec.ARC.Date {
						t.Errorf("page in the ARC copy:\n%s\nwant\n%s", o.Payload, want)
					}
					continue
				case strings.HasSuffix(rec.TargetURI, ".bmp") || strings.HasSuffix(rec.TargetURI, ".tif"):
					newURI := strings.TrimSuffix(strings.TrimSuffix(rec.TargetURI, ".bmp"), ".tif") + ".png"
					n := byURI[newURI]
					if n == nil || n.ARC.ContentType != "image/png" || n.MIME != "image/png" || n.ARC.Date != rec.ARC.Date {
						t.Errorf("no image/png ARC record at %s: %+v", newURI, n)
					} else if cfg, format, err := image.DecodeConfig(bytes.NewReader(n.Payload)); err != nil || format != "png" || cfg.Width == 0 {
						t.Errorf("%s: %v %s", newURI, err, format)
					}
					if o == nil || o.HTTP == nil || o.HTTP.Status != 301 || o.HTTP.Header.Get("Location") != newURI {
						t.Errorf("%s in the copy is not a 301 to %s", rec.TargetURI, newURI)
					}
					continue
				}
				if o == nil {
					t.Errorf("record %q missing from the copy", rec.TargetURI)
					continue
				}
				// Copied: the same bytes (the record's own gzip member; a
				// plain ARC's record compressed as one member).
				got := outRaw[o.Offset : o.Offset+o.Length]
				want := raw[rec.Offset : rec.Offset+rec.Length]
				if !gz {
					zr, err := gzip.NewReader(bytes.NewReader(got))
					if err != nil {
						t.Fatal(err)
					}
					got, _ = io.ReadAll(zr)
					want = append(want[:len(want):len(want)], '\n')
				}
				if !bytes.Equal(got, want) {
					t.Errorf("record %q not copied byte for byte", rec.TargetURI)
				}
			}
			if host == "" {
				t.Fatal("no /old/ records in the ARC")
			}
		})
	}
}

// makeOfficeFiles makes old office documents with LibreOffice itself (the
// converter of their pathways writes the old formats too): a Word 97
// document of three pages and an RTF file of two, from HTML with page
// breaks; an Excel 97 workbook from CSV; a PowerPoint 97 presentation of
// two slides from a flat ODF presentation.
func makeOfficeFiles(t *testing.T) []legacyFile {
	t.Helper()
	var tools migrate.Tools
	lo, err := tools.ResolveTool(context.Background(), "libreoffice")
	if err != nil {
		testenv.MissingTool(t, "%v", err)
	}
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	write := func(n, s string) {
		if err := os.WriteFile(p(n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	br := `<p style="page-break-before: always">`
	write("three.html", "<html><body><h1>One</h1><p>first page</p>"+br+"second page</p>"+br+"third page</p></body></html>")
	write("two.html", "<html><body><h1>One</h1><p>first page</p>"+br+"second page</p></body></html>")
	write("table.csv", "year,count\n1997,3\n2003,5\n")
	write("slides.fodp", `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:body><office:presentation>
<draw:page draw:name="one"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="10cm" svg:height="3cm"><draw:text-box><text:p>Slide one</text:p></draw:text-box></draw:frame></draw:page>
<draw:page draw:name="two"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="10cm" svg:height="3cm"><draw:text-box><text:p>Slide two</text:p></draw:text-box></draw:frame></draw:page>
</office:presentation></office:body></office:document>
`)
	out := p("out")
	for _, c := range [][2]string{{"doc:MS Word 97", "three.html"}, {"rtf:Rich Text Format", "two.html"}, {"xls:MS Excel 97", "table.csv"}, {"ppt:MS PowerPoint 97", "slides.fodp"}} {
		cmd := exec.Command(lo.Path, "--headless", "--norestore", "--nolockcheck", "-env:UserInstallation=file://"+p("profile"),
			"--convert-to", c[0], "--outdir", out, p(c[1]))
		cmd.Env = append(os.Environ(), "HOME="+dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("libreoffice --convert-to %s %s: %v\n%s", c[0], c[1], err, b)
		}
	}
	read := func(n string) []byte {
		b, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			t.Fatalf("libreoffice wrote no %s: %v", n, err)
		}
		return b
	}
	return []legacyFile{
		{"/old/three.doc", "application/msword", read("three.doc")},
		{"/old/two.rtf", "application/rtf", read("two.rtf")},
		{"/old/table.xls", "application/vnd.ms-excel", read("table.xls")},
		{"/old/slides.ppt", "application/vnd.ms-powerpoint", read("slides.ppt")},
	}
}

// TestMigrateOffice crawls old office documents made by LibreOffice and
// migrates them with the default LibreOffice pathways, in the sandbox:
// each becomes a PDF/A-2b (identified as fmt/477) with the page count of
// a plain rendering of the source (3, 2, 1 and 2), recorded in the
// provenance.
func TestMigrateOffice(t *testing.T) {
	files := makeOfficeFiles(t)
	warcs := crawlLegacySite(t, files)
	dir := t.TempDir()
	out, rep := filepath.Join(dir, "out"), filepath.Join(dir, "rep.json")
	stdout, stderr, err := runCLI(context.Background(), append([]string{"migrate", "-o", out, "--report", rep}, warcs...)...)
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, stdout, stderr)
	}
	r := readMigrateReport(t, rep)
	want := map[string]string{"/old/three.doc": "3", "/old/two.rtf": "2", "/old/table.xls": "1", "/old/slides.ppt": "2"}
	if len(r.Outcomes) != len(want) {
		t.Errorf("outcomes %v, want the four documents", statusByPath(r))
	}
	for _, oc := range r.Outcomes {
		path := oc.URI[strings.Index(oc.URI, "/old/"):]
		pages, ok := want[path]
		if !ok || oc.Status != migrate.StatusMigrated || oc.Validation == nil || oc.Validation.ResultPUID != "fmt/477" {
			t.Errorf("%s (%s): %s %s, result %+v", path, oc.PUID, oc.Status, oc.Reason, oc.Validation)
			continue
		}
		found := false
		for _, c := range oc.Validation.Checks {
			if c.Property == "pages" {
				found = true
				if c.Source != pages || c.Result != pages || !c.OK {
					t.Errorf("%s: pages %s → %s, want %s", path, c.Source, c.Result, pages)
				}
			}
		}
		if !found {
			t.Errorf("%s: no page count compared: %+v", path, oc.Validation.Checks)
		}
	}
	conv := readAllRecords(t, r.Outputs[0])
	n := 0
	for _, rec := range conv {
		if rec.Type == "conversion" {
			n++
			if !bytes.HasPrefix(rec.Payload, []byte("%PDF-")) || !bytes.Contains(rec.Payload, []byte("pdfaid:part")) {
				t.Errorf("conversion of %s is not a PDF/A", rec.TargetURI)
			}
		}
		if rec.Type == "metadata" && !bytes.Contains(rec.Payload, []byte("tool: libreoffice (LibreOffice")) {
			t.Errorf("provenance of %s does not name LibreOffice and its version:\n%s", rec.TargetURI, rec.Payload)
		}
	}
	if n != 4 {
		t.Errorf("%d conversion records, want 4", n)
	}
}

// zipOf makes a zip of members (name, body), deflated or stored.
func zipOf(t *testing.T, store bool, members ...[2][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range members {
		h := &zip.FileHeader{Name: string(m[0]), Method: zip.Deflate}
		if store {
			h.Method = zip.Store
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m[1])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// unzipMember returns the member name of the zip z.
func unzipMember(t *testing.T, z []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			rc, _ := f.Open()
			b, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no member %s", name)
	return nil
}

// TestMigrateNestedZips migrates a BMP in a ZIP in a ZIP (beside a TIFF in
// the outer ZIP): the outer zip's conversion holds the TIFF as a PNG and
// the inner zip rebuilt with the BMP as a PNG, every other member byte for
// byte. With --max-depth 1 (the store located the BMP at depth 2 in an
// earlier run) the BMP is reported as beyond the limit and the TIFF still
// migrated; with --max-unpacked-mb 1 the inner zip (1.5 MB
// unpacked) is over the budget, the BMP reported with the limit, the TIFF
// still migrated.
func TestMigrateNestedZips(t *testing.T) {
	legacy := makeLegacyFiles(t)
	bmp, tif := legacy[0].body, legacy[1].body
	pad := make([]byte, 1536<<10)
	for i := range pad {
		pad[i] = byte(i*7919 + i>>8*31) // not compressible to a ratio a bomb check would refuse
	}
	inner := zipOf(t, true, [2][]byte{[]byte("pad.bin"), pad}, [2][]byte{[]byte("icons/a.bmp"), bmp})
	outer := zipOf(t, false, [2][]byte{[]byte("b.tif"), tif}, [2][]byte{[]byte("inner.zip"), inner}, [2][]byte{[]byte("readme.txt"), []byte("two levels\n")})
	warcs := crawlLegacySite(t, []legacyFile{{"/old/deep.zip", "application/zip", outer}})
	dir := t.TempDir()
	migrateRun := func(name string, extra ...string) (migrateReport, error, string) {
		out, rep := filepath.Join(dir, name), filepath.Join(dir, name+".json")
		// One store for all runs: characterized at the default depth by the
		// first, so that later runs with a lower --max-depth still locate
		// the deep object (as a store built earlier would).
		_, stderr, err := runCLI(context.Background(), append(append([]string{"migrate", "-o", out, "--store", filepath.Join(dir, "store"), "--report", rep}, extra...), warcs...)...)
		return readMigrateReport(t, rep), err, stderr
	}
	r, err, stderr := migrateRun("default")
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, stderr)
	}
	got := statusByPath(r)
	want := map[string]string{"/old/deep.zip → b.tif": migrate.StatusMigrated, "/old/deep.zip → inner.zip → icons/a.bmp": migrate.StatusMigrated}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	var conv *warcio.Record
	for _, rec := range readAllRecords(t, r.Outputs[0]) {
		if rec.Type == "conversion" {
			if conv != nil {
				t.Fatal("more than one conversion record for one zip")
			}
			conv = rec
		}
	}
	if conv == nil {
		t.Fatal("no conversion record")
	}
	isPNG := func(what string, b []byte, w, h int) {
		t.Helper()
		if cfg, format, err := image.DecodeConfig(bytes.NewReader(b)); err != nil || format != "png" || cfg.Width != w || cfg.Height != h {
			t.Errorf("%s: %v %s %dx%d, want a %dx%d PNG", what, err, format, cfg.Width, cfg.Height, w, h)
		}
	}
	isPNG("b.tif", unzipMember(t, conv.Payload, "b.tif"), 40, 30)
	newInner := unzipMember(t, conv.Payload, "inner.zip")
	isPNG("inner.zip → icons/a.bmp", unzipMember(t, newInner, "icons/a.bmp"), 64, 48)
	if !bytes.Equal(unzipMember(t, newInner, "pad.bin"), pad) || string(unzipMember(t, conv.Payload, "readme.txt")) != "two levels\n" {
		t.Error("members not migrated changed")
	}

	r, err, stderr = migrateRun("depth", "--max-depth", "1")
	if exitCode(err) != 1 || !strings.Contains(stderr, "beyond the limit of 1 container levels") {
		t.Errorf("--max-depth 1: %v\n%s", err, stderr)
	}
	got = statusByPath(r)
	if got["/old/deep.zip → b.tif"] != migrate.StatusMigrated || got["/old/deep.zip → inner.zip → icons/a.bmp"] != migrate.StatusNested {
		t.Errorf("--max-depth 1: %v", got)
	}

	r, err, stderr = migrateRun("budget", "--max-unpacked-mb", "1")
	if exitCode(err) != 1 || !strings.Contains(stderr, "inner.zip: declares") || !strings.Contains(stderr, "per record") {
		t.Errorf("--max-unpacked-mb 1: %v\n%s", err, stderr)
	}
	got = statusByPath(r)
	if got["/old/deep.zip → b.tif"] != migrate.StatusMigrated || got["/old/deep.zip → inner.zip → icons/a.bmp"] != migrate.StatusFailed {
		t.Errorf("--max-unpacked-mb 1: %v", got)
	}
}

// splitWARC writes the records of a gzip-per-record WARC file into two
// files, as they are stored: those for which first returns true, and the
// rest.
func splitWARC(t *testing.T, in, a, b string, first func(*warcio.Record) bool) {
	t.Helper()
	raw, _ := os.ReadFile(in)
	var wa, wb []byte
	for _, rec := range readAllRecords(t, in) {
		m := raw[rec.Offset : rec.Offset+rec.Length]
		if first(rec) {
			wa = append(wa, m...)
		} else {
			wb = append(wb, m...)
		}
	}
	os.WriteFile(a, wa, 0o644)
	os.WriteFile(b, wb, 0o644)
}

// TestMigrateReplaceKilled kills the replace workflow after it published
// the copy of a file holding the images and while it rewrites the page of
// a second file that links to them: a re-run keeps the first copy, learns
// the new names from it, and rewrites the page the same way an
// uninterrupted run does (the same files, records and digests).
func TestMigrateReplaceKilled(t *testing.T) {
	files := makeLegacyFiles(t)[:2] // a.bmp, b.tif
	warcs := crawlLegacySite(t, files)
	in := t.TempDir()
	images, pages := filepath.Join(in, "a-images.warc.gz"), filepath.Join(in, "b-pages.warc.gz")
	splitWARC(t, warcs[0], images, pages, func(r *warcio.Record) bool { return r.MIME != "text/html" })
	inputs := []string{images, pages}
	dir := t.TempDir()
	outKilled, outClean := filepath.Join(dir, "killed"), filepath.Join(dir, "clean")
	args := func(out string) []string {
		return append([]string{"migrate", "-q", "--workflow", "replace", "-o", out}, inputs...)
	}
	js, _ := json.Marshal(args(outKilled))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// Writes 1 and 2: the migrated images; 3: the page's new links.
	cmd.Env = append(os.Environ(), cliChildEnv+"="+string(js), failpointsEnv+"=migrate.write-record=3*kill")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v (want killed)\n%s", err, stderr.String())
	}
	ents, _ := os.ReadDir(outKilled)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := "[.wayside-migrate-work a-images.migrated.warc.gz a-images.migrated.warc.gz.cdxj]"; fmt.Sprint(left) != want {
		t.Fatalf("after the kill OUTDIR holds %v, want %s", left, want)
	}
	if _, stderr, err := runCLI(context.Background(), args(outKilled)...); err != nil || !strings.Contains(stderr, "exists: kept") {
		t.Fatalf("re-run: %v\n%s", err, stderr)
	}
	if _, stderr, err := runCLI(context.Background(), args(outClean)...); err != nil {
		t.Fatalf("clean run: %v\n%s", err, stderr)
	}
	summary := func(out string) []string {
		var s []string
		ents, _ := os.ReadDir(out)
		for _, e := range ents {
			s = append(s, "file "+e.Name())
			if strings.HasSuffix(e.Name(), ".warc.gz") {
				for _, r := range readAllRecords(t, filepath.Join(out, e.Name())) {
					s = append(s, r.Type+" "+r.TargetURI+" "+r.PayloadDigest)
				}
			}
		}
		return s
	}
	got, want := summary(outKilled), summary(outClean)
	if fmt.Sprint(got) != fmt.Sprint(want) || !strings.Contains(fmt.Sprint(want), "file b-pages.migrated.warc.gz") {
		t.Errorf("after kill and re-run:\n%s\nuninterrupted:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range readAllRecords(t, filepath.Join(outKilled, "b-pages.migrated.warc.gz")) {
		if r.Type == "response" && (!bytes.Contains(r.Payload, []byte(`"/old/a.png"`)) || !bytes.Contains(r.Payload, []byte(`"/old/b.png"`))) {
			t.Errorf("the page after the re-run does not link the new names:\n%s", r.Payload)
		}
	}
}

// TestMigrateReplaceRevisits crawls a page with a BMP twice (the second
// crawl writes revisits) and runs the replace workflow over both crawls'
// files: the revisit of the BMP becomes a revisit at a.png referring to the
// migrated record of the first crawl (its record ID, URI and payload
// digest, found in the output), with a 301 at a.bmp for its date; the
// revisit of the page (whose first capture's links were rewritten)
// refers to the rewritten page; the outputs hold no revisit referring to
// a record they lack.
func TestMigrateReplaceRevisits(t *testing.T) {
	bmp := makeLegacyFiles(t)[0]
	site := sitetest.New()
	site.Add(&sitetest.Resource{Path: bmp.path, ContentType: bmp.ctype, Body: bmp.body})
	site.Add(&sitetest.Resource{Path: "/old.html", ContentType: "text/html", Body: []byte(`<html><body><img src="/old/a.bmp"></body></html>`), Links: []string{bmp.path}})
	srv, err := sitetest.Start(site)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	warcDir := filepath.Join(t.TempDir(), "warcs")
	for range 2 {
		if out, stderr, err := runCLI(context.Background(), "crawl", "--warc-dir", warcDir, "--delay", "0", "--quiet", srv.URL+"/old.html"); err != nil {
			t.Fatalf("crawl: %v\n%s\n%s", err, out, stderr)
		}
	}
	warcs, _ := filepath.Glob(filepath.Join(warcDir, "*.warc.gz"))
	var revisitOfBMP *warcio.Record
	for _, w := range warcs {
		for _, r := range readAllRecords(t, w) {
			if r.Type == "revisit" && strings.HasSuffix(r.TargetURI, bmp.path) {
				revisitOfBMP = r
			}
		}
	}
	if revisitOfBMP == nil {
		t.Fatalf("the second crawl wrote no revisit of the BMP (%d files)", len(warcs))
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, err := runCLI(context.Background(), append([]string{"migrate", "-q", "--workflow", "replace", "-o", out}, warcs...)...); err != nil {
		t.Fatalf("migrate: %v\n%s", err, stderr)
	}
	outs, _ := filepath.Glob(filepath.Join(out, "*.warc.gz"))
	byID := map[string]*warcio.Record{}
	var all []*warcio.Record
	for _, o := range outs {
		for _, r := range readAllRecords(t, o) {
			byID[r.RecordID] = r
			all = append(all, r)
		}
	}
	newURI := strings.TrimSuffix(revisitOfBMP.TargetURI, ".bmp") + ".png"
	found, redirect := false, false
	for _, r := range all {
		switch {
		case r.Type == "revisit":
			orig := byID[r.Headers.Get("WARC-Refers-To")]
			if orig == nil || orig.TargetURI != r.Headers.Get("WARC-Refers-To-Target-URI") || orig.PayloadDigest != r.Headers.Get("WARC-Payload-Digest") {
				t.Errorf("revisit of %s refers to %s (%s), which the outputs do not hold with its digest %s", r.TargetURI,
					r.Headers.Get("WARC-Refers-To"), r.Headers.Get("WARC-Refers-To-Target-URI"), r.Headers.Get("WARC-Payload-Digest"))
				continue
			}
			if r.TargetURI == newURI {
				found = true
				if !r.Date.Equal(revisitOfBMP.Date) || orig.MIME != "image/png" || r.HTTP == nil || r.HTTP.Header.Get("Content-Type") != "image/png" {
					t.Errorf("revisit at %s: date %s (was %s), original %s, HTTP Content-Type %v", newURI, r.Date, revisitOfBMP.Date, orig.MIME, r.HTTP)
				}
			}
		case r.Type == "response" && r.TargetURI == revisitOfBMP.TargetURI && r.Date.Equal(revisitOfBMP.Date):
			redirect = r.HTTP != nil && r.HTTP.Status == 301 && r.HTTP.Header.Get("Location") == newURI
		}
	}
	if !found || !redirect {
		t.Errorf("outputs: revisit at %s %v, 301 at %s for the revisit's date %v", newURI, found, revisitOfBMP.TargetURI, redirect)
	}
}
