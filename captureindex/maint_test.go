package captureindex

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
)

// maintCaptures is a small archive: three files, two hosts, one capture
// a day, and in c.warc.gz revisits of originals held in a.warc.gz.
func maintCaptures() []wayside.Capture {
	var cs []wayside.Capture
	files := []string{"a.warc.gz", "b.warc.gz"}
	for i := range 12 {
		host := "http://one.example/"
		if i%2 == 1 {
			host = "https://two.example/"
		}
		cs = append(cs, capture(fmt.Sprintf("%sp%d", host, i), t0.Add(time.Duration(i)*24*time.Hour), files[i%2], int64(i)*1000, fmt.Sprint("body", i)))
	}
	for i := 0; i < 12; i += 2 {
		of := cs[i]
		cs = append(cs, revisit(of.URI, of.Date.Add(time.Hour), "c.warc.gz", int64(i)*100, of))
	}
	return cs
}

func keysOf(t *testing.T, ix *Index, sel dedupindex.Selector) []string {
	t.Helper()
	var out []string
	err := ix.ScanAll(context.Background(), sel, func(e *Entry) error {
		out = append(out, fmt.Sprintf("%s@%d", e.File, e.Offset))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestDeleteBySelector(t *testing.T) {
	ctx := context.Background()
	sels := map[string]dedupindex.Selector{
		"file":       {Files: []string{"b.warc.gz"}},
		"scope":      {Scope: DefaultScope},
		"url-prefix": {URLPrefix: "http://one.example/p1"},
		"dates":      {From: t0.Add(3 * 24 * time.Hour), To: t0.Add(6 * 24 * time.Hour)},
	}
	for name, sel := range sels {
		t.Run(name, func(t *testing.T) {
			ix := openTest(t)
			all := maintCaptures()
			if _, err := ix.Add(ctx, all...); err != nil {
				t.Fatal(err)
			}
			var want, keep []string
			for _, c := range all {
				k := fmt.Sprintf("%s@%d", c.File, c.Offset)
				if sel.Match(DefaultScope, dedupindex.Original{File: c.File, TargetURI: c.URI, Date: c.Date}) {
					want = append(want, k)
				} else {
					keep = append(keep, k)
				}
			}
			sort.Strings(want)
			sort.Strings(keep)
			if len(want) == 0 {
				t.Fatal("selector selects nothing")
			}
			if got := keysOf(t, ix, sel); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("ScanAll = %v, want %v", got, want)
			}
			n, err := ix.Delete(ctx, sel)
			if err != nil || n != int64(len(want)) {
				t.Fatalf("Delete = %d, %v; want %d", n, err, len(want))
			}
			if got := keysOf(t, ix, dedupindex.Selector{}); fmt.Sprint(got) != fmt.Sprint(keep) {
				t.Fatalf("after delete: %v, want %v", got, keep)
			}
			// No revisit points at a removed capture.
			err = ix.ScanAll(ctx, dedupindex.Selector{}, func(e *Entry) error {
				if e.Original != nil && sel.Match(DefaultScope, dedupindex.Original{File: e.Original.File, TargetURI: e.URI, Date: e.RevisitOf.Date}) {
					return fmt.Errorf("revisit %s@%d still points at removed %s@%d", e.File, e.Offset, e.Original.File, e.Original.Offset)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			st, err := ix.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var captures int64
			for _, s := range st.Scopes {
				captures += s.Captures
			}
			if captures != int64(len(keep)) {
				t.Fatalf("Stats captures = %d, want %d", captures, len(keep))
			}
		})
	}
	t.Run("refuses-empty", func(t *testing.T) {
		ix := openTest(t)
		if _, err := ix.Add(ctx, maintCaptures()...); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Delete(ctx, dedupindex.Selector{}); !errors.Is(err, dedupindex.ErrEmptySelector) {
			t.Fatalf("Delete(zero) = %v", err)
		}
	})
}

// TestReplaceFiles is the reported bug: a.warc.gz is rewritten in place
// (dedup --replace: same name, records at new offsets) and re-ingested.
// Re-adding alone keeps the old rows beside the new (CDX lists captures
// twice); ReplaceFiles leaves exactly the new rows, revisits in other
// files re-resolved to the new offsets, and adding the new captures again
// (the daemon re-ingesting the file) changes nothing.
func TestReplaceFiles(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t)
	all := maintCaptures()
	if _, err := ix.Add(ctx, all...); err != nil {
		t.Fatal(err)
	}
	var moved []wayside.Capture
	for _, c := range all {
		if c.File == "a.warc.gz" {
			c.Offset = c.Offset/2 + 7
			moved = append(moved, c)
		}
	}
	// What the bug did: the re-ingest adds rows beside the stale ones.
	if n, err := ix.Add(ctx, moved...); err != nil || n != len(moved) {
		t.Fatalf("re-add = %d, %v", n, err)
	}
	removed, added, err := ix.ReplaceFiles(ctx, map[string][]wayside.Capture{"a.warc.gz": moved})
	if err != nil {
		t.Fatal(err)
	}
	if removed != 2*len(moved) || added != len(moved) {
		t.Fatalf("ReplaceFiles removed %d, added %d; want %d, %d", removed, added, 2*len(moved), len(moved))
	}
	want := map[string]bool{}
	for _, c := range moved {
		want[fmt.Sprintf("%s@%d", c.File, c.Offset)] = true
	}
	got := keysOf(t, ix, dedupindex.Selector{Files: []string{"a.warc.gz"}})
	if len(got) != len(moved) {
		t.Fatalf("a.warc.gz has %d rows, want %d: %v", len(got), len(moved), got)
	}
	for _, k := range got {
		if !want[k] {
			t.Fatalf("stale row %s", k)
		}
	}
	err = ix.ScanAll(ctx, dedupindex.Selector{Files: []string{"c.warc.gz"}}, func(e *Entry) error {
		if e.Original == nil || !want[fmt.Sprintf("%s@%d", e.Original.File, e.Original.Offset)] {
			return fmt.Errorf("revisit %s@%d resolves to %+v, not a new offset", e.File, e.Offset, e.Original)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ix.Add(ctx, moved...); err != nil || n != 0 {
		t.Fatalf("re-ingest after ReplaceFiles added %d, %v", n, err)
	}
	if _, _, err := ix.ReplaceFiles(ctx, map[string][]wayside.Capture{"a.warc.gz": moved}); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, ix, dedupindex.Selector{}); len(got) != len(all) {
		t.Fatalf("%d rows after a second ReplaceFiles, want %d", len(got), len(all))
	}
}
