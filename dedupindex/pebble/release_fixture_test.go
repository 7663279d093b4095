package pebble_test

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/ddtest"
)

// Index directories written by earlier releases must open and answer in
// this one: a crawl's dedup index outlives the binary that wrote it.
// testdata/release/<name>/ holds such a directory, written by the release
// its name gives (a commit of main) with releaseFixtureWrite as it was
// then, and committed as written: tables of a compacted first half, a
// second half that only reached the write-ahead log (a clean Close does
// not flush the memtable: Open replays the old log), a deleted file's
// originals and a Commit through a claim. TestReleaseFixtures opens a copy
// of each and checks every answer against releaseFixtureEntries, the data
// the writer was given (not against what this code reads back).
//
// To add the directory of a new release, append its name to
// releaseFixtures and run `go test -run TestReleaseFixtures -update` on
// that release: -update writes a listed fixture only when its directory
// is missing, so a committed one is never rewritten by later code.
// releaseFixtureEntries and releaseFixtureWrite must not change what they
// produce.
var releaseFixtures = []string{
	"9b0c1d4", // main of 2026-11-27, pebble format version 1
}

// releaseFixtureEntries is the data written to every fixture: originals in
// two scopes, SHA-1 and SHA-256 digests, by-URL keys (one digest under two
// URLs), interned and inline (over 256 bytes) file names, MIME types and
// validators present and absent.
func releaseFixtureEntries() []dedupindex.Entry {
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	var out []dedupindex.Entry
	for i := range 60 {
		sum := sha1.Sum([]byte(fmt.Sprintf("release-fixture-%d", i)))
		d := digest.Digest{Alg: digest.SHA1, Sum: sum[:]}.String()
		scope := "crawl-a"
		if i%4 == 3 {
			scope = "crawl-b"
		}
		o := dedupindex.Original{
			Digest:        d,
			TargetURI:     fmt.Sprintf("http://www.site%d.example/page/%d.html", i%7, i),
			Date:          base.Add(time.Duration(i) * 90 * time.Second),
			RecordID:      fmt.Sprintf("<urn:uuid:%08x-0000-4000-8000-%012x>", i, i*7919),
			File:          fmt.Sprintf("FIXTURE-2024030112-%05d.warc.gz", i/20),
			Offset:        int64(i) * 4096,
			Length:        int64(1000 + i),
			PayloadLength: int64(800 + 3*i),
			Status:        200,
			MIME:          []string{"text/html", "image/png", "application/pdf"}[i%3],
		}
		switch {
		case i%5 == 0:
			o.ETag = fmt.Sprintf(`"etag-%d"`, i)
			o.LastModified = "Tue, 27 Feb 2024 10:00:00 GMT"
		case i%11 == 0:
			o.Status, o.MIME = 0, "" // a resource record: no HTTP status, no type
		}
		if i == 17 {
			o.File = strings.Repeat("long-file-name-", 20) + ".warc.gz" // stored inline
			o.TargetURI = "http://www.site3.example/?q=" + strings.Repeat("x", 300)
		}
		out = append(out, dedupindex.Entry{Key: dedupindex.Key{Scope: scope, Digest: d}, Original: o})
	}
	// One SHA-256 payload at two URLs (same-URL dedup keys).
	sum := sha256.Sum256([]byte("release-fixture-sha256"))
	d := digest.Digest{Alg: digest.SHA256, Sum: sum[:]}.String()
	for j, u := range []string{"http://example.org/a", "http://example.org/b"} {
		o := dedupindex.Original{
			Digest: d, TargetURI: u, Date: base.Add(time.Duration(j) * time.Hour),
			RecordID: fmt.Sprintf("<urn:uuid:11111111-2222-4333-8444-%012d>", j), File: "FIXTURE-SHA256.warc.gz",
			Offset: int64(j) * 100, Length: 500, PayloadLength: 400, Status: 200, MIME: "text/plain",
		}
		out = append(out, dedupindex.Entry{Key: dedupindex.Key{Scope: "crawl-a", Digest: d, URL: dedupindex.URLKey(u)}, Original: o})
	}
	return out
}

// releaseFixtureDeleted is the file whose originals the writer deletes
// after writing them (index maintenance): tombstones in the log over
// originals in tables (20-29) and in the log (30-39).
const releaseFixtureDeleted = "FIXTURE-2024030112-00001.warc.gz"

