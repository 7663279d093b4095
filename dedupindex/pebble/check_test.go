package pebble

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
	"github.com/wayside-archive/wayside/digest"
)

// TestCheckFindsCorruption damages a healthy index in the ways Check must
// notice and verifies that it reports each one.
func TestCheckFindsCorruption(t *testing.T) {
	ctx := context.Background()
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		damage func(ix *Index, primary, secondary []byte) error
		want   string
	}{
		{"orphan by-url entry", func(ix *Index, p, s []byte) error { return ix.db.Delete(p, pebble.Sync) }, "has no original"},
		{"missing by-url entry", func(ix *Index, p, s []byte) error { return ix.db.Delete(s, pebble.Sync) }, "by-url entries"},
		{"corrupt value", func(ix *Index, p, s []byte) error { return ix.db.Set(p, []byte{0xff}, pebble.Sync) }, "value"},
		{"counter off", func(ix *Index, p, s []byte) error { return ix.db.Merge(counterKey(1), []byte{2}, pebble.Sync) }, "counter says"},
		{"unknown key", func(ix *Index, p, s []byte) error { return ix.db.Set([]byte{0x7f, 1}, nil, pebble.Sync) }, "unknown key"},
		{"persisted pending marker", func(ix *Index, p, s []byte) error { return ix.db.Set([]byte{0x20, 'p'}, nil, pebble.Sync) }, "unknown key"},
		{"by-url URL mismatch", func(ix *Index, p, s []byte) error {
			dp, _ := decodePrimaryKey(p)
			b := ix.db.NewBatch()
			b.Delete(s, nil)
			b.Set(secondaryKey(1, hash8("com,example)/other"), dp.pk), nil, nil)
			return b.Commit(pebble.Sync)
		}, "has no original"},
		{"unknown file id", func(ix *Index, p, s []byte) error {
			return ix.db.Set(p, record.Append(nil, &record.Record{Date: date, TargetURI: "http://e/", FileID: 99}), pebble.Sync)
		}, "unknown file id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			k := dedupindex.Key{Scope: "s", Digest: digest.Of(digest.SHA1, []byte("x")).String()}
			o := dedupindex.Original{TargetURI: "http://example.com/x", Date: date, File: "a.warc.gz"}
			if _, err := ix.Put(ctx, k, o); err != nil {
				t.Fatal(err)
			}
			if err := ix.Check(ctx); err != nil {
				t.Fatalf("Check of a healthy index: %v", err)
			}
			pk, _ := parseKey(k)
			p := primaryKey(1, pk)
			s := secondaryKey(1, hash8(dedupindex.URLKey(o.TargetURI)), pk)
			if _, closer, err := ix.db.Get(s); err != nil {
				t.Fatalf("secondary key not where expected: %v", err)
			} else {
				closer.Close()
			}
			if err := tc.damage(ix, p, s); err != nil {
				t.Fatal(err)
			}
			err = ix.Check(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestOpenRejectsForeignDirectory refuses a Pebble directory that is not a
// Wayside index rather than reading it as one.
func TestOpenRejectsForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("foreign"), []byte("data"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if ix, err := Open(dir); err == nil {
		ix.Close()
		t.Fatal("Open accepted a foreign Pebble directory")
	}
}
