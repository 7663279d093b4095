package interop_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/fixity/testarchive"
	"github.com/wayside-archive/wayside/internal/testenv"
)

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// crawlExample crawls the example site (crawl/sitetest) into a new
// directory with the given extra flags, a second time with conditional
// requests when twice, and returns the directory.
func crawlExample(t testing.TB, twice bool, flags ...string) string {
	t.Helper()
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	args := append([]string{"crawl", "--warc-dir", dir, "--robots", "--delay", "0", "--parallel", "1", "--quiet"}, flags...)
	args = append(args, srv.URL+"/")
	wayside(t, args...)
	if twice {
		wayside(t, append([]string{"crawl", "--conditional"}, args[1:]...)...)
	}
	return dir
}

// TestCrawlOutput crawls the example site twice (the second time with
// conditional requests) into WARC files rotated small enough that revisits
// refer to originals in other files, then checks every WARC and CDXJ file
// the crawl wrote with warcio.js and wabac.js.
func TestCrawlOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	dir := crawlExample(t, true, "--max-file-size", "40000")
	warcs := glob(t, filepath.Join(dir, "*.warc.gz"))
	if len(warcs) < 4 || len(glob(t, filepath.Join(dir, "*.open"))) > 0 {
		t.Fatalf("want at least 4 closed WARC files, got %v", glob(t, filepath.Join(dir, "*")))
	}
	checkSet(t, js, outputSet{
		name:  "crawl",
		warcs: warcs,
		cdxjs: glob(t, filepath.Join(dir, "*.cdxj")),
		// 1 identical-payload-digest revisit in the first crawl; 8 more
		// and 7 server-not-modified in the second (see cmd/wayside's
		// TestCrawlCommand).
		wantRevisits: 16,
	})
}

// TestARC2WARCOutput converts every ARC file of the shared corpus and
// checks the WARC files with warcio.js, and their `wayside cdxj` index
// against the warcio CLI's.
func TestARC2WARCOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	for _, arc := range testenv.CorpusARCs(t) {
		// One set per ARC: warcio-example.arc and .arc.gz both become
		// warcio-example.warc.gz, and CDXJ lines name files by base name
		// only, so one set holding both would mix their lines up.
		out := t.TempDir()
		wayside(t, "convert", "arc2warc", "-q", "-o", out, arc)
		checkSet(t, js, outputSet{name: "arc2warc " + filepath.Base(arc), warcs: glob(t, filepath.Join(out, "*.warc.gz"))})
	}
}

// TestDedupRunOutput rewrites a small warcgen WARC (a third of its
// responses duplicates) with `wayside dedup run` and checks the output:
// every revisit written resolves in wabac.js, copied records read as in
// the input, and the CDXJ written beside the output is sorted and agrees
// with warcio.js's.
func TestDedupRunOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	gen := filepath.Join(testenv.SharedDir(t), "tools", "warcgen")
	in := filepath.Join(t.TempDir(), "gen.warc.gz")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "run", ".", "-size-mb", "5", "-o", in)
	cmd.Dir = gen
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("warcgen: %v\n%s", err, tail(string(out), 2000))
	}
	out := filepath.Join(t.TempDir(), "out")
	wayside(t, "dedup", "run", "-q", "-o", out, in)
	checkSet(t, js, outputSet{
		name:         "dedup-warcgen",
		warcs:        glob(t, filepath.Join(out, "*.warc.gz")),
		cdxjs:        glob(t, filepath.Join(out, "*.cdxj")),
		inputs:       []string{in},
		wantRevisits: 30,
	})
}

// TestDedupRunCorpusOutput runs `wayside dedup run` over the whole shared
// WARC corpus (14 files from 9 tools, messy on purpose) and checks the
// output the same way: the records it copies must read in warcio.js as
// their inputs do, the revisits it writes must resolve.
func TestDedupRunCorpusOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	inputs := testenv.CorpusWARCs(t)
	out := filepath.Join(t.TempDir(), "out")
	wayside(t, append([]string{"dedup", "run", "-q", "-o", out}, inputs...)...)
	var warcs []string
	for _, in := range inputs {
		p := filepath.Join(out, filepath.Base(in))
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("dedup run wrote no %s: %v", p, err)
		}
		warcs = append(warcs, p)
	}
	checkSet(t, js, outputSet{
		name:         "dedup-corpus",
		warcs:        warcs,
		cdxjs:        glob(t, filepath.Join(out, "*.cdxj")),
		inputs:       inputs,
		wantRevisits: 3,
	})
}

