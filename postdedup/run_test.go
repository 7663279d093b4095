package postdedup

import (
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/testenv"
)

var allStatuses = []dedupindex.StatusRange{{Min: 100, Max: 599}}

// TestRunMatchesWarcgenGroundTruth: on a warcgen WARC, with every status
// and no size floor, the pipeline rewrites exactly the duplicates warcgen
// made and saves exactly their payload bytes; with a 2 KiB floor, exactly
// those of 2 KiB and more. Every output passes gowarc strict validation.
func TestRunMatchesWarcgenGroundTruth(t *testing.T) {
	src, gt := warcgen(t, "small.warc.gz", "-size-mb", "12")
	for _, tc := range []struct {
		name    string
		min     int64
		want    int
		payload int64
	}{
		{"all", 1, gt.DupResponses, gt.DupPayloadBytes},
		{"ge2k", 2048, gt.DupResponsesGE2K, gt.DupPayloadBytesGE2K},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := copyInputs(t, filepath.Join(dir, "in"), src)
			before := sha256File(t, in[0])
			rep := runAll(t, in, filepath.Join(dir, "out"), RunOptions{Resolve: ResolveOptions{Policy: Policy{MinPayloadSize: tc.min, Statuses: allStatuses}}})
			if rep.Resolve.Duplicates != tc.want || rep.Rewrite.Revisits != tc.want || rep.Validate.Revisits != tc.want {
				t.Errorf("revisits: planned %d, written %d, validated %d; warcgen made %d duplicates", rep.Resolve.Duplicates, rep.Rewrite.Revisits, rep.Validate.Revisits, tc.want)
			}
			if rep.Resolve.SavedPayload != tc.payload {
				t.Errorf("saved payload %d bytes, warcgen's duplicates hold %d", rep.Resolve.SavedPayload, tc.payload)
			}
			if rep.Resolve.Collisions != 0 {
				t.Errorf("%d collisions", rep.Resolve.Collisions)
			}
			if sha256File(t, in[0]) != before {
				t.Fatal("the input changed")
			}
			out := filepath.Join(dir, "out", filepath.Base(src))
			if n := testenv.StrictWARC(t, out); n != gt.Records {
				t.Errorf("gowarc reads %d records, warcgen wrote %d", n, gt.Records)
			}
			t.Logf("%d revisits, saving %.1f%% (%d → %d bytes)", rep.Rewrite.Revisits, rep.Saving*100, rep.InputBytes, rep.OutputBytes)
		})
	}
}
