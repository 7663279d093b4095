// Package testenv locates test material shared by Wayside's tests: the
// repository root and the ../shared directory beside it (real WARC corpus,
// notes, benchmark generator); it checks WARC files strictly (StrictWARC)
// and runs the crash children of kill tests (CrashChild: the test binary
// again, its failpoint armed, until it dies by SIGKILL).
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding go.mod, walking up from the current
// directory (tests run in their package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}

// SharedDir returns ../shared beside the repository, or skips the test with a
// clear message when it is absent (e.g. on a user's clone).
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(RepoRoot(t)), "shared")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("testenv: %s is absent: this test needs the shared corpus checked out beside the repository", dir)
	}
	return dir
}

// CorpusWARCs returns the paths of the real-world WARC files in
// ../shared/corpus/warc, skipping the test when the corpus is absent.
func CorpusWARCs(t testing.TB) []string {
	t.Helper()
	return corpusFiles(t, "warc", "WARC")
}

// CorpusARCs returns the paths of the real-world ARC files in
// ../shared/corpus/arc, skipping the test when the corpus is absent.
func CorpusARCs(t testing.TB) []string {
	t.Helper()
	return corpusFiles(t, "arc", "ARC")
}

func corpusFiles(t testing.TB, sub, kind string) []string {
	t.Helper()
	dir := filepath.Join(SharedDir(t), "corpus", sub)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("testenv: cannot read %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if len(out) == 0 {
		t.Skipf("testenv: %s holds no %s files", dir, kind)
	}
	return out
}

// MissingTool reports that a test cannot run because an external program
// (Chromium, redis-server) is absent. It skips the test with the message, but
// fails it when WAYSIDE_REQUIRE_TOOLS is set: scripts/test.sh installs every
// tool and sets it, so the README's test command never skips these tests.
func MissingTool(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("WAYSIDE_REQUIRE_TOOLS") != "" {
		t.Fatalf(format+" (WAYSIDE_REQUIRE_TOOLS is set: scripts/test.sh should have installed it)", args...)
	}
	t.Skipf(format, args...)
}

// CopyFiles copies files into dir (created if missing) and returns the
// copies' paths: tests never touch the shared or generated originals.
func CopyFiles(t testing.TB, dir string, files ...string) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}