// releaseFixtureWrite writes releaseFixtureEntries to a new index in dir:
// the first 30 through PutBatch and a compaction into tables, the rest
// through PutBatch, one Claim and Commit and the by-URL pair, then the
// originals of releaseFixtureDeleted deleted; it closes without a flush.
func releaseFixtureWrite(dir string) error {
	ctx := context.Background()
	ix, err := pebble.Open(dir)
	if err != nil {
		return err
	}
	defer ix.Close()
	all := releaseFixtureEntries()
	if _, err := ix.PutBatch(ctx, all[:30]); err != nil {
		return err
	}
	if err := ix.Compact(); err != nil {
		return err
	}
	if _, err := ix.PutBatch(ctx, all[30:59]); err != nil {
		return err
	}
	e := all[59]
	cr, err := ix.Claim(ctx, e.Key)
	if err != nil {
		return err
	}
	if cr.State != dedupindex.Claimed {
		return fmt.Errorf("claim of %s: state %v", e.Key.Digest, cr.State)
	}
	if err := ix.Commit(ctx, cr.Ticket, e.Original); err != nil {
		return err
	}
	if _, err := ix.PutBatch(ctx, all[60:]); err != nil {
		return err
	}
	if n, err := ix.Delete(ctx, dedupindex.Selector{Files: []string{releaseFixtureDeleted}}); err != nil || n != 20 {
		return fmt.Errorf("delete %s: %d removed, %v", releaseFixtureDeleted, n, err)
	}
	return ix.Close()
}

func TestReleaseFixtures(t *testing.T) {
	for _, name := range releaseFixtures {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("testdata", "release", name)
			if _, err := os.Stat(src); os.IsNotExist(err) && ddtest.Update() {
				if err := releaseFixtureWrite(src); err != nil {
					t.Fatalf("write fixture %s: %v", src, err)
				}
				os.Remove(filepath.Join(src, "LOCK")) // Pebble's lock file: not part of the data
			}
			dir := filepath.Join(t.TempDir(), "index")
			copyDir(t, src, dir) // Open recovers and rewrites: never in testdata
			checkReleaseFixture(t, dir)
		})
	}
}

func checkReleaseFixture(t *testing.T, dir string) {
	ctx := context.Background()
	ix, err := pebble.Open(dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer ix.Close()
	all := releaseFixtureEntries()
	want := map[string]int64{}
	for i, e := range all {
		got, ok, err := ix.Lookup(ctx, e.Key)
		if err != nil {
			t.Fatalf("entry %d: lookup: %v", i, err)
		}
		if e.Original.File == releaseFixtureDeleted {
			if ok {
				t.Errorf("entry %d (%s, deleted): lookup found %+v", i, e.Key.Digest, got)
			}
			continue
		}
		want[e.Key.Scope]++
		if !ok {
			t.Errorf("entry %d (%s in %s): lookup found nothing", i, e.Key.Digest, e.Key.Scope)
			continue
		}
		if !got.Date.Equal(e.Original.Date) {
			t.Errorf("entry %d: date %v, want %v", i, got.Date, e.Original.Date)
		}
		got.Date = e.Original.Date
		if got != e.Original {
			t.Errorf("entry %d: lookup\n got %+v\nwant %+v", i, got, e.Original)
		}
		// The same digest in the other scope, or under a URL it was not
		// stored with, is another key.
		other := e.Key
		other.Scope = map[string]string{"crawl-a": "crawl-b", "crawl-b": "crawl-a"}[e.Key.Scope]
		if e.Key.URL != "" {
			other = dedupindex.Key{Scope: e.Key.Scope, Digest: e.Key.Digest, URL: "org,example)/c"}
		}
		if o, ok, err := ix.Lookup(ctx, other); err != nil || ok {
			t.Errorf("entry %d: lookup of %+v: %+v, %v, %v; want nothing", i, other, o, ok, err)
		}
	}
	// By-URL answers (CDX same-URL dedup) come from the secondary index.
	byURL, err := ix.ByURL(ctx, "crawl-a", dedupindex.URLKey("http://example.org/b"))
	if err != nil || len(byURL) != 1 || byURL[0].RecordID != all[61].Original.RecordID {
		t.Errorf("ByURL example.org/b: %+v, %v; want the one original %s", byURL, err, all[61].Original.RecordID)
	}
	byURL, err = ix.ByURL(ctx, "crawl-a", dedupindex.URLKey(all[4].Original.TargetURI))
	if err != nil || len(byURL) != 1 || byURL[0].RecordID != all[4].Original.RecordID {
		t.Errorf("ByURL %s: %+v, %v; want %s", all[4].Original.TargetURI, byURL, err, all[4].Original.RecordID)
	}
	st, err := ix.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Originals != want["crawl-a"]+want["crawl-b"] || st.Scopes["crawl-a"] != want["crawl-a"] || st.Scopes["crawl-b"] != want["crawl-b"] {
		t.Errorf("stats %+v, want %v", st, want)
	}
	if err := ix.Check(ctx); err != nil {
		t.Errorf("check: %v", err)
	}
	// The old directory takes new writes, and they are answered.
	e := dedupindex.Entry{Key: dedupindex.Key{Scope: "crawl-a", Digest: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, Original: all[0].Original}
	e.Original.Digest = e.Key.Digest
	if added, err := ix.Put(ctx, e.Key, e.Original); err != nil || !added {
		t.Fatalf("put into the old index: %v, %v", added, err)
	}
	if got, ok, err := ix.Lookup(ctx, e.Key); err != nil || !ok || got.RecordID != e.Original.RecordID {
		t.Errorf("lookup of the new entry: %+v, %v, %v", got, ok, err)
	}
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		n++
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	if n == 0 {
		t.Fatalf("%s holds no files (write it with -update on the release it names)", src)
	}
}
