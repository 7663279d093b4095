package ingest_test

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/mementomap"
	"github.com/wayside-archive/wayside/warcfile"
)

// ingested is the result of following a directory until every WARC file in
// it is finished.
type ingested struct {
	dir, cdxjDir string
	idx          *pebble.Index
	status       ingest.Status
	captures     []wayside.Capture
}

// runIngest follows warcDir with a fresh Ingester (pebble index, CDXJ files,
// a subscriber collecting captures) until every WARC file in it is Done or
// reported truncated, then stops it.
func runIngest(t *testing.T, warcDir string, policy dedupindex.Policy) *ingested {
	t.Helper()
	data := t.TempDir()
	idx, err := pebble.Open(filepath.Join(data, "index"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	res := &ingested{dir: warcDir, cdxjDir: filepath.Join(data, "cdxj"), idx: idx}
	sub := wayside.SubscriberFunc(func(_ context.Context, c wayside.Capture) error {
		res.captures = append(res.captures, c) // one producer goroutine
		return nil
	})
	in, err := ingest.New(ingest.Config{Dirs: []string{warcDir}, PollInterval: 10 * time.Millisecond,
		Checkpoint: filepath.Join(data, "checkpoint.json"), CDXJDir: res.cdxjDir, Policy: policy}, idx, sub)
	if err != nil {
		t.Fatal(err)
	}
	want := len(warcNames(t, warcDir))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st := in.Status()
		finished := 0
		for _, f := range st.Files {
			if f.Done || f.Truncated {
				finished++
			}
		}
		if finished == want {
			res.status = st
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("ingest did not finish %d files: %+v", want, st)
		}
		select {
		case err := <-done:
			t.Fatalf("ingest stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return res
}

func warcNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := strings.TrimSuffix(e.Name(), ".open")
		if strings.HasSuffix(n, ".warc") || strings.HasSuffix(n, ".warc.gz") {
			out = append(out, n)
		}
	}
	return out
}

// corpusDir links every shared-corpus WARC into a new directory.
func corpusDir(t *testing.T) ([]string, string) {
	t.Helper()
	files := testenv.CorpusWARCs(t)
	dir := t.TempDir()
	for _, f := range files {
		if err := os.Symlink(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	return files, dir
}

// indexLines is `wayside cdxj` of one WARC file: its lines, sorted.
func indexLines(t *testing.T, path string) []string {
	t.Helper()
	var lines []string
	if _, err := cdxj.IndexFile(context.Background(), path, cdxj.IndexOptions{}, func(l *cdxj.Line) error {
		lines = append(lines, l.String())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return lines
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestSpineEntryPointsAgree runs every shared-corpus WARC through every
// entry point that turns records into index data — `wayside cdxj`
// (cdxj.IndexFile), the ingester's CDXJ files and dedup index, MementoMap
// generation from WARCs and from CDXJ, and index import from WARCs and
// from CDXJ — and checks that they agree line for line and original for
// original. Before the one converter (warcio.Record.Capture), `wayside
// cdxj` and the sidecar's CDXJ disagreed on 17 of 306 digests.
func TestSpineEntryPointsAgree(t *testing.T) {
	files, dir := corpusDir(t)
	pol := dedupindex.Policy{Scope: "corpus"}
	got := runIngest(t, dir, pol)
	ctx := context.Background()

	var cdxjFiles []string
	total, differ := 0, 0
	for _, f := range files {
		name := filepath.Base(f)
		want := indexLines(t, f)
		side := filepath.Join(got.cdxjDir, name+".cdxj")
		have := []string(nil)
		if _, err := os.Stat(side); err == nil {
			have = readLines(t, side)
			cdxjFiles = append(cdxjFiles, side)
		}
		total += len(want)
		if strings.Join(have, "\n") != strings.Join(want, "\n") {
			differ++
			t.Errorf("%s: the ingester's CDXJ (%d lines) differs from `wayside cdxj` (%d lines):\n got %.600s\nwant %.600s",
				name, len(have), len(want), strings.Join(have, "\n"), strings.Join(want, "\n"))
		}
	}
	if total < 300 {
		t.Fatalf("only %d index lines in the corpus: the test checks too little", total)
	}
	t.Logf("%d index lines in %d WARC files, %d files differ", total, len(files), differ)

	// Closed WARCs: their CDXJ files are sorted, merge, and bisect.
	merged := cdxjtest.CheckSorted(t, cdxjFiles)
	if len(merged) != total {
		t.Errorf("merged CDXJ has %d lines, want %d", len(merged), total)
	}

	// The captures delivered to consumers are the records the lines index.
	lineOf := map[string]bool{}
	for _, l := range merged {
		lineOf[l] = true
	}
	delivered := 0
	for _, c := range got.captures {
		l := cdxj.FromCapture(c)
		if lineOf[l.String()] {
			delivered++
		}
		if c.Dir != dir {
			t.Errorf("capture %s of %s: Dir %q, want %q", c.RecordID, c.File, c.Dir, dir)
		}
	}
	if delivered != total {
		t.Errorf("%d delivered captures match an index line, want %d", delivered, total)
	}

	// MementoMap generation: from the WARCs and from the CDXJ files.
	gen := func(paths []string, format mementomap.Format) string {
		g := mementomap.NewGenerator(mementomap.GenerateOptions{})
		defer g.Close()
		for _, p := range paths {
			if err := g.AddFile(ctx, p, format); err != nil {
				t.Fatal(err)
			}
		}
		var b bytes.Buffer
		if _, err := g.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if a, b := gen(files, mementomap.FormatWARC), gen(cdxjFiles, mementomap.FormatCDXJ); a != b {
		t.Errorf("MementoMap from the WARCs differs from the one from the ingester's CDXJ:\n%s\n---\n%s", a, b)
	}

	// Index: the ingester's originals are import's, and pass Check.
	if err := got.idx.Check(ctx); err != nil {
		t.Errorf("index built by the ingester fails its check: %v", err)
	}
	imp := func(paths []string) *pebble.Index {
		ix, err := pebble.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		if _, err := dedupindex.Import(ctx, ix, paths, dedupindex.ImportOptions{Scope: pol.Scope}); err != nil {
			t.Fatal(err)
		}
		return ix
	}
	fromWARC, fromCDXJ := imp(files), imp(cdxjFiles)
	stats := func(ix *pebble.Index) int64 {
		st, err := ix.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Originals
	}
	n := stats(got.idx)
	if n < 50 || n != stats(fromWARC) {
		t.Errorf("originals: ingest %d, import of WARCs %d", n, stats(fromWARC))
	}
	// An index line cannot say that its record is truncated or damaged:
	// import of CDXJ admits those too, and only those.
	incomplete := map[string]bool{}
	for _, c := range got.captures {
		if !c.Complete() && !c.IsRevisit() {
			incomplete[c.Digest] = true
		}
	}
	checked := 0
	for _, s := range merged {
		l, err := cdxj.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.CanonicalDigest()
		if err != nil || l.IsRevisit() {
			continue
		}
		k := dedupindex.Key{Scope: pol.Scope, Digest: d}
		a, okA, err := got.idx.Lookup(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		b, okB, _ := fromWARC.Lookup(ctx, k)
		c, okC, _ := fromCDXJ.Lookup(ctx, k)
		if okA != okB || (okA != okC && !(okC && incomplete[d])) {
			t.Errorf("%s: original in ingest %v, import of WARCs %v, import of CDXJ %v", d, okA, okB, okC)
			continue
		}
		if !okA {
			continue
		}
		checked++
		if a.RecordID != b.RecordID || a.File != b.File || a.Offset != b.Offset || a.Length != b.Length || !a.Date.Equal(b.Date) || a.TargetURI != b.TargetURI {
			t.Errorf("%s: ingest original %+v, import %+v", d, a, b)
		}
		if a.File != c.File || a.Offset != c.Offset || a.Length != c.Length || a.TargetURI != c.TargetURI {
			t.Errorf("%s: ingest original %+v, import of the CDXJ %+v", d, a, c)
		}
	}
	if checked == 0 {
		t.Fatal("no original compared")
	}
}

// TestIngestFollowsACrawl: the ingester follows a crawl as it writes
// (".open" files growing, rotated, renamed). Once the crawl is over, each
// WARC's CDXJ written by the ingester is the one the crawler wrote beside
// it, and `wayside cdxj` of it: both producers index every record the same
// way, and both sort a CDXJ once its WARC is closed.
func TestIngestFollowsACrawl(t *testing.T) {
	srv, err := sitetest.Start(sitetest.NewLarge(60, 6<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	warcs := t.TempDir()
	data := t.TempDir()
	idx, err := pebble.Open(filepath.Join(data, "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	cdxjDir := filepath.Join(data, "cdxj")
	in, err := ingest.New(ingest.Config{Dirs: []string{warcs}, PollInterval: 5 * time.Millisecond,
		Checkpoint: filepath.Join(data, "cp.json"), CDXJDir: cdxjDir, Policy: dedupindex.Policy{Scope: "ingest"}}, idx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()

	s, err := crawl.Open(crawl.Config{WARCDir: warcs, Writer: warcfile.WriterOptions{MaxFileSize: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := crawl.ParseSeed(srv.URL + sitetest.Root)
	c, err := crawl.NewCrawler(crawl.CrawlConfig{Seeds: []*url.URL{seed}, Recorder: s.Recorder, MaxDepth: -1, Parallel: 4, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := warcNames(t, warcs)
	if len(files) < 3 {
		t.Fatalf("%d WARC files: the crawl did not rotate", len(files))
	}
	for deadline := time.Now().Add(time.Minute); ; {
		finished := 0
		for _, f := range in.Status().Files {
			if f.Done {
				finished++
			}
		}
		if finished == len(files) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingest did not finish: %+v", in.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var sides []string
	for _, name := range files {
		w := filepath.Join(warcs, name)
		crawled := readLines(t, filepath.Join(warcs, cdxj.SideFileName(name)))
		ingested := filepath.Join(cdxjDir, name+".cdxj")
		sides = append(sides, ingested)
		want := strings.Join(indexLines(t, w), "\n")
		if strings.Join(crawled, "\n") != want || strings.Join(readLines(t, ingested), "\n") != want {
			t.Errorf("%s: the crawler's CDXJ (%d lines), the ingester's (%d) and `wayside cdxj` (%d) differ",
				name, len(crawled), len(readLines(t, ingested)), len(indexLines(t, w)))
		}
	}
	cdxjtest.CheckSorted(t, sides)
	if err := idx.Check(context.Background()); err != nil {
		t.Error(err)
	}
}
