package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/dedupindex"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/warcio"
)

// crawlTwiceNoDedup crawls the test site twice without crawl-time dedup
// into a new WARC directory (with its dedup and capture indexes), so
// `dedup run` has duplicates to turn into revisits.
func crawlTwiceNoDedup(t *testing.T) string {
	t.Helper()
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	for i := range 2 {
		args := []string{"crawl", "--warc-dir", dir, "--no-dedup", "--delay", "0", "--parallel", "1", "--quiet", srv.URL + "/"}
		if _, stderr, err := runCLI(context.Background(), args...); err != nil {
			t.Fatalf("crawl %d: %v\n%s", i, err, stderr)
		}
	}
	// Seed the dedup index the crawl keeps (none with --no-dedup) from
	// the WARCs, as an archive seeding it from earlier crawls does.
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if _, stderr, err := runCLI(context.Background(), append([]string{"index", "import", "--warc-dir", dir, "--quiet"}, files...)...); err != nil {
		t.Fatalf("index import: %v\n%s", err, stderr)
	}
	return dir
}

// recordStarts lists, per WARC file of dir, the offsets where its records
// start, with their record ids.
func recordStarts(t *testing.T, dir string) map[string]map[int64]string {
	t.Helper()
	out := map[string]map[int64]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, p := range files {
		r, err := warcio.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int64]string{}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			m[rec.Offset] = rec.RecordID
		}
		r.Close()
		out[filepath.Base(p)] = m
	}
	return out
}

