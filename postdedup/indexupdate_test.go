package postdedup

import (
	"context"
	"fmt"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/dedupindex"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/warcio"
)

// errStop is what the failpoint panics with: Replace stops right after a
// swap, before the indexes hear of it, as a crash there would.
type errStop struct{}

// TestReplaceIndexesResume stops `dedup run --replace` right after the
// first file is swapped in — before its indexes are updated, the moment a
// crash leaves them pointing at the old offsets — and runs it again: the
// re-run finishes the replacement and brings both indexes to the new
// offsets. Every capture row and every dedup original then points at the
// start of a record of its file (originals at the record with their id),
// every revisit in the capture index resolves, and both Checks pass.
func TestReplaceIndexesResume(t *testing.T) {
	ctx := context.Background()
	a, _ := warcgen(t, "idx-a.warc.gz", "-size-mb", "1", "-seed", "3")
	b, _ := warcgen(t, "idx-b.warc.gz", "-size-mb", "1", "-seed", "4")
	dir := t.TempDir()
	in := copyInputs(t, filepath.Join(dir, "in"), a, b)
	dix, err := dipebble.Open(filepath.Join(dir, "dedup-index"))
	if err != nil {
		t.Fatal(err)
	}
	defer dix.Close()
	if _, err := dedupindex.Import(ctx, dix, in, dedupindex.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	cix, err := captureindex.Open(filepath.Join(dir, "capture-index"))
	if err != nil {
		t.Fatal(err)
	}
	defer cix.Close()
	for _, f := range in {
		var cs []wayside.Capture
		for _, r := range readAllRecords(t, f, warcio.Options{}) {
			cs = append(cs, r.Capture(filepath.Base(f)))
		}
		if _, err := cix.Add(ctx, cs...); err != nil {
			t.Fatal(err)
		}
	}
	ups := []IndexUpdater{&DedupIndexUpdater{Label: "test", Index: dix}, CaptureIndexUpdater{Label: "test", Index: cix}}
	out := filepath.Join(dir, "out")
	stopped := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(errStop); !ok {
					panic(r)
				}
				stopped = true
			}
		}()
		defer failpoint.Enable("postdedup.replace-after-swap", func(int) (int, error) { panic(errStop{}) })()
		opts := RunOptions{Replace: true, ReplaceOptions: ReplaceOptions{Indexes: ups}}
		Run(ctx, in, out, opts)
	}()
	if !stopped {
		t.Fatal("the replacement never reached its first swap")
	}
	rep, err := Run(ctx, in, out, RunOptions{Replace: true, ReplaceOptions: ReplaceOptions{Indexes: ups}})
	if err != nil || !rep.Resumed {
		t.Fatalf("re-run: resumed %v, %v", rep.Resumed, err)
	}
	// Record starts and ids of the files as they are now.
	starts := map[string]map[int64]*warcio.Record{}
	for _, f := range in {
		m := map[int64]*warcio.Record{}
		for _, r := range readAllRecords(t, f, warcio.Options{}) {
			m[r.Offset] = r
		}
		starts[filepath.Base(f)] = m
	}
	revisits := 0
	err = cix.ScanAll(ctx, dedupindex.Selector{}, func(e *captureindex.Entry) error {
		if starts[e.File][e.Offset] == nil {
			return fmt.Errorf("capture row %s@%d is at no record start", e.File, e.Offset)
		}
		if e.IsRevisit() {
			revisits++
			if e.Original == nil || starts[e.Original.File][e.Original.Offset] == nil {
				return fmt.Errorf("revisit %s@%d resolves to %+v", e.File, e.Offset, e.Original)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if revisits == 0 {
		t.Fatal("no revisit after dedup: the test shows nothing")
	}
	n := 0
	err = dix.Scan(ctx, dedupindex.Selector{}, func(e dedupindex.Entry) error {
		n++
		r := starts[e.Original.File][e.Original.Offset]
		if r == nil || r.RecordID != e.Original.RecordID || r.Type != "response" {
			return fmt.Errorf("original %s %s@%d points at %v", e.Original.RecordID, e.Original.File, e.Original.Offset, r)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("%d originals: %v", n, err)
	}
	if err := dix.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cix.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
