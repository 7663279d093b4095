package postdedup

import (
	"context"
	"strings"
	"testing"
)

// Assess (issue 21): a sampled projection comes with its 95% error bar,
// which holds the exact figure; small inputs are assessed whole even when
// a sample is asked for (exact, no error bar); revisits already in the
// input are counted as kept, never listed as bad input.
func TestAssessSampleErrorBar(t *testing.T) {
	src, gt := warcgen(t, "small.warc.gz", "-size-mb", "12")
	in := copyInputs(t, t.TempDir(), src)
	ctx := context.Background()
	pol := Policy{MinPayloadSize: 1, Statuses: allStatuses}
	exact, err := Assess(ctx, in, AssessOptions{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if exact.Duplicates != gt.DupResponses || exact.SavingError != 0 || exact.ProjectedSaving <= 0 {
		t.Fatalf("exact assessment: %d duplicates (warcgen made %d), saving %d ± %d", exact.Duplicates, gt.DupResponses, exact.ProjectedSaving, exact.SavingError)
	}
	for _, p := range exact.BadInput {
		if strings.HasPrefix(p.Message, codeRevisit+":") {
			t.Errorf("a revisit listed as bad input: %s", p)
		}
	}
	if gt.ByType["revisit"] > 0 && exact.Kept[codeRevisit] != gt.ByType["revisit"] {
		t.Errorf("revisits kept %d, the input holds %d", exact.Kept[codeRevisit], gt.ByType["revisit"])
	}
	small, err := Assess(ctx, in, AssessOptions{Policy: pol, Manifest: ManifestOptions{Sample: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	if !small.Exact || small.ProjectedSaving != exact.ProjectedSaving || small.SavingError != 0 {
		t.Fatalf("a 12 MB input with --sample 10%%: exact %v, saving %d ± %d; want the exact %d", small.Exact, small.ProjectedSaving, small.SavingError, exact.ProjectedSaving)
	}
	for _, s := range []float64{0.1, 0.3, 0.6} {
		a, err := Assess(ctx, in, AssessOptions{Policy: pol, Manifest: ManifestOptions{Sample: s}, ExactBelow: -1})
		if err != nil {
			t.Fatal(err)
		}
		if a.Exact || a.SavingError <= 0 {
			t.Fatalf("sample %.0f%%: exact %v, error bar %d; want an estimate with an error bar", s*100, a.Exact, a.SavingError)
		}
		if d := a.ProjectedSaving - exact.ProjectedSaving; d > a.SavingError || -d > a.SavingError {
			t.Errorf("sample %.0f%%: projected saving %d ± %d does not hold the exact %d", s*100, a.ProjectedSaving, a.SavingError, exact.ProjectedSaving)
		}
		t.Logf("sample %.0f%%: %d ± %d (exact %d)", s*100, a.ProjectedSaving, a.SavingError, exact.ProjectedSaving)
	}
}
