package captureindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/testenv"
)

const deleteChildEnv = "WAYSIDE_CAPTUREINDEX_DELETE_CHILD"

const deleteCaptures = 3000

// deleteWorkload: originals in a.warc.gz and b.warc.gz, revisits of the
// a.warc.gz ones in c.warc.gz (deleting a.warc.gz unresolves them).
func deleteWorkload() []wayside.Capture {
	var cs []wayside.Capture
	for i := range deleteCaptures {
		f := "a.warc.gz"
		if i%2 == 1 {
			f = "b.warc.gz"
		}
		c := capture(fmt.Sprintf("http://del.example/p%d", i), t0.Add(time.Duration(i)*time.Second), f, int64(i)*1000, fmt.Sprint("body", i))
		cs = append(cs, c)
		if i%10 == 0 {
			cs = append(cs, revisit(c.URI, c.Date.Add(time.Hour), "c.warc.gz", int64(i)*10, c))
		}
	}
	return cs
}

func deleteChild(dir string) error {
	disarm, err := testenv.ArmChildFailpoints()
	if err != nil {
		return err
	}
	defer disarm()
	ix, err := Open(filepath.Join(dir, "ci"))
	if err != nil {
		return err
	}
	ix.delBatch = 16 // TestDeleteKill9's per
	_, err = ix.Delete(context.Background(), dedupindex.Selector{Files: []string{"a.warc.gz"}})
	return err
}

// TestDeleteKill9 kills (SIGKILL) a process deleting a file's captures
// after a durable batch (one while revisits are unresolved, the batch
// where removal starts, one at random while captures are removed): after
// reopening, Check passes (counters, unresolved markers), every capture of
// the other files is there, exactly the captures of the deleted file in
// the batches written are gone, and no revisit points at a removed
// capture. A second delete finishes.
func TestDeleteKill9(t *testing.T) {
	ctx := context.Background()
	all := deleteWorkload()
	for round := range 3 {
		dir := t.TempDir()
		ix, err := Open(filepath.Join(dir, "ci"), WithSyncInterval(-1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Add(ctx, all...); err != nil {
			t.Fatal(err)
		}
		ix.Close()
		// The child kills itself after durable batch nth of 16 changes
		// (the failpoint after each batch: however fast or slow the
		// machine, the kill lands mid-delete). Delete unresolves the
		// revisits of a.warc.gz first, then removes its captures, so nth is
		// drawn from the batches that remove captures and the number gone
		// is known exactly.
		unresolves := 0
		for i, c := range all {
			// deleteWorkload puts each revisit right after its original.
			if c.Type == "revisit" && all[i-1].File == "a.warc.gz" {
				unresolves++
			}
		}
		const per = 16
		first := unresolves/per + 1 // the first batch that removes a capture
		last := (unresolves+deleteCaptures/2)/per - 1
		var nth int
		switch round {
		case 0: // while revisits are being unresolved: nothing gone yet
			nth = 1 + rand.IntN(first-1)
		case 1: // the batch that unresolves the last revisits and removes the first captures
			nth = first
		default:
			nth = first + rand.IntN(last-first+1)
		}
		wantGone := max(0, nth*per-unresolves)
		what := fmt.Sprintf("round %d", round)
		testenv.KillAt(t, deleteChildEnv+"="+dir, "captureindex.delete-batch", nth)
		ix, err = Open(filepath.Join(dir, "ci"))
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		err = ix.ScanAll(ctx, dedupindex.Selector{}, func(e *Entry) error {
			have[fmt.Sprintf("%s@%d", e.File, e.Offset)] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		d := testenv.DeleteKill[wayside.Capture]{
			Entries:  all,
			Selected: func(c wayside.Capture) bool { return c.File == "a.warc.gz" },
			Present:  func(c wayside.Capture) (bool, error) { return have[fmt.Sprintf("%s@%d", c.File, c.Offset)], nil },
			Check:    func() error { return ix.Check(ctx) },
		}
		gone := d.Killed(t, fmt.Sprintf("%s, killed after batch %d (%d unresolves first, %d per batch)", what, nth, unresolves, per), wantGone)
		err = ix.ScanAll(ctx, dedupindex.Selector{}, func(e *Entry) error {
			if e.Original != nil && !have[fmt.Sprintf("%s@%d", e.Original.File, e.Original.Offset)] {
				return fmt.Errorf("revisit %s@%d points at removed %s@%d", e.File, e.Offset, e.Original.File, e.Original.Offset)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		d.Finish(t, what, gone, func() (int64, error) {
			return ix.Delete(ctx, dedupindex.Selector{Files: []string{"a.warc.gz"}})
		})
		ix.Close()
		t.Logf("round %d: killed after batch %d (%d of a.warc.gz deleted)", round, nth, gone)
	}
}
