package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/crawl"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/internal/redistest"
	"github.com/wayside-archive/wayside/internal/s3test"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcfile/s3"
)

// indexFiles lists the file locations the dedup index and the capture
// index of a crawl's WARC directory name, with their entry counts.
func indexFiles(t *testing.T, dir string) (originals, captures map[string]int) {
	t.Helper()
	ctx := context.Background()
	ix, err := dipebble.Open(filepath.Join(dir, crawl.IndexSubdir))
	if err != nil {
		t.Fatal(err)
	}
	originals = map[string]int{}
	err = ix.Scan(ctx, dedupindex.Selector{}, func(e dedupindex.Entry) error { originals[e.Original.File]++; return nil })
	ix.Close()
	if err != nil {
		t.Fatal(err)
	}
	ci, err := captureindex.Open(filepath.Join(dir, consumers.CaptureIndexSubdir))
	if err != nil {
		t.Fatal(err)
	}
	defer ci.Close()
	captures = map[string]int{}
	err = ci.ScanAll(ctx, dedupindex.Selector{}, func(e *captureindex.Entry) error { captures[e.File]++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return originals, captures
}

// TestIndexRelocate moves a crawl's WARC files to another directory and
// records it with `index relocate`: a copy cut short, and (with --digests)
// a copy of the right size with a changed byte in a record, are refused
// with the file (and offset) named and nothing changed; the good copy is
// taken, every entry of both indexes names file:///NEW/NAME, `index
// verify` reads every entry back there (the old files removed), `index
// stats --check` passes, and a second run has nothing to do.
func TestIndexRelocate(t *testing.T) {
	ctx := context.Background()
	dir := crawlTwiceNoDedup(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	origBefore, capBefore := indexFiles(t, dir)
	if len(origBefore) == 0 || len(capBefore) == 0 {
		t.Fatalf("indexes name no files: %v %v", origBefore, capBefore)
	}
	newDir := t.TempDir()
	copies := testenv.CopyFiles(t, newDir, files...)
	to := "file://" + newDir

	unchanged := func(when string) {
		t.Helper()
		o, c := indexFiles(t, dir)
		if fmt.Sprint(o) != fmt.Sprint(origBefore) || fmt.Sprint(c) != fmt.Sprint(capBefore) {
			t.Fatalf("%s: the indexes changed:\n%v\n%v", when, o, c)
		}
	}
	// A copy cut short.
	good, _ := os.ReadFile(copies[0])
	os.WriteFile(copies[0], good[:len(good)-10], 0o644)
	out, _, err := runCLI(ctx, "index", "relocate", "--warc-dir", dir, to)
	if err == nil || !strings.Contains(out, filepath.Base(copies[0])+": "+fmt.Sprint(len(good))+" bytes, but") {
		t.Fatalf("relocate onto a short copy: %v\n%s", err, out)
	}
	unchanged("after the refused short copy")
	// The right size, a record's payload changed: only --digests sees it.
	bad := append([]byte(nil), good...)
	var off int64 = -1
	ix, _ := dipebble.Open(filepath.Join(dir, crawl.IndexSubdir))
	ix.Scan(ctx, dedupindex.Selector{Files: []string{filepath.Base(copies[0])}}, func(e dedupindex.Entry) error {
		if off < 0 {
			off = e.Original.Offset
		}
		return nil
	})
	ix.Close()
	if off < 0 {
		t.Fatalf("no original in %s", copies[0])
	}
	// The record is gzipped: a byte inside its member breaks it.
	bad[off+40] ^= 0xff
	os.WriteFile(copies[0], bad, 0o644)
	out, _, err = runCLI(ctx, "index", "relocate", "--warc-dir", dir, "--digests", to)
	if err == nil || !strings.Contains(out, fmt.Sprintf("%s offset %d", filepath.Base(copies[0]), off)) {
		t.Fatalf("relocate --digests onto a changed copy: %v\n%s", err, out)
	}
	unchanged("after the refused changed copy")

	os.WriteFile(copies[0], good, 0o644)
	out, _, err = runCLI(ctx, "index", "relocate", "--warc-dir", dir, "--dry-run", to)
	if err != nil || !strings.Contains(out, "would move") {
		t.Fatalf("relocate --dry-run: %v\n%s", err, out)
	}
	unchanged("after --dry-run")
	out, stderr, err := runCLI(ctx, "index", "relocate", "--warc-dir", dir, "--digests", "--json", to)
	if err != nil {
		t.Fatalf("relocate: %v\n%s%s", err, out, stderr)
	}
	var res struct {
		Files     int   `json:"files"`
		Records   int   `json:"records_checked"`
		Originals int64 `json:"originals_moved"`
		Captures  int   `json:"capture_files_moved"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	nOrig := 0
	for _, n := range origBefore {
		nOrig += n
	}
	if res.Files != len(files) || res.Originals != int64(nOrig) || res.Captures != len(capBefore) || res.Records == 0 {
		t.Errorf("relocate result %+v; want %d files, %d originals, %d capture files", res, len(files), nOrig, len(capBefore))
	}
	o, c := indexFiles(t, dir)
	for f, n := range origBefore {
		if o[mustJoin(t, to, f)] != n {
			t.Errorf("originals of %s: %d at the new location, want %d (%v)", f, o[mustJoin(t, to, f)], n, o)
		}
	}
	for f, n := range capBefore {
		if c[mustJoin(t, to, f)] != n {
			t.Errorf("captures of %s: %d at the new location, want %d (%v)", f, c[mustJoin(t, to, f)], n, c)
		}
	}
	for _, f := range files {
		os.Remove(f)
	}
	if out, _, err := runCLI(ctx, "index", "verify", "--warc-dir", dir); err != nil {
		t.Fatalf("index verify after relocate (old files removed): %v\n%s", err, out)
	}
	if out, _, err := runCLI(ctx, "index", "stats", "--warc-dir", dir, "--check"); err != nil {
		t.Fatalf("index stats --check: %v\n%s", err, out)
	}
	if out, _, err := runCLI(ctx, "index", "relocate", "--warc-dir", dir, to); err != nil || !strings.Contains(out, "0 files") {
		t.Fatalf("relocate again: %v\n%s", err, out)
	}
}

// TestIndexRelocateS3 records a collection copied into object storage (a
// real SeaweedFS): relocate with --digests reads every record there by
// range, and `index verify` afterwards reads every entry from the bucket.
func TestIndexRelocateS3(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	dir := crawlTwiceNoDedup(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	loc := srv.URL("moved")
	b, err := s3.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	// One file not there yet: refused, nothing changed.
	for _, f := range files[1:] {
		if _, err := b.Upload(ctx, f, filepath.Base(f)); err != nil {
			t.Fatal(err)
		}
	}
	origBefore, capBefore := indexFiles(t, dir)
	out, _, err := runCLI(ctx, "index", "relocate", "--warc-dir", dir, loc)
	if err == nil || !strings.Contains(out, filepath.Base(files[0])+": not at its new location") {
		t.Fatalf("relocate with a file missing in the bucket: %v\n%s", err, out)
	}
	if o, c := indexFiles(t, dir); fmt.Sprint(o) != fmt.Sprint(origBefore) || fmt.Sprint(c) != fmt.Sprint(capBefore) {
		t.Fatal("a refused relocation changed the indexes")
	}
	if _, err := b.Upload(ctx, files[0], filepath.Base(files[0])); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := runCLI(ctx, "index", "relocate", "--warc-dir", dir, "--digests", loc); err != nil {
		t.Fatalf("relocate: %v\n%s%s", err, out, stderr)
	}
	o, _ := indexFiles(t, dir)
	for f := range o {
		if !strings.HasPrefix(f, "s3://") || !strings.Contains(f, "endpoint=") {
			t.Errorf("an original still at %s", f)
		}
	}
	for _, f := range files {
		os.Remove(f)
	}
	out, _, err = runCLI(ctx, "index", "verify", "--warc-dir", dir, "--json")
	var v struct{ Checked, OK int }
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Checked == 0 || v.OK != v.Checked {
		t.Fatalf("index verify from the bucket: %v\n%s", err, out)
	}
}

// TestIndexRelocateKill9 kills `index relocate` (SIGKILL at a failpoint)
// after the first batch of dedup-index moves, and again just before the
// capture index's commit: after each kill `index stats --check` and the
// capture index's Check pass and every entry is at its old or its new
// location (some of each after the first kill); running it again
// finishes, with every entry moved and none lost.
func TestIndexRelocateKill9(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	oldDir, newDir := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	os.MkdirAll(oldDir, 0o755)
	os.MkdirAll(newDir, 0o755)
	idx, capDir := filepath.Join(dir, "idx"), filepath.Join(dir, "captures")
	const n, perFile = 3 * relocateBatch, relocateBatch
	ix, err := dipebble.Open(idx)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := captureindex.Open(capDir)
	if err != nil {
		t.Fatal(err)
	}
	var es []dedupindex.Entry
	var cs []wayside.Capture
	names := map[string]bool{}
	for i := range n {
		o := indextest.SyntheticOriginal(i)
		o.File = fmt.Sprintf("WAYSIDE-20250101000000-%05d.warc.gz", i/perFile)
		names[o.File] = true
		es = append(es, dedupindex.Entry{Key: dedupindex.Key{Scope: "s", Digest: o.Digest}, Original: o})
		cs = append(cs, wayside.Capture{Type: "response", URI: o.TargetURI, Date: o.Date, File: o.File, Offset: o.Offset, Length: o.Length, Digest: o.Digest, Status: 200})
	}
	for i := 0; i < n; i += 1000 {
		if _, err := ix.PutBatch(ctx, es[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ci.Add(ctx, cs...); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ci.Close()
	// The files: sizes only are checked without --digests.
	for name := range names {
		body := []byte(strings.Repeat(name, 100))
		os.WriteFile(filepath.Join(oldDir, name), body, 0o644)
		os.WriteFile(filepath.Join(newDir, name), body, 0o644)
	}
	to := "file://" + newDir
	args := []string{"index", "relocate", "--index", idx, "--captures", capDir, "--dir", oldDir, to}
	// state checks both indexes and counts the entries moved.
	state := func(when string) (origMoved, capMoved int) {
		t.Helper()
		if out, _, err := runCLI(ctx, "index", "stats", "--index", idx, "--check"); err != nil {
			t.Fatalf("%s: index stats --check: %v\n%s", when, err, out)
		}
		ix, err := dipebble.Open(idx)
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		for _, e := range es {
			o, ok, err := ix.Lookup(ctx, e.Key)
			if err != nil || !ok {
				t.Fatalf("%s: original %s lost: %v", when, e.Key.Digest, err)
			}
			switch o.File {
			case e.Original.File:
			case mustJoin(t, to, e.Original.File):
				origMoved++
			default:
				t.Fatalf("%s: original in %s", when, o.File)
			}
			if o.Offset != e.Original.Offset || o.RecordID != e.Original.RecordID {
				t.Fatalf("%s: original changed: %+v", when, o)
			}
		}
		ci, err := captureindex.Open(capDir)
		if err != nil {
			t.Fatal(err)
		}
		defer ci.Close()
		if err := ci.Check(ctx); err != nil {
			t.Fatalf("%s: capture index Check: %v", when, err)
		}
		total := 0
		err = ci.ScanAll(ctx, dedupindex.Selector{}, func(e *captureindex.Entry) error {
			total++
			if strings.HasPrefix(e.File, "file://") {
				capMoved++
			}
			return nil
		})
		if err != nil || total != n {
			t.Fatalf("%s: %d captures (%v), want %d", when, total, err, n)
		}
		return origMoved, capMoved
	}
	kill := func(point string) {
		t.Helper()
		js, _ := json.Marshal(args)
		t.Setenv(failpointsEnv, point)
		if !testenv.CrashChild(t, cliChildEnv+"="+string(js), func(string) bool { return false }) {
			t.Fatalf("relocate was not killed at %s", point)
		}
	}
	kill("index.relocate-batch=2*kill")
	om, cm := state("after kill -9 between dedup batches")
	if om != relocateBatch || cm != 0 {
		t.Fatalf("after the kill between batches: %d originals and %d captures moved, want %d and 0", om, cm, relocateBatch)
	}
	kill("captureindex.relocate-before-commit=kill")
	om, cm = state("after kill -9 before the capture index's commit")
	if om != n || cm != 0 {
		t.Fatalf("after the kill before the capture commit: %d originals and %d captures moved, want %d and 0", om, cm, n)
	}
	t.Setenv(failpointsEnv, "")
	start := time.Now()
	if out, stderr, err := runCLI(ctx, args...); err != nil {
		t.Fatalf("relocate again: %v\n%s%s", err, out, stderr)
	}
	om, cm = state("after the relocation ran again")
	if om != n || cm != n {
		t.Fatalf("after the re-run: %d originals and %d captures moved, want %d each (%s)", om, cm, n, time.Since(start))
	}
}

func mustJoin(t *testing.T, base, name string) string {
	t.Helper()
	loc, err := warcfile.Join(base, name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestIndexRelocateRedis relocates the originals of a Redis Cluster dedup
// index (a real cluster on loopback): every original names its new
// location afterwards, unchanged otherwise, and `index stats --check`
// passes — relocation goes through the backend's maintenance interface.
func TestIndexRelocateRedis(t *testing.T) {
	ctx := context.Background()
	c, err := redistest.Start(ctx, redistest.Options{Masters: 3, Replicas: -1})
	c = redistest.Require(t, c, err)
	defer c.Close()
	raw := "redis://" + strings.Join(c.Addrs(), ",") + "/?prefix=relocate"
	ix, err := dedupindex.OpenURL(ctx, raw, dedupindex.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	oldDir, newDir := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	os.MkdirAll(oldDir, 0o755)
	os.MkdirAll(newDir, 0o755)
	var es []dedupindex.Entry
	for i := range 300 {
		o := indextest.SyntheticOriginal(i)
		o.File = fmt.Sprintf("R-%d.warc.gz", i%3)
		es = append(es, dedupindex.Entry{Key: dedupindex.Key{Scope: "s", Digest: o.Digest}, Original: o})
	}
	if _, err := dedupindex.PutEntries(ctx, ix, es); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	for i := range 3 {
		name := fmt.Sprintf("R-%d.warc.gz", i)
		body := []byte(strings.Repeat(name, 50+i))
		os.WriteFile(filepath.Join(oldDir, name), body, 0o644)
		os.WriteFile(filepath.Join(newDir, name), body, 0o644)
	}
	to := "file://" + newDir
	if out, stderr, err := runCLI(ctx, "index", "relocate", "--index", raw, "--captures", "-", "--dir", oldDir, to); err != nil {
		t.Fatalf("relocate: %v\n%s%s", err, out, stderr)
	}
	if out, _, err := runCLI(ctx, "index", "stats", "--index", raw, "--check"); err != nil {
		t.Fatalf("index stats --check: %v\n%s", err, out)
	}
	ix, err = dedupindex.OpenURL(ctx, raw, dedupindex.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, e := range es {
		o, ok, err := ix.Lookup(ctx, e.Key)
		if err != nil || !ok {
			t.Fatalf("original %s: %v %v", e.Key.Digest, ok, err)
		}
		if o.File != mustJoin(t, to, e.Original.File) || o.Offset != e.Original.Offset || o.RecordID != e.Original.RecordID {
			t.Fatalf("original after relocate: %+v, want %s at %d", o, mustJoin(t, to, e.Original.File), e.Original.Offset)
		}
	}
}
