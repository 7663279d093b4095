package pebble_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/testenv"
)

const deleteChildEnv = "WAYSIDE_DEDUPINDEX_DELETE_CHILD"

const (
	deleteOriginals = 6000
	deleteFile      = "WAYSIDE-20250101000000-00000.warc.gz" // SyntheticOriginal: 20000 a file
)

// deleteEntries is the index the delete crash test starts from: half the
// originals in deleteFile, the other half elsewhere.
func deleteEntries() []dedupindex.Entry {
	es := make([]dedupindex.Entry, deleteOriginals)
	for i := range es {
		o := indextest.SyntheticOriginal(i)
		if i%2 == 1 {
			o.File = "OTHER.warc.gz"
		}
		es[i] = dedupindex.Entry{Key: dedupindex.Key{Scope: "s", Digest: o.Digest}, Original: o}
	}
	return es
}

// deleteChild deletes by file in small durable batches (16 originals
// each) with the failpoint after each batch armed to kill the process
// (SIGKILL) at the batch the parent chose (WAYSIDE_FAILPOINTS, e.g.
// "dedupindex.delete-batch=57*kill"): the kill lands mid-delete however
// fast or slow the machine is.
func deleteChild(dir string) error {
	disarm, err := failpoint.Arm(os.Getenv("WAYSIDE_FAILPOINTS"))
	if err != nil {
		return err
	}
	defer disarm()
	ix, err := pebble.Open(dir, pebble.WithDeleteBatchForTest(16))
	if err != nil {
		return err
	}
	_, err = ix.Delete(context.Background(), dedupindex.Selector{Files: []string{deleteFile}})
	return err
}

// TestDeleteCrashSafety kills (SIGKILL) a process deleting by file once
// a random number of its originals are gone, then reopens the index:
// Check passes (counts, by-URL entries), every original of another file
// is intact, and each original of the deleted file is either intact or
// gone. A second delete then finishes the job.
func TestDeleteCrashSafety(t *testing.T) {
	ctx := context.Background()
	for round := range 3 {
		dir := t.TempDir()
		ix, err := pebble.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		es := deleteEntries()
		if _, err := ix.PutBatch(ctx, es); err != nil {
			t.Fatal(err)
		}
		ix.Close()
		// The child kills itself after batch nth of the delete's
		// deleteOriginals/2/16 batches of 16.
		nth := 1 + rand.IntN(deleteOriginals/2/16-2)
		t.Setenv("WAYSIDE_FAILPOINTS", fmt.Sprintf("dedupindex.delete-batch=%d*kill", nth))
		if !testenv.CrashChild(t, deleteChildEnv+"="+dir, func(string) bool { return false }) {
			t.Fatalf("round %d: the delete child was not killed at batch %d", round, nth)
		}
		ix, err = pebble.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Check(ctx); err != nil {
			t.Fatalf("round %d: Check after SIGKILL mid-delete: %v", round, err)
		}
		gone := 0
		for _, e := range es {
			o, ok, err := ix.Lookup(ctx, e.Key)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !ok && e.Original.File != deleteFile:
				t.Fatalf("round %d: original of another file lost: %+v", round, e.Original)
			case !ok:
				gone++
			case o.RecordID != e.Original.RecordID || o.Offset != e.Original.Offset || o.File != e.Original.File:
				t.Fatalf("round %d: original changed: %+v, want %+v", round, o, e.Original)
			}
		}
		if gone != 16*nth {
			t.Fatalf("round %d: %d of %d gone after %d durable batches of 16", round, gone, deleteOriginals/2, nth)
		}
		n, err := ix.Delete(ctx, dedupindex.Selector{Files: []string{deleteFile}})
		if err != nil || int(n) != deleteOriginals/2-gone {
			t.Fatalf("round %d: finishing delete = %d, %v; want %d", round, n, err, deleteOriginals/2-gone)
		}
		if err := ix.Check(ctx); err != nil {
			t.Fatal(err)
		}
		st, _ := ix.Stats(ctx)
		if st.Originals != deleteOriginals/2 {
			t.Fatalf("round %d: %d originals left, want %d", round, st.Originals, deleteOriginals/2)
		}
		ix.Close()
		t.Logf("round %d: killed after batch %d (%d deleted)", round, nth, gone)
	}
}
