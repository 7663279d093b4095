package pebble_test

import (
	"bufio"
	"context"
	"fmt"
	"github.com/wayside-archive/wayside/internal/testenv"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	"github.com/wayside-archive/wayside/dedupindex/pebble"
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

// deleteChild deletes by file in small durable batches and reports the
// index's count of originals as it falls, until it is killed.
func deleteChild(dir string) error {
	ix, err := pebble.Open(dir, pebble.WithDeleteBatchForTest(16))
	if err != nil {
		return err
	}
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := ix.Delete(ctx, dedupindex.Selector{Files: []string{deleteFile}})
		done <- err
	}()
	out := bufio.NewWriter(os.Stdout)
	last := int64(-1)
	for {
		select {
		case err := <-done:
			fmt.Fprintln(out, "done")
			out.Flush()
			return err
		default:
		}
		st, err := ix.Stats(ctx)
		if err != nil {
			return err
		}
		if st.Originals != last { // only changes: the parent must not lag behind
			last = st.Originals
			fmt.Fprintln(out, last)
			out.Flush()
		}
	}
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
		target := deleteOriginals - 1 - rand.IntN(deleteOriginals/2-2) // kill once this many are left
		// The child prints the originals left as they fall ("done" if it
		// finishes first); it is killed once target or fewer are left.
		killedAt := -1
		testenv.CrashChild(t, deleteChildEnv+"="+dir, func(l string) bool {
			n, err := strconv.Atoi(l)
			if err == nil && n <= target {
				killedAt = n
				return true
			}
			return false
		})
		if killedAt < 0 {
			t.Fatalf("round %d: the delete ended before %d originals were left", round, target)
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
		if gone == 0 || gone == deleteOriginals/2 {
			t.Fatalf("round %d: %d of %d gone: the kill did not land mid-delete", round, gone, deleteOriginals/2)
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
		t.Logf("round %d: killed with %d originals left (%d deleted)", round, killedAt, gone)
	}
}
