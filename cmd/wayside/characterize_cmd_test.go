package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/internal/corpustest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// formatSite is the example site plus real files of many formats taken
// from the corpus, and a zip holding two of them, linked from /formats.html.
func formatSite(t *testing.T) *sitetest.Site {
	site := sitetest.New()
	iana := "pywb-iana.warc.gz"
	york := "aut-example.pdf.warc.gz"
	files := []struct {
		path, ctype string
		body        []byte
	}{
		{"/f/report.pdf", "application/pdf", corpustest.Payload(t, york, "https://yorkspace.library.yorku.ca/xmlui/bitstream/handle/10315/36158/cost-analysis.pdf?sequence=1&isAllowed=y")},
		{"/f/logo.png", "image/png", corpustest.Payload(t, iana, "http://www.iana.org/_img/2013.1/iana-logo-homepage.png")},
		{"/f/header.jpg", "image/jpeg", corpustest.Payload(t, york, "https://yorkspace.library.yorku.ca/xmlui/themes/Standard/images/header_white.jpg")},
		{"/f/icann.svg", "image/svg+xml", corpustest.Payload(t, iana, "http://www.iana.org/_img/2013.1/icann-logo.svg")},
		{"/f/font.ttf", "application/octet-stream", corpustest.Payload(t, iana, "http://www.iana.org/_css/2013.1/fonts/OpenSans-Regular.ttf")},
		{"/f/data.json", "application/json", []byte(`{"archive": "wayside", "formats": [1, 2, 3]}`)},
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for _, f := range files[:2] {
		w, _ := zw.Create("bundle/" + filepath.Base(f.path))
		w.Write(f.body)
	}
	zw.Close()
	files = append(files, struct {
		path, ctype string
		body        []byte
	}{"/f/bundle.zip", "application/zip", zb.Bytes()})
	var page strings.Builder
	page.WriteString("<!DOCTYPE html><html><head><title>Formats</title></head><body>\n")
	var links []string
	for _, f := range files {
		site.Add(&sitetest.Resource{Path: f.path, ContentType: f.ctype, Body: f.body, Validators: true})
		fmt.Fprintf(&page, "<a href=%q>%s</a>\n", f.path, f.path)
		links = append(links, f.path)
	}
	page.WriteString("</body></html>\n")
	site.Add(&sitetest.Resource{Path: "/formats.html", ContentType: "text/html; charset=utf-8", Body: []byte(page.String()), Links: links, Validators: true})
	return site
}

// storeState is what a store holds, comparable across stores: every
// file's summary (scan marks aside) and aggregates.
func storeState(t *testing.T, dir string) map[string]characterize.ContainerReport {
	t.Helper()
	st, err := characterize.OpenStore(dir, characterize.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	out := map[string]characterize.ContainerReport{}
	for _, f := range st.Files() {
		rep, _ := st.Report(f.File, false)
		rep.Summary.ScannedSize = 0
		out[f.File] = rep
	}
	return out
}

// TestCrawlCharacterizeMatchesCommand crawls a local site with many formats
// twice, the second time conditionally (revisits inherit formats) and with
// --characterize (its consumer first catches up on the first crawl from the
// CDXJ files), and checks that the aggregates the crawl's consumer kept
// equal those `wayside characterize` computes from the same WARCs.
func TestCrawlCharacterizeMatchesCommand(t *testing.T) {
	srv, err := sitetest.Start(formatSite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	// The first crawl runs without characterization: the second one's
	// consumer catches up on it from the CDXJ files before crawling.
	for i, extra := range [][]string{nil, {"--conditional", "--characterize"}} {
		args := append([]string{"crawl", "--warc-dir", warcs, "--delay", "0", "--quiet"}, extra...)
		out, stderr, err := runCLI(context.Background(), append(args, srv.URL+"/", srv.URL+"/formats.html")...)
		if err != nil {
			t.Fatalf("crawl %d: %v\n%s\n%s", i, err, out, stderr)
		}
		if i == 1 && !strings.Contains(out, "characterized") {
			t.Fatalf("crawl %d: no characterization summary:\n%s", i, out)
		}
	}
	crawled := storeState(t, filepath.Join(warcs, characterizationSubdir))
	// A crawl characterized from its start reads no record back: the
	// writer hands each record's bytes to the characterizer.
	out, stderr, err := runCLI(context.Background(), "crawl", "--warc-dir", filepath.Join(dir, "warcs2"), "--delay", "0", "--quiet", "--characterize", srv.URL+"/")
	if err != nil {
		t.Fatalf("crawl: %v\n%s\n%s", err, out, stderr)
	}
	if !regexp.MustCompile(`characterized +[1-9]\d* captures \([^)]*\), 0 read back`).MatchString(out) {
		t.Errorf("a crawl characterized from its start read records back:\n%s", out)
	}

	files, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz"))
	if len(files) == 0 {
		t.Fatal("no WARC files")
	}
	fresh := filepath.Join(dir, "fresh")
	out, stderr, err = runCLI(context.Background(), append([]string{"characterize", "-q", "--store", fresh}, files...)...)
	if err != nil {
		t.Fatalf("characterize: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "fmt/19") {
		t.Errorf("summary table lacks the PDF:\n%s", out)
	}
	want := storeState(t, fresh)
	if !reflect.DeepEqual(crawled, want) {
		g, _ := json.MarshalIndent(crawled, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("the crawl's aggregates differ from wayside characterize's:\ncrawl: %s\ncommand: %s", g, w)
	}
	// The formats served are all there, the zip's members nested.
	totals := map[string]characterize.Aggregate{}
	for _, rep := range want {
		for _, a := range rep.Formats {
			sum := totals[a.PUID]
			sum.Objects += a.Objects
			sum.NestedObjects += a.NestedObjects
			sum.Revisits += a.Revisits
			totals[a.PUID] = sum
		}
	}
	for puid, nested := range map[string]bool{"fmt/19": true, "fmt/12": true, "fmt/44": false, "fmt/92": false, "x-fmt/453": false,
		"fmt/817": false, "x-fmt/263": false, "fmt/471": false, "x-fmt/224": false, "x-fmt/423": false} {
		a := totals[puid]
		if a.Objects == 0 || (nested && a.NestedObjects == 0) {
			t.Errorf("%s: %+v (nested expected: %v)", puid, a, nested)
		}
	}
	if totals["fmt/19"].Revisits == 0 {
		t.Error("no revisit inherited the PDF's format in the conditional crawl")
	}

	// Queries on the crawl's store.
	q, _, err := runCLI(context.Background(), "characterize", "query", "--store", filepath.Join(warcs, characterizationSubdir), "--format", "fmt/19", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var aggs []characterize.Aggregate
	if err := json.Unmarshal([]byte(q), &aggs); err != nil || len(aggs) == 0 {
		t.Fatalf("--format fmt/19: %v %s", err, q)
	}
	// The CDXJ of the same WARCs carries the PUIDs.
	cdx, _, err := runCLI(context.Background(), append([]string{"cdxj", "-q", "--puid"}, files...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cdx, `"puid": "fmt/19"`) || !strings.Contains(cdx, `"puid": "x-fmt/263"`) {
		t.Errorf("cdxj --puid lacks PUIDs:\n%s", cdx)
	}
}

// TestCharacterizeCommandErrors: usage errors exit 2, unreadable input
// exits 1 naming the file and offset, while everything readable is still
// characterized and reported.
func TestCharacterizeCommandErrors(t *testing.T) {
	ctx := context.Background()
	var ue usageError
	for _, args := range [][]string{
		{"characterize"},
		{"characterize", "-j", "0", "x.warc.gz"},
		{"characterize", "query", "--store", "x"},
		{"characterize", "query", "--format", "fmt/1", "--container", "a", "--store", "x"},
		{"characterize", "query", "--format", "fmt/1"},
		{"characterize", "--metadata-dir", "x", "x.warc.gz"},
	} {
		if _, _, err := runCLI(ctx, args...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	store := t.TempDir()
	good := testenv.CorpusWARCs(t)[0]
	for _, f := range testenv.CorpusWARCs(t) {
		if strings.HasSuffix(f, "warcio-example.warc.gz") {
			good = f
		}
	}
	// A WARC cut inside its second record, and a file that is no WARC.
	b, err := os.ReadFile(filepath.Join(filepath.Dir(good), "pywb-example-wget-1-14.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(store, "cut.warc.gz")
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	junk := filepath.Join(store, "junk.warc")
	os.WriteFile(junk, []byte("this is not a web archive\n"), 0o644)
	// A missing input fails the command before anything is characterized.
	if _, _, err := runCLI(ctx, "characterize", "-q", "--store", store, good, filepath.Join(store, "missing.warc.gz")); err == nil || !strings.Contains(err.Error(), "missing.warc.gz: no such file") {
		t.Fatalf("missing input: %v, want a failure naming it", err)
	}
	out, stderr, err := runCLI(ctx, "characterize", "-q", "--store", store, good, cut, junk)
	if err == nil || errors.As(err, &ue) {
		t.Fatalf("unreadable input: %v, want a failure", err)
	}
	for _, want := range []string{"cut.warc.gz offset", "truncated", "junk.warc offset 0"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("problems do not mention %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(out, "warcio-example.warc.gz: 2 records") || !strings.Contains(out, "cut.warc.gz: ") {
		t.Errorf("the readable files (and the readable part of the cut one) were not reported:\n%s", out)
	}
	// A query for a container never characterized fails; one for a format
	// nobody holds succeeds with an empty answer.
	if _, _, err := runCLI(ctx, "characterize", "query", "--store", store, "--container", "nope.warc.gz"); err == nil || !strings.Contains(err.Error(), "not been characterized") {
		t.Errorf("--container of an unknown file: %v", err)
	}
	if out, _, err := runCLI(ctx, "characterize", "query", "--store", store, "--format", "fmt/999999", "--json"); err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("--format nobody holds: %q %v", out, err)
	}
	list := filepath.Join(store, "risk.txt")
	os.WriteFile(list, []byte("# risky\nfmt/471 # html\nhtml5\n"), 0o644)
	if _, _, err := runCLI(ctx, "characterize", "query", "--store", store, "--risk", "@"+list); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad risk list: %v", err)
	}
	os.WriteFile(list, []byte("# risky\nfmt/471 # html\n"), 0o644)
	if out, _, err := runCLI(ctx, "characterize", "query", "--store", store, "--risk", "@"+list); err != nil || !strings.Contains(out, "warcio-example.warc.gz\tfmt/471") {
		t.Errorf("risk query: %q %v", out, err)
	}
}

// TestServeCharacterizeQueries runs the daemon with characterization on
// over a directory of corpus WARCs and checks that the daemon's answers to
// the queries equal those of `wayside characterize` run on the same files.
func TestServeCharacterizeQueries(t *testing.T) {
	warcs := t.TempDir()
	var names []string
	for _, f := range testenv.CorpusWARCs(t)[3:6] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(warcs, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Join(warcs, filepath.Base(f)))
	}
	sock := serveInTest(t, "--watch", warcs, "--poll", "50ms", "--characterize", "--log-level", "warn")

	store := filepath.Join(t.TempDir(), "store")
	if _, stderr, err := runCLI(context.Background(), append([]string{"characterize", "-q", "--store", store}, names...)...); err != nil {
		t.Fatalf("characterize: %v\n%s", err, stderr)
	}
	want := storeState(t, store)
	var records int64
	for _, r := range want {
		records += r.Summary.Records
	}

	// Wait (bounded) until the daemon has characterized as many records.
	var files []characterize.FileSummary
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _, err := runCLI(context.Background(), "characterize", "query", "--addr", sock, "--files", "--json")
		files = nil
		if err == nil {
			json.Unmarshal([]byte(out), &files)
		}
		var n int64
		for _, f := range files {
			n += f.Records
		}
		if n == records {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon characterized %d of %d records (last answer: %v)", n, records, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, f := range files {
		out, _, err := runCLI(context.Background(), "characterize", "query", "--addr", sock, "--container", f.File, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var rep characterize.ContainerReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		rep.Summary.ScannedSize = 0
		if !reflect.DeepEqual(rep, want[f.File]) {
			t.Errorf("%s: daemon %+v, command %+v", f.File, rep, want[f.File])
		}
	}
	for _, q := range [][]string{{"--format", "fmt/19,x-fmt/224"}, {"--risk", "fmt/18,fmt/215"}} {
		remote, _, err := runCLI(context.Background(), append([]string{"characterize", "query", "--addr", sock, "--json"}, q...)...)
		if err != nil {
			t.Fatal(err)
		}
		local, _, err := runCLI(context.Background(), append([]string{"characterize", "query", "--store", store, "--json"}, q...)...)
		if err != nil {
			t.Fatal(err)
		}
		if remote != local || len(remote) < 10 {
			t.Errorf("%v: daemon answered\n%s\ncommand answered\n%s", q, remote, local)
		}
	}
	if _, _, err := runCLI(context.Background(), "characterize", "query", "--addr", sock, "--container", "nope.warc.gz"); err == nil {
		t.Error("--container of an unknown file succeeded over the daemon")
	}
}

// TestCharacterizeWriteMetadata: --write-metadata writes, beside each WARC
// of a crawl (or in --metadata-dir), NAME.characterization.warc.gz: a valid
// WARC (gowarc, strict) holding one metadata record per characterized
// response, WARC-Refers-To that record, stating the PUID the store holds
// for it; revisits are left out.
func TestCharacterizeWriteMetadata(t *testing.T) {
	srv, err := sitetest.Start(formatSite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	warcs := filepath.Join(t.TempDir(), "warcs")
	for _, extra := range [][]string{nil, {"--conditional"}} {
		args := append([]string{"crawl", "--warc-dir", warcs, "--delay", "0", "--quiet", "--max-file-size", "200000"}, extra...)
		if out, stderr, err := runCLI(ctx, append(args, srv.URL+"/", srv.URL+"/formats.html")...); err != nil {
			t.Fatalf("crawl: %v\n%s\n%s", err, out, stderr)
		}
	}
	files, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz"))
	if len(files) < 2 {
		t.Fatalf("want several WARC files, got %v", files)
	}
	store := filepath.Join(t.TempDir(), "store")
	out, stderr, err := runCLI(ctx, append([]string{"characterize", "-q", "--store", store, "--write-metadata"}, files...)...)
	if err != nil {
		t.Fatalf("characterize --write-metadata: %v\n%s", err, stderr)
	}
	st, err := characterize.OpenStore(store, characterize.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	total, revisits := 0, 0
	beside := map[string]map[string]string{} // WARC file → its metadata records
	for _, f := range files {
		name := filepath.Base(f)
		meta := filepath.Join(warcs, characterize.MetadataName(name))
		if !strings.Contains(out, meta) {
			t.Errorf("output does not name %s:\n%s", meta, out)
		}
		testenv.StrictWARC(t, meta)
		want := map[string]string{} // record ID → PUID
		for _, r := range st.Records(name) {
			if r.IsRevisit() {
				revisits++
			} else if r.PUID != "" {
				want[r.RecordID] = r.PUID
			}
		}
		got := metadataPUIDs(t, meta)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: metadata records %v, want %v", meta, got, want)
		}
		beside[name] = got
		total += len(got)
	}
	if total < 10 || revisits == 0 {
		t.Fatalf("%d metadata records, %d revisits left out: the crawl should give both", total, revisits)
	}
	// --metadata-dir: elsewhere, the WARC directory untouched.
	other := t.TempDir()
	if _, stderr, err := runCLI(ctx, append([]string{"characterize", "-q", "--write-metadata", "--metadata-dir", other}, files...)...); err != nil {
		t.Fatalf("--metadata-dir: %v\n%s", err, stderr)
	}
	for _, f := range files {
		// The same records as beside the WARC (none for a file of
		// revisits only), with or without a store.
		if got, want := metadataPUIDs(t, filepath.Join(other, characterize.MetadataName(filepath.Base(f)))), beside[filepath.Base(f)]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s in --metadata-dir: metadata records %v, want %v as beside the WARC", f, got, want)
		}
	}
	// A --metadata-dir that does not exist is refused before the work
	// (issue 21: it failed only after every file was read, calling it
	// "unreadable records"): exit 1 naming the flag, nothing reported.
	out, stderr, err = runCLI(ctx, "characterize", "-q", "--write-metadata", "--metadata-dir", filepath.Join(other, "missing"), files[0])
	if err == nil || report(&strings.Builder{}, err, false) != exitFailure || !strings.Contains(err.Error(), "--metadata-dir "+filepath.Join(other, "missing")+": no such directory") || out != "" {
		t.Fatalf("missing metadata dir: %v\nstdout %s\nstderr %s", err, out, stderr)
	}
	// Metadata files already there are not replaced without --overwrite.
	if _, _, err = runCLI(ctx, "characterize", "-q", "--write-metadata", "--metadata-dir", other, files[0]); err == nil || !strings.Contains(err.Error(), "already exists (give --overwrite") {
		t.Fatalf("existing metadata file: %v", err)
	}
}

// metadataPUIDs reads a metadata file: WARC-Refers-To → puid of every
// metadata record.
func metadataPUIDs(t *testing.T, path string) map[string]string {
	t.Helper()
	var block bytes.Buffer
	r, err := warcio.Open(path, warcio.Options{BlockSink: func() io.Writer { block.Reset(); return &block }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]string{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Type != "metadata" {
			continue
		}
		for _, line := range strings.Split(block.String(), "\r\n") {
			if v, ok := strings.CutPrefix(line, "puid: "); ok {
				out[rec.Header("WARC-Refers-To")] = v
			}
		}
	}
}
