package pebble_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/digest"
)

// TestPowerLoss drops every write that was not fsynced (Pebble's strict
// in-memory file system) after commits, seeding batches and pending claims,
// and checks that whatever Commit, Put and PutBatch acknowledged survives,
// pending claims do not, and the index is consistent.
func TestPowerLoss(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewStrictMem()
	open := func() *pebble.Index {
		ix, err := pebble.Open("/index", pebble.WithFSForTest(mem))
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	key := func(scope string, i int) dedupindex.Key {
		return dedupindex.Key{Scope: scope, Digest: digest.Of(digest.SHA1, []byte(fmt.Sprint(scope, i))).String()}
	}
	orig := func(i int) dedupindex.Original {
		return dedupindex.Original{TargetURI: fmt.Sprintf("http://e/%d", i), Date: time.Date(2025, 1, 1, 0, 0, i, 0, time.UTC), File: fmt.Sprintf("f%d.warc.gz", i%3), MIME: "text/html"}
	}
	for round := range 3 {
		ix := open()
		for i := range 20 {
			r, err := ix.Claim(ctx, key(fmt.Sprint("c", round), i))
			if err != nil || r.State != dedupindex.Claimed {
				t.Fatalf("round %d: Claim = %v, %v", round, r.State, err)
			}
			if err := ix.Commit(ctx, r.Ticket, orig(i)); err != nil {
				t.Fatal(err)
			}
		}
		var batch []dedupindex.Entry
		for i := range 50 {
			batch = append(batch, dedupindex.Entry{Key: key(fmt.Sprint("b", round), i), Original: orig(i)})
		}
		if _, err := ix.PutBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		pending, err := ix.Claim(ctx, key("pending", round))
		if err != nil || pending.State != dedupindex.Claimed {
			t.Fatal(err)
		}
		// Power loss: nothing that was not synced survives.
		mem.SetIgnoreSyncs(true)
		ix.Close()
		mem.ResetToSyncedState()
		mem.SetIgnoreSyncs(false)

		ix = open()
		if err := ix.Check(ctx); err != nil {
			t.Fatalf("round %d: Check after power loss: %v", round, err)
		}
		for r := 0; r <= round; r++ {
			for i := range 20 {
				if o, ok, err := ix.Lookup(ctx, key(fmt.Sprint("c", r), i)); err != nil || !ok || o.TargetURI != orig(i).TargetURI {
					t.Fatalf("round %d: committed original c%d/%d lost: %v %v", round, r, i, ok, err)
				}
			}
			for i := range 50 {
				if _, ok, err := ix.Lookup(ctx, key(fmt.Sprint("b", r), i)); err != nil || !ok {
					t.Fatalf("round %d: seeded original b%d/%d lost: %v %v", round, r, i, ok, err)
				}
			}
		}
		if r, err := ix.Claim(ctx, key("pending", round)); err != nil || r.State != dedupindex.Claimed {
			t.Fatalf("round %d: a pending claim survived power loss: %v %v", round, r.State, err)
		}
		st, err := ix.Stats(ctx)
		if err != nil || st.Originals != int64(70*(round+1)) {
			t.Fatalf("round %d: stats = %+v, %v", round, st, err)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
