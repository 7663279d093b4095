package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/postdedup"
)

// The stages one by one in the README's form (issue 21: `dedup rewrite
// --manifest A …` failed): the manifest parts after one --manifest, then
// the plans; validate the same with OUTDIR before the plans. And dedup
// assess takes -q like every command.
func TestDedupStagesREADMEForm(t *testing.T) {
	corpus := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	dir := t.TempDir()
	in := testenv.CopyFiles(t, filepath.Join(dir, "old"), filepath.Join(corpus, "pywb-dupes.warc.gz"), filepath.Join(corpus, "pywb-iana.warc.gz"), filepath.Join(corpus, "warcio-example.warc.gz"))
	ctx := context.Background()
	m := filepath.Join(dir, "m.tsv")
	if _, stderr, err := runCLI(ctx, append([]string{"dedup", "manifest", "-q", "-o", m, "--parts", "2"}, in...)...); err != nil {
		t.Fatalf("manifest: %v\n%s", err, stderr)
	}
	p1, p2 := postdedup.PartName(m, 0, 2), postdedup.PartName(m, 1, 2)
	plan1, plan2 := filepath.Join(dir, "plan1.tsv"), filepath.Join(dir, "plan2.tsv")
	for i, p := range []string{p1, p2} {
		if _, stderr, err := runCLI(ctx, "dedup", "resolve", "--min-size", "1", "-o", []string{plan1, plan2}[i], p); err != nil {
			t.Fatalf("resolve %s: %v\n%s", p, err, stderr)
		}
	}
	out := filepath.Join(dir, "deduped")
	if stdout, stderr, err := runCLI(ctx, "dedup", "rewrite", "-q", "-o", out, "--manifest", p1, p2, plan1, plan2); err != nil || !strings.Contains(stdout, "rewrite: 3 files") {
		t.Fatalf("rewrite --manifest A B PLAN1 PLAN2: %v\n%s\n%s", err, stdout, stderr)
	}
	if stdout, stderr, err := runCLI(ctx, "dedup", "validate", "--manifest", p1, p2, out, plan1, plan2); err != nil || !strings.Contains(stdout, "validate (fast): 3 files") {
		t.Fatalf("validate --manifest A B OUTDIR PLAN1 PLAN2: %v\n%s\n%s", err, stdout, stderr)
	}
	// The second framing the manifest scan made (framed records) is what
	// validate compares: one that lost a record fails validation, unless
	// --independent-inflate frames the inputs on their own again.
	framed, _ := filepath.Glob(filepath.Join(dir, "*.framing", "*.framed"))
	if len(framed) != len(in) {
		t.Fatalf("framed records %v, want one per input", framed)
	}
	for _, f := range framed {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "f\t") {
				lines[i] = strings.Replace(l, "<urn:uuid:", "<urn:uuid:not-", 1)
				break
			}
		}
		if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if stdout, stderr, err := runCLI(ctx, "dedup", "validate", "--manifest", p1, p2, out, plan1, plan2); err == nil || !strings.Contains(stderr+stdout, "not found by the second framing") {
		t.Fatalf("validate with changed framed records: %v\n%s\n%s", err, stdout, stderr)
	}
	if stdout, stderr, err := runCLI(ctx, "dedup", "validate", "--independent-inflate", "--manifest", p1, p2, out, plan1, plan2); err != nil || !strings.Contains(stdout, "validate (fast): 3 files") {
		t.Fatalf("validate --independent-inflate: %v\n%s\n%s", err, stdout, stderr)
	}
	for _, f := range in {
		if _, err := os.Stat(filepath.Join(out, filepath.Base(f))); err != nil {
			t.Errorf("no output for %s: %v", f, err)
		}
	}
	if stdout, stderr, err := runCLI(ctx, append([]string{"dedup", "assess", "-q"}, in...)...); err != nil && !strings.Contains(stdout, "assess: 3 files") {
		t.Fatalf("assess -q: %v\n%s\n%s", err, stdout, stderr)
	}
}