// TestDedupReplaceUpdatesIndexes is the reported bug: after `dedup run
// --replace` over a crawl's WARC directory, the capture index kept the old
// rows (CDX listed captures twice, mementos at the old offsets failed).
// Now the dedup index and the capture index beside the WARCs are updated
// in the same step: every entry of both points at the start of a record
// with its id and digest (index verify, and an independent re-read here),
// each capture is listed once, every revisit resolves, and the invariants
// hold.
func TestDedupReplaceUpdatesIndexes(t *testing.T) {
	ctx := context.Background()
	dir := crawlTwiceNoDedup(t)
	inputs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(inputs) == 0 {
		t.Fatal("the crawls wrote no WARC file")
	}
	before := recordStarts(t, dir)
	out, stderr, err := runCLI(ctx, append([]string{"dedup", "run", "-o", filepath.Join(t.TempDir(), "out"), "--replace", "--min-size", "1", "--quiet"}, inputs...)...)
	if err != nil {
		t.Fatalf("dedup run --replace: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{"dedup index " + filepath.Join(dir, crawl.IndexSubdir) + " updated", "capture index " + filepath.Join(dir, consumers.CaptureIndexSubdir) + " updated"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	after := recordStarts(t, dir)
	moved := 0
	for f, m := range after {
		for off := range m {
			if before[f][off] != m[off] {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Fatal("dedup --replace moved no record: the test shows nothing")
	}

	// index verify reads back every entry of both indexes.
	vout, _, err := runCLI(ctx, "index", "verify", "--warc-dir", dir, "--json")
	if err != nil {
		t.Fatalf("index verify after replace: %v\n%s", err, vout)
	}
	var vres struct {
		Checked, OK int
	}
	if err := json.Unmarshal([]byte(vout), &vres); err != nil || vres.Checked == 0 || vres.OK != vres.Checked {
		t.Fatalf("index verify: %v %s", err, vout)
	}

	// An independent look at the capture index: every row sits at a
	// record start holding its record id, no (file, offset) twice, and
	// every record of the new files that is indexed is there once.
	ci, err := captureindex.Open(filepath.Join(dir, consumers.CaptureIndexSubdir))
	if err != nil {
		t.Fatal(err)
	}
	defer ci.Close()
	seen := map[string]bool{}
	revisits := 0
	err = ci.ScanAll(ctx, dedupindex.Selector{}, func(e *captureindex.Entry) error {
		k := fmt.Sprintf("%s@%d", e.File, e.Offset)
		if seen[k] {
			return fmt.Errorf("capture %s listed twice", k)
		}
		seen[k] = true
		if _, ok := after[e.File][e.Offset]; !ok {
			return fmt.Errorf("capture %s is at no record start", k)
		}
		if e.IsRevisit() {
			revisits++
			if e.Original == nil {
				return fmt.Errorf("revisit %s unresolved", k)
			}
			if _, ok := after[e.Original.File][e.Original.Offset]; !ok {
				return fmt.Errorf("revisit %s resolves to %s@%d, no record start", k, e.Original.File, e.Original.Offset)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if revisits == 0 {
		t.Fatal("no revisit in the capture index after dedup")
	}
	if err := ci.Check(ctx); err != nil {
		t.Fatal(err)
	}
	ci.Close()
	if _, _, err := runCLI(ctx, "index", "stats", "--warc-dir", dir, "--check"); err != nil {
		t.Fatalf("index stats --check: %v", err)
	}

	// A WARC cut short behind the index's back: verify names the file and
	// the offsets that no longer hold their record.
	victim := inputs[len(inputs)-1]
	fi, _ := os.Stat(victim)
	if err := os.Truncate(victim, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	vout, _, err = runCLI(ctx, "index", "verify", "--warc-dir", dir)
	if err == nil {
		t.Fatalf("index verify passed over a truncated WARC:\n%s", vout)
	}
	if !strings.Contains(vout, filepath.Base(victim)+" offset ") {
		t.Fatalf("index verify does not name the truncated file and offset:\n%s", vout)
	}
	vout, _, err = runCLI(ctx, "index", "verify", "--warc-dir", dir, "--sample", "3", "--file", filepath.Base(victim), "--json")
	var sres struct{ Checked int }
	if json.Unmarshal([]byte(vout), &sres); sres.Checked != 3 {
		t.Fatalf("--sample 3 checked %d: %v %s", sres.Checked, err, vout)
	}

	// Withdraw the truncated file from both indexes: verify passes again.
	dout, _, err := runCLI(ctx, "index", "delete", "--warc-dir", dir, "--file", filepath.Base(victim), "--json")
	if err != nil {
		t.Fatalf("index delete: %v", err)
	}
	var del struct {
		Deleted int64 `json:"deleted"`
		CapDel  int64 `json:"captures_deleted"`
	}
	if err := json.Unmarshal([]byte(dout), &del); err != nil || del.CapDel == 0 {
		t.Fatalf("index delete: %v %s", err, dout)
	}
	if vout, _, err := runCLI(ctx, "index", "verify", "--warc-dir", dir); err != nil {
		t.Fatalf("index verify after deleting the truncated file's entries: %v\n%s", err, vout)
	}
	if _, _, err := runCLI(ctx, "index", "stats", "--warc-dir", dir, "--check"); err != nil {
		t.Fatalf("index stats --check: %v", err)
	}
}

// TestIndexExportScopes: export writes sorted CDXJ that `index import`
// reads back into an equal index; scopes lists both indexes.
func TestIndexExportScopes(t *testing.T) {
	ctx := context.Background()
	dir := crawlTwiceNoDedup(t)
	exp := filepath.Join(t.TempDir(), "export.cdxj")
	if _, _, err := runCLI(ctx, "index", "export", "--warc-dir", dir, "-o", exp); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if !sort.StringsAreSorted(lines) || len(lines) == 0 {
		t.Fatalf("export is not sorted CDXJ (%d lines)", len(lines))
	}
	ix, err := dipebble.Open(filepath.Join(dir, crawl.IndexSubdir))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ix.Stats(ctx)
	ix.Close()
	if err != nil || int64(len(lines)) != st.Originals {
		t.Fatalf("export has %d lines for %d originals (%v)", len(lines), st.Originals, err)
	}
	other := filepath.Join(t.TempDir(), "re")
	if _, _, err := runCLI(ctx, "index", "import", "--index", other, "--quiet", exp); err != nil {
		t.Fatal(err)
	}
	exp2 := filepath.Join(t.TempDir(), "export2.cdxj")
	if _, _, err := runCLI(ctx, "index", "export", "--index", other, "-o", exp2); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(exp2)
	if string(b2) != string(b) {
		t.Fatalf("export → import → export differs:\n%s\n---\n%s", b, b2)
	}
	caps, _, err := runCLI(ctx, "index", "export", "--warc-dir", dir, "--what", "captures")
	cl := strings.Split(strings.TrimSuffix(caps, "\n"), "\n")
	if err != nil || len(cl) <= len(lines) || !sort.StringsAreSorted(cl) {
		t.Fatalf("capture export: %v, %d lines (sorted %v) for %d originals", err, len(cl), sort.StringsAreSorted(cl), len(lines))
	}
	out, _, err := runCLI(ctx, "index", "scopes", "--warc-dir", dir)
	if err != nil || !strings.Contains(out, "default") || !strings.Contains(out, "captures") {
		t.Fatalf("index scopes: %v\n%s", err, out)
	}
	// Usage errors: no selector for delete, a bad date.
	var ue usageError
	if _, _, err := runCLI(ctx, "index", "delete", "--warc-dir", dir); !errors.As(err, &ue) {
		t.Fatalf("delete without a selector: %v", err)
	}
	if _, _, err := runCLI(ctx, "index", "delete", "--warc-dir", dir, "--from", "2024-13"); !errors.As(err, &ue) {
		t.Fatalf("delete --from 2024-13: %v", err)
	}
}

// TestDedupReplaceRefusesWhileIndexBusy: an index beside the inputs that
// the replacement cannot update (here the capture index, held open as a
// crawl or the daemon would hold it) makes `dedup run --replace` refuse
// before anything is swapped: it names the index and the inputs are
// untouched.
func TestDedupReplaceRefusesWhileIndexBusy(t *testing.T) {
	ctx := context.Background()
	dir := crawlTwiceNoDedup(t)
	inputs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	before := recordStarts(t, dir)
	ci, err := captureindex.Open(filepath.Join(dir, consumers.CaptureIndexSubdir))
	if err != nil {
		t.Fatal(err)
	}
	defer ci.Close()
	out, _, err := runCLI(ctx, append([]string{"dedup", "run", "-o", filepath.Join(t.TempDir(), "out"), "--replace", "--min-size", "1", "--quiet"}, inputs...)...)
	if err == nil || !strings.Contains(err.Error(), "capture index "+filepath.Join(dir, consumers.CaptureIndexSubdir)) || !strings.Contains(err.Error(), "nothing is replaced") {
		t.Fatalf("dedup run --replace with the capture index busy: %v\n%s", err, out)
	}
	after := recordStarts(t, dir)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("an input changed although the replacement was refused")
	}
}
