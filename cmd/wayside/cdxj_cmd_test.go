package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

func runCDXJCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	err = run(context.Background(), args, e)
	return out.String(), errb.String(), err
}

// TestCDXJCommandCorpus indexes the whole corpus with the command and
// compares with the library's golden index (cdxj/testdata/corpus.cdxj),
// sequentially and in parallel.
func TestCDXJCommandCorpus(t *testing.T) {
	files := testenv.CorpusWARCs(t)
	want, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "cdxj", "testdata", "corpus.cdxj"))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"1", "4"} {
		out, stderr, err := runCDXJCmd(t, append([]string{"cdxj", "-q", "-j", j}, files...)...)
		if err != nil {
			t.Fatalf("-j %s: %v\n%s", j, err, stderr)
		}
		if out != string(want) {
			t.Errorf("-j %s: output differs from cdxj/testdata/corpus.cdxj", j)
		}
	}
}

// TestCDXJCommandShardsAndMerge: indexing two halves into files with -o and
// merging them with --merge gives the index of the whole.
func TestCDXJCommandShardsAndMerge(t *testing.T) {
	files := testenv.CorpusWARCs(t)
	dir := t.TempDir()
	a, b, merged := filepath.Join(dir, "a.cdxj"), filepath.Join(dir, "b.cdxj"), filepath.Join(dir, "all.cdxj")
	half := len(files) / 2
	if _, stderr, err := runCDXJCmd(t, append([]string{"cdxj", "-q", "-o", a}, files[:half]...)...); err != nil {
		t.Fatal(err, stderr)
	}
	if _, stderr, err := runCDXJCmd(t, append([]string{"cdxj", "-q", "-o", b}, files[half:]...)...); err != nil {
		t.Fatal(err, stderr)
	}
	// One shard gzip-compressed, as shards often are kept.
	raw, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(raw)
	zw.Close()
	if err := os.WriteFile(b, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runCDXJCmd(t, "cdxj", "--merge", "-o", merged, b, a); err != nil {
		t.Fatal(err, stderr)
	}
	whole, _, err := runCDXJCmd(t, append([]string{"cdxj", "-q"}, files...)...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != whole {
		t.Fatal("merged shards differ from the index of all files")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Errorf("%d files in the output directory, want 3 (no temporary files left)", len(ents))
	}
}

// TestCDXJCommandBadRecords: a crashed crawler's cut ".open" file is
// indexed up to its last complete record, the problem is reported with file
// and offset, the other files are indexed, and the exit status is non-zero.
// (A missing input fails the command before anything is indexed: see the
// bad-input catalogue, testdata/badinput.)
func TestCDXJCommandBadRecords(t *testing.T) {
	dir := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	data, err := os.ReadFile(filepath.Join(dir, "pywb-iana.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "iana.warc.gz.open")
	if err := os.WriteFile(cut, data[:700000], 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCDXJCmd(t, "cdxj", "-q", cut, filepath.Join(dir, "pywb-dupes.warc.gz"))
	var pe problemsError
	if !errors.As(err, &pe) || pe.n != 1 {
		t.Fatalf("err = %v, want 1 problem", err)
	}
	if !strings.Contains(stderr, "iana.warc.gz.open offset ") || !strings.Contains(stderr, "truncated") {
		t.Errorf("stderr does not name the problems:\n%s", stderr)
	}
	if !strings.Contains(out, `"filename": "pywb-dupes.warc.gz"`) || !strings.Contains(out, `"filename": "iana.warc.gz"`) {
		t.Errorf("output lacks the good records")
	}
	if n := strings.Count(out, "\n"); n < 100 {
		t.Errorf("only %d lines", n)
	}
}

func TestCDXJCommandUsage(t *testing.T) {
	_, _, err := runCDXJCmd(t, "cdxj")
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("no files: err = %v, want a usage error", err)
	}
	if _, _, err := runCDXJCmd(t, "cdxj", "-j", "0", "x"); !errors.As(err, &ue) {
		t.Fatalf("-j 0: err = %v", err)
	}
}

func TestCDXJCommandVerify(t *testing.T) {
	out, stderr, err := runCDXJCmd(t, append([]string{"cdxj", "-q", "--verify"}, testenv.CorpusWARCs(t)...)...)
	if err != nil {
		t.Fatal(err, stderr)
	}
	if !strings.Contains(stderr, "231 block digests checked; 17 payload digest headers disagree") || strings.Count(out, "\n") != 306 {
		t.Errorf("stderr %q, %d lines", stderr, strings.Count(out, "\n"))
	}
}

func TestCDXJCommandCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "out.cdxj")
	var so, se bytes.Buffer
	err := run(ctx, append([]string{"cdxj", "-q", "-o", out}, testenv.CorpusWARCs(t)...), &env{stdout: &so, stderr: &se, getenv: func(string) string { return "" }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output file exists after cancel: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
		t.Errorf("%d files left behind", len(ents))
	}
}
