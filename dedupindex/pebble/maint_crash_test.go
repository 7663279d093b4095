package pebble_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
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
// (SIGKILL) at the batch the parent chose (testenv.KillAt): the kill lands
// mid-delete however fast or slow the machine is.
func deleteChild(dir string) error {
	disarm, err := testenv.ArmChildFailpoints()
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

// TestDeleteCrashSafety kills (SIGKILL) a process deleting by file after
// a random durable batch of 16, then reopens the index: Check passes
// (counts, by-URL entries), every original of another file is intact,
// and exactly the originals of the deleted file in the batches written
// are gone, the others intact. A second delete then finishes the job.
func TestDeleteCrashSafety(t *testing.T) {
	ctx := context.Background()
	for round := range 3 {
		what := fmt.Sprintf("round %d", round)
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
		testenv.KillAt(t, deleteChildEnv+"="+dir, "dedupindex.delete-batch", nth)
		ix, err = pebble.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		d := testenv.DeleteKill[dedupindex.Entry]{
			Entries:  es,
			Selected: func(e dedupindex.Entry) bool { return e.Original.File == deleteFile },
			Present: func(e dedupindex.Entry) (bool, error) {
				o, ok, err := ix.Lookup(ctx, e.Key)
				if err == nil && ok && (o.RecordID != e.Original.RecordID || o.Offset != e.Original.Offset || o.File != e.Original.File) {
					err = fmt.Errorf("original changed: %+v", o)
				}
				return ok, err
			},
			Check: func() error { return ix.Check(ctx) },
		}
		gone := d.Killed(t, what, 16*nth)
		d.Finish(t, what, gone, func() (int64, error) {
			return ix.Delete(ctx, dedupindex.Selector{Files: []string{deleteFile}})
		})
		st, _ := ix.Stats(ctx)
		if st.Originals != deleteOriginals/2 {
			t.Fatalf("round %d: %d originals left, want %d", round, st.Originals, deleteOriginals/2)
		}
		ix.Close()
		t.Logf("round %d: killed after batch %d (%d deleted)", round, nth, gone)
	}
}
