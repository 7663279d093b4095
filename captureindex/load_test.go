package captureindex

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
)

// TestRemoveExact removes captures named as index lines name them: only
// those go, revisits of a removed original become unresolved, unknown
// ones are ignored, and Check passes (openTest's cleanup).
func TestRemoveExact(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t)
	all := maintCaptures()
	if _, err := ix.Add(ctx, all...); err != nil {
		t.Fatal(err)
	}
	// The original of the first revisit (all[0]) and a capture the index
	// does not hold (another offset).
	ghost := all[1]
	ghost.Offset += 7
	n, err := ix.Remove(ctx, all[0], all[3], ghost)
	if err != nil || n != 2 {
		t.Fatalf("Remove = %d, %v; want 2", n, err)
	}
	got := keysOf(t, ix, dedupindex.Selector{})
	if len(got) != len(all)-2 {
		t.Fatalf("%d captures left, want %d", len(got), len(all)-2)
	}
	for _, k := range got {
		if k == fmt.Sprintf("%s@%d", all[0].File, all[0].Offset) || k == fmt.Sprintf("%s@%d", all[3].File, all[3].Offset) {
			t.Errorf("%s still held", k)
		}
	}
	st, _ := ix.Stats(ctx)
	if st.Scopes[0].Unresolved != 1 {
		t.Errorf("unresolved = %d, want 1 (the revisit of the removed original)", st.Scopes[0].Unresolved)
	}
	if n, err := ix.Remove(ctx, all[0]); err != nil || n != 0 {
		t.Errorf("Remove again = %d, %v; want 0", n, err)
	}
}

// TestRelocate moves files: captures and revisits' originals follow, a
// second run changes nothing, and a location already held is refused.
func TestRelocate(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t)
	if _, err := ix.Add(ctx, maintCaptures()...); err != nil {
		t.Fatal(err)
	}
	moves := map[string]string{"a.warc.gz": "s3://bucket/p/a.warc.gz?endpoint=http://127.0.0.1:1", "c.warc.gz": "file:///x/c.warc.gz"}
	if n, err := ix.Relocate(ctx, moves); err != nil || n != 2 {
		t.Fatalf("Relocate = %d, %v", n, err)
	}
	if n, err := ix.Relocate(ctx, moves); err != nil || n != 0 {
		t.Fatalf("Relocate again = %d, %v", n, err)
	}
	files := map[string]int{}
	origs := map[string]int{}
	err := ix.ScanAll(ctx, dedupindex.Selector{}, func(e *Entry) error {
		files[e.File]++
		if e.IsRevisit() {
			o, err := ix.Resolve(ctx, e)
			if err != nil || o == nil {
				return fmt.Errorf("revisit %s: original %v %v", e.URI, o, err)
			}
			origs[o.File]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files[moves["a.warc.gz"]] != 6 || files["b.warc.gz"] != 6 || files[moves["c.warc.gz"]] != 6 || files["a.warc.gz"] != 0 {
		t.Errorf("files after relocate: %v", files)
	}
	if origs[moves["a.warc.gz"]] != 6 {
		t.Errorf("revisits' originals after relocate: %v", origs)
	}
	if _, err := ix.Relocate(ctx, map[string]string{"b.warc.gz": moves["a.warc.gz"]}); !errors.Is(err, ErrLocationHeld) {
		t.Errorf("relocate onto a held location: %v", err)
	}
}
