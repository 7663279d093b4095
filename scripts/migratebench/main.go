// Command migratebench is benchmark tooling for scripts/bench-migrate.sh,
// not part of the product. It measures the two figures the migration
// study cares about:
//
//  1. Locating: the at-risk records of a collection found through the
//     characterization store (per-container aggregates, then the records of
//     the containers that hold a selected format) against a full scan that
//     identifies every record of every file (what locating costs without
//     the store): wall time and entities examined, both ways.
//
//  2. Migrating: conversions per minute per default pathway (convert and
//     validate, in the sandbox), over COPIES objects of each source format
//     made with the real tools.
//
//     migratebench -collection WARC[,WARC...] -legacy-copies 8
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/migrate"
	"github.com/wayside-archive/wayside/warcio"
)

func main() {
	coll := flag.String("collection", "", "comma-separated WARC files forming the bulk of the collection")
	copies := flag.Int("legacy-copies", 8, "objects of each legacy format in the legacy WARC")
	officeCopies := flag.Int("office-copies", 3, "objects of each office format (LibreOffice runs twice per object: slow)")
	flag.Parse()
	if *coll == "" {
		log.Fatal("migratebench: -collection is required")
	}
	ctx := context.Background()
	work, err := os.MkdirTemp("", "migratebench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	objs := legacyObjects(ctx, work)
	legacy := filepath.Join(work, "legacy.warc.gz")
	writeLegacyWARC(legacy, objs, *copies, *officeCopies)
	files := append(strings.Split(*coll, ","), legacy)

	eng, err := characterize.NewEngine()
	if err != nil {
		log.Fatal(err)
	}
	id := characterize.NewIdentifier(eng, characterize.Limits{})
	storeDir := filepath.Join(work, "store")
	st, err := characterize.OpenStore(storeDir, characterize.StoreOptions{})
	if err != nil {
		log.Fatal(err)
	}
	c, err := characterize.New(characterize.Options{Store: st, Identifier: id})
	if err != nil {
		log.Fatal(err)
	}
	// The full scan: every record of every file identified.
	t0 := time.Now()
	var scanned int64
	for _, f := range files {
		fs, err := c.ScanFile(ctx, f, false, nil)
		if err != nil {
			log.Fatal(err)
		}
		scanned += int64(fs.Records)
	}
	c.Close()
	scan := time.Since(t0)
	st.Close()
	selected := migrate.DefaultRiskModel().AtRisk(0.5)
	// Locating through the store, reopened as a later run would.
	t0 = time.Now()
	st, err = characterize.OpenStore(storeDir, characterize.StoreOptions{})
	if err != nil {
		log.Fatal(err)
	}
	open := time.Since(t0)
	t1 := time.Now()
	targets, ls := migrate.Locate(st, nil, selected)
	locate := time.Since(t1)
	fmt.Printf("collection: %d files, %d records identified by the full scan\n", len(files), scanned)
	fmt.Printf("%-34s %12s %14s\n", "locate at-risk records", "time", "entities")
	fmt.Printf("%-34s %12s %14d records identified\n", "full scan (identify every record)", scan.Round(time.Millisecond), scanned)
	fmt.Printf("%-34s %12s %14d containers + %d records read\n", "store query (Locate)", locate.Round(time.Microsecond), ls.Containers, ls.Records)
	fmt.Printf("%-34s %12s (store load, once per process)\n", "store open", open.Round(time.Millisecond))
	fmt.Printf("located %d targets; full scan / store query: %.0f× time, %.0f× entities\n", len(targets),
		float64(scan)/float64(max(locate, time.Microsecond)), float64(scanned)/float64(max(1, ls.Containers+ls.Records)))

	// Migrations per minute per pathway.
	sb, err := migrate.NewSandbox(ctx, migrate.Limits{}, work, false)
	if err != nil {
		log.Fatal(err)
	}
	m, err := migrate.New(migrate.Options{Store: st, Identifer: id, Pathways: migrate.DefaultPathways(), Sandbox: sb, Dirs: []string{work}})
	if err != nil {
		log.Fatal(err)
	}
	all, _ := migrate.Locate(st, []string{"legacy.warc.gz"}, append(selected, "fmt/17", "fmt/141"))
	byPathway := map[string][]migrate.Target{}
	pw := migrate.DefaultPathways()
	for _, t := range all {
		if p, ok := pw.For(t.PUID); ok {
			byPathway[p.Name] = append(byPathway[p.Name], t)
		}
	}
	names := make([]string, 0, len(byPathway))
	for n := range byPathway {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Printf("\n%-22s %8s %8s %12s %16s\n", "pathway", "objects", "ok", "seconds", "migrations/min")
	for _, n := range names {
		t0 := time.Now()
		ocs, err := m.MigrateFile(ctx, "legacy.warc.gz", byPathway[n])
		if err != nil {
			log.Fatal(err)
		}
		d := time.Since(t0)
		ok := 0
		for _, oc := range ocs {
			if oc.Status == migrate.StatusMigrated {
				ok++
			}
		}
		fmt.Printf("%-22s %8d %8d %12.2f %16.1f\n", n, len(ocs), ok, d.Seconds(), float64(ok)/d.Minutes())
	}
	st.Close()
}

type object struct {
	name, mime string
	body       []byte
}

// legacyObjects makes one object of each default source format with the
// real tools.
func legacyObjects(ctx context.Context, dir string) []object {
	var tl migrate.Tools
	path := func(n string) string {
		t, err := tl.ResolveTool(ctx, n)
		if err != nil {
			log.Fatal(err)
		}
		return t.Path
	}
	im, ff, gs := path("imagemagick"), path("ffmpeg"), path("ghostscript")
	p := func(n string) string { return filepath.Join(dir, n) }
	run := func(prog string, args ...string) {
		if out, err := exec.Command(prog, args...).CombinedOutput(); err != nil {
			log.Fatalf("%s %v: %v\n%s", prog, args, err, out)
		}
	}
	run(im, "-size", "640x480", "plasma:fractal", "-seed", "3", "BMP3:"+p("a.bmp"))
	run(im, "-size", "640x480", "plasma:fractal", "-seed", "4", "TIFF:"+p("b.tif"))
	run(ff, "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=10", p("c.aiff"))
	run(ff, "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=25", "-c:v", "flv", p("d.flv"))
	os.WriteFile(p("e.ps"), []byte("%!PS\n/Helvetica findfont 20 scalefont setfont 72 700 moveto (one) show showpage 72 700 moveto (two) show showpage\n"), 0o644)
	run(gs, "-q", "-dSAFER", "-dNOPAUSE", "-dBATCH", "-sDEVICE=pdfwrite", "-dCompatibilityLevel=1.3", "-sOutputFile="+p("e.pdf"), p("e.ps"))
	run(ff, "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=10", p("f.wav"))
	// Office documents, written by LibreOffice itself: a three-page Word 97
	// document and an Excel 97 workbook.
	lo := path("libreoffice")
	br := `<p style="page-break-before: always">`
	os.WriteFile(p("g.html"), []byte("<html><body><h1>One</h1><p>first</p>"+br+"second</p>"+br+"third</p></body></html>"), 0o644)
	os.WriteFile(p("h.csv"), []byte("year,count\n1997,3\n2003,5\n"), 0o644)
	for _, c := range [][2]string{{"doc:MS Word 97", "g.html"}, {"xls:MS Excel 97", "h.csv"}} {
		run(lo, "--headless", "--norestore", "-env:UserInstallation=file://"+p("lo-profile"), "--convert-to", c[0], "--outdir", dir, p(c[1]))
	}
	var out []object
	for _, f := range []struct{ n, m string }{{"a.bmp", "image/bmp"}, {"b.tif", "image/tiff"}, {"c.aiff", "audio/aiff"}, {"d.flv", "video/x-flv"}, {"e.pdf", "application/pdf"}, {"f.wav", "audio/wav"},
		{"g.doc", "application/msword"}, {"h.xls", "application/vnd.ms-excel"}} {
		b, err := os.ReadFile(p(f.n))
		if err != nil {
			log.Fatal(err)
		}
		out = append(out, object{f.n, f.m, b})
	}
	return out
}

// writeLegacyWARC writes copies resource records of each object
// (officeCopies of the office documents).
func writeLegacyWARC(path string, objs []object, copies, officeCopies int) {
	var buf bytes.Buffer
	mw, err := warcio.NewMemberWriter(6)
	if err != nil {
		log.Fatal(err)
	}
	date := warcio.FormatDate(time.Date(2005, 5, 5, 5, 5, 5, 0, time.UTC), "1.1")
	for i := range max(copies, officeCopies) {
		for _, o := range objs {
			office := strings.HasPrefix(o.mime, "application/vnd.ms-") || o.mime == "application/msword"
			if (office && i >= officeCopies) || (!office && i >= copies) {
				continue
			}
			h := warcio.RecordHead{Version: "1.1", Type: "resource", ID: warcio.NewRecordID(), Date: date,
				Fields: []warcio.Field{{Name: "WARC-Target-URI", Value: fmt.Sprintf("http://legacy.example/%d/%s", i, o.name)}, {Name: "Content-Type", Value: o.mime}}}
			h.BlockDigest = digest.Of(digest.SHA1, o.body).String()
			h.ContentLength = int64(len(o.body))
			if _, err := mw.WriteRecord(&buf, &h, bytes.NewReader(o.body)); err != nil {
				log.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
