package postdedup

import (
	"os"
	"path/filepath"
	"testing"
)

// Two dedup runs with --replace into the same output directory, of
// inputs with the same base name (issue 21): each original is kept in
// retired/ byte for byte, the second beside the first, never over it.
func TestReplaceTwiceKeepsEveryOriginal(t *testing.T) {
	a, _ := warcgen(t, "crash-a.warc.gz", "-size-mb", "1", "-seed", "1")
	b, _ := warcgen(t, "crash-b.warc.gz", "-size-mb", "1", "-seed", "2")
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inA := copyInputs(t, filepath.Join(dir, "a"), a)[0]
	inB := copyInputs(t, filepath.Join(dir, "b"), b)[0]
	renamed := func(p string) string {
		q := filepath.Join(filepath.Dir(p), "x.warc.gz")
		if err := os.Rename(p, q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	inA, inB = renamed(inA), renamed(inB)
	sumA, sumB := sha256File(t, inA), sha256File(t, inB)
	out := filepath.Join(dir, "out")
	var retired string
	for _, in := range []string{inA, inB} {
		rep := runAll(t, []string{in}, out, RunOptions{Replace: true})
		if rep.Replace == nil || rep.Replace.Replaced != 1 {
			t.Fatalf("%s: replace report %+v", in, rep.Replace)
		}
		retired = rep.Replace.Retired
	}
	ents, err := os.ReadDir(retired)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range ents {
		got[sha256File(t, filepath.Join(retired, e.Name()))] = true
	}
	if len(ents) != 2 || !got[sumA] || !got[sumB] {
		t.Fatalf("retired/ holds %d files %v; want the two originals %s and %s", len(ents), got, sumA, sumB)
	}
	if sha256File(t, inA) == sumA || sha256File(t, inB) == sumB {
		t.Fatal("an input was not replaced by its deduplicated output")
	}
}
