package postdedup

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestValidateCatchesDamage: an output that is not what its input and the
// plan make — a flipped byte in a copied range or in a revisit, a cut or
// missing output — fails validation with ErrInvalid naming the file and
// offset, and writes no stamp; an output changed after validation, or a
// stamp of an earlier format, is refused by Replace, which then leaves
// every input as it was.
func TestValidateCatchesDamage(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "a.warc.gz")
	os.MkdirAll(filepath.Dir(in), 0o755)
	payload := bytes.Repeat([]byte("duplicate payload "), 200)
	var recs []testRecord
	for i := 0; i < 6; i++ {
		recs = append(recs, testRecord{id: id(i + 1), uri: "http://example.org/" + string(rune('a'+i)), date: t0.Add(time.Duration(i) * time.Hour), payload: payload})
	}
	recs = append(recs, testRecord{id: id(9), uri: "http://example.org/other", date: t0, payload: bytes.Repeat([]byte("x"), 5000)})
	writeWARC(t, in, recs, nil)
	inBytes, _ := os.ReadFile(in)
	out := filepath.Join(dir, "out")
	rep, err := Run(context.Background(), []string{in}, out, RunOptions{})
	if err != nil || rep.Rewrite.Revisits != 5 {
		t.Fatalf("run: %v, %d revisits (want 5)", err, rep.Rewrite.Revisits)
	}
	outFile := filepath.Join(out, "a.warc.gz")
	good, _ := os.ReadFile(outFile)
	l, err := readLayout(out, "a.warc.gz")
	if err != nil {
		t.Fatal(err)
	}
	var copied, revisit Segment
	for _, s := range l.Segments {
		if s.Revisit && revisit.OutLen == 0 {
			revisit = s
		}
		if !s.Revisit && s.OutLen > copied.OutLen {
			copied = s
		}
	}
	validate := func() (ValidateStats, error) {
		return Validate(context.Background(), []string{manifestPath(out)}, []string{planPath(out)}, out, ValidateOptions{})
	}
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   string
	}{
		{"copied byte", func(b []byte) []byte { b[copied.Out+copied.OutLen/2] ^= 1; return b }, "differs from"},
		{"revisit byte", func(b []byte) []byte { b[revisit.Out+revisit.OutLen/2] ^= 1; return b }, "revisit of"},
		{"cut short", func(b []byte) []byte { return b[:len(b)-10] }, "its layout says"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(stampPath(out))
			if err := os.WriteFile(outFile, tc.damage(bytes.Clone(good)), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := validate()
			if !IsInvalid(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), outFile) {
				t.Fatalf("validate: %v (problems %v); want ErrInvalid saying %q about %s", err, st.Problems, tc.want, outFile)
			}
			if _, err := os.Stat(stampPath(out)); err == nil {
				t.Error("a stamp was written for an invalid output")
			}
		})
	}
	// Restored, it validates; changed afterwards, Replace refuses it.
	os.WriteFile(outFile, good, 0o644)
	if _, err := validate(); err != nil {
		t.Fatalf("the restored output: %v", err)
	}
	stamp, _ := os.ReadFile(stampPath(out))
	bad := bytes.Clone(good)
	bad[copied.Out] ^= 1
	os.WriteFile(outFile, bad, 0o644)
	if _, err := Replace(context.Background(), out, ReplaceOptions{}); err == nil || !strings.Contains(err.Error(), "changed since it was validated") {
		t.Errorf("replace after the output changed: %v", err)
	}
	// A stamp of format 1 (SHA-256 checksums) is refused.
	os.WriteFile(outFile, good, 0o644)
	var s map[string]any
	json.Unmarshal(stamp, &s)
	delete(s, "format")
	old, _ := json.Marshal(s)
	os.WriteFile(stampPath(out), old, 0o644)
	if _, err := Replace(context.Background(), out, ReplaceOptions{}); err == nil || !strings.Contains(err.Error(), "validate again") {
		t.Errorf("replace with a format 1 stamp: %v", err)
	}
	if now, _ := os.ReadFile(in); !bytes.Equal(now, inBytes) {
		t.Fatal("the input changed")
	}
}