// TestFixityEvidenceOutput replays a memento of the test archive in
// Chromium with `wayside fixity replay --evidence` and checks the two
// evidence WARC files (what the browser received, and the raw id_
// fetches) with warcio.js.
func TestFixityEvidenceOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	if _, err := exec.LookPath("chromium"); err != nil {
		testenv.MissingTool(t, "interop: no chromium binary: install chromium to replay mementos")
	}
	arch := testarchive.Start(t)
	dir := t.TempDir()
	ev := filepath.Join(dir, "evidence")
	wayside(t, "fixity", "replay", "--archive", "test="+arch.Host()+","+arch.AliasHost(), "--quiet", "400ms", "--cap", "8s", "--raw-timeout", "3s",
		"--evidence", ev, "-o", filepath.Join(dir, "m.json"), arch.URIM(testarchive.SiteTS, testarchive.PageDeterministic))
	warcs := glob(t, filepath.Join(ev, "*", "*.warc*"))
	if len(warcs) != 2 {
		t.Fatalf("want 2 evidence WARC files, got %v", glob(t, filepath.Join(ev, "*", "*")))
	}
	checkSet(t, js, outputSet{name: "fixity-evidence", warcs: warcs})
}

// TestSidecarCDXJ runs `wayside serve` beside a directory of the shared
// corpus WARCs (as it runs beside Heritrix), waits until it has ingested
// every file, stops it and checks the CDXJ files it keeps: sorted for
// pywb's binary search and holding exactly the lines `wayside cdxj` gives
// for the same WARCs (which the other tests compare with warcio.js's).
func TestSidecarCDXJ(t *testing.T) {
	t.Parallel()
	inputs := testenv.CorpusWARCs(t)
	dir := t.TempDir()
	warcs := testenv.CopyFiles(t, filepath.Join(dir, "warcs"), inputs...)
	data := filepath.Join(dir, "data")
	wayside(t, "version") // builds the binary
	cmd := exec.Command(waysideP, "serve", "-data-dir", data, "-watch", filepath.Dir(warcs[0]))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	sock := filepath.Join(data, "wayside.sock")
	ingested := func() bool {
		out, err := exec.Command(waysideP, "status", "-json", "-addr", sock, "ingest").Output()
		if err != nil {
			return false
		}
		var st struct {
			Files []struct {
				Done bool `json:"done"`
			} `json:"files"`
		}
		if json.Unmarshal(out, &st) != nil || len(st.Files) != len(warcs) {
			return false
		}
		for _, f := range st.Files {
			if !f.Done {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !ingested() {
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar did not ingest the %d files within 2 minutes:\n%s", len(warcs), tail(log.String(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("wayside serve after SIGTERM: %v\n%s", err, tail(log.String(), 3000))
	}
	idx := filepath.Join(dir, "all.cdxj")
	wayside(t, append([]string{"cdxj", "-o", idx}, warcs...)...)
	set := outputSet{
		name:  "sidecar",
		warcs: warcs,
		cdxjs: glob(t, filepath.Join(data, "cdxj", "*.cdxj")),
	}
	if len(set.cdxjs) != len(warcs) {
		t.Fatalf("want a CDXJ file per WARC, got %v", set.cdxjs)
	}
	checkBeside(t, set, readLines(t, idx))
}

// TestCharacterizeMetadataOutput: the metadata files `wayside characterize
// --write-metadata` writes for a crawl read in warcio.js exactly as in
// Wayside's reader (offsets, lengths, block digests), and every metadata
// record's WARC-Refers-To is the WARC-Record-ID of a response or resource
// record warcio.js read in the crawl's WARC file of the same name.
func TestCharacterizeMetadataOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	dir := crawlExample(t, true, "--max-file-size", "40000")
	warcs := glob(t, filepath.Join(dir, "*.warc.gz"))
	meta := t.TempDir()
	wayside(t, append([]string{"characterize", "-q", "--write-metadata", "--metadata-dir", meta}, warcs...)...)
	var metas []string
	for _, w := range warcs {
		metas = append(metas, filepath.Join(meta, characterize.MetadataName(filepath.Base(w))))
	}
	recs := js.warcioRecords(t, append(slices.Clone(metas), warcs...))
	if t.Failed() {
		t.FailNow()
	}
	checkRecords(t, outputSet{name: "characterize metadata", warcs: metas}, recs)
	n := 0
	for i, m := range metas {
		ids := map[string]bool{}
		for _, r := range recs[warcs[i]] {
			if typ := r.h("WARC-Type"); typ == "response" || typ == "resource" {
				ids[r.h("WARC-Record-ID")] = true
			}
		}
		for _, r := range recs[m] {
			switch r.h("WARC-Type") {
			case "warcinfo":
			case "metadata":
				if !ids[r.h("WARC-Refers-To")] {
					t.Errorf("%s offset %d: WARC-Refers-To %s is no response or resource of %s", m, r.Offset, r.h("WARC-Refers-To"), warcs[i])
				}
				n++
			default:
				t.Errorf("%s offset %d: unexpected %s record", m, r.Offset, r.h("WARC-Type"))
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d metadata records in %d files", n, len(metas))
	}
	t.Logf("%d metadata records in %d files read by warcio.js", n, len(metas))
}
