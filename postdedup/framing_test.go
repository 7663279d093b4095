package postdedup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestValidateSecondFraming: dedup of an input with damaged bytes between
// records (junk, a gzip member holding no record) validates, the second
// framing agreeing with the reader on every record; and the checks that
// rely on the second framing alone fail when a revisit would replace more
// than one record, or bytes where no record starts, or when the input no
// longer reads as the manifest counted (faults a correct run cannot
// produce, injected into the copies and counts given to checkFraming).
func TestValidateSecondFraming(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "a.warc.gz")
	os.MkdirAll(filepath.Dir(in), 0o755)
	payload := bytes.Repeat([]byte("duplicate payload "), 200)
	var recs []testRecord
	for i := 0; i < 5; i++ {
		recs = append(recs, testRecord{id: id(i + 1), uri: "http://example.org/" + string(rune('a'+i)), date: t0.Add(time.Duration(i) * time.Hour), payload: payload})
	}
	offs := writeWARC(t, in, recs, []byte("junk after the last record that is no gzip member\n"))
	out := filepath.Join(dir, "out")
	rep, err := Run(context.Background(), []string{in}, out, RunOptions{})
	if rep.Rewrite.Revisits != 4 {
		t.Fatalf("run: %v, %d revisits (want 4)", err, rep.Rewrite.Revisits)
	}
	st, err := Validate(context.Background(), []string{manifestPath(out)}, []string{planPath(out)}, out, ValidateOptions{})
	if err != nil {
		t.Fatalf("validate: %v %v", err, st.Problems)
	}
	fi, _ := os.Stat(in)
	f := FileInfo{Path: in, Size: fi.Size(), Records: 5, Problems: 1, Compressed: true}
	for _, tc := range []struct {
		name   string
		f      FileInfo
		copies []*Copy
		want   string
	}{
		{"agrees", f, []*Copy{{Offset: offs[1], Length: offs[2] - offs[1]}}, ""},
		{"two records in one copy", f, []*Copy{{Offset: offs[1], Length: offs[3] - offs[1]}}, "would drop the record " + "id " + id(3)},
		{"no record at the copy", f, []*Copy{{Offset: offs[1] + 7, Length: 10}}, "finds 0 records starting where"},
		{"counts changed", FileInfo{Path: in, Size: fi.Size(), Records: 6, Problems: 1, Compressed: true}, nil, "reads as 5 records and 1 unreadable ones, the manifest counted 6 and 1"},
	} {
		var st ValidateStats
		checkFraming(context.Background(), tc.f, tc.copies, &st)
		got := strings.Join(st.Problems, "\n")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
}
