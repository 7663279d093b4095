package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// WAYSIDE_CPUPROFILE makes a subcommand write a CPU profile of its run (a
// gzipped pprof protobuf); a profile that cannot be written is an error
// naming the variable, and the subcommand does not run.
func TestCPUProfileEnv(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cdxj.prof")
	out := filepath.Join(dir, "x.cdxj")
	runWith := func(path string) error {
		var so, se bytes.Buffer
		getenv := func(k string) string {
			if k == cpuProfileEnv {
				return path
			}
			return ""
		}
		return run(context.Background(), append([]string{"cdxj", "-q", "-o", out}, testenv.CorpusWARCs(t)...),
			&env{stdout: &so, stderr: &se, getenv: getenv})
	}
	if err := runWith(prof); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("profile is not gzipped: %v", err)
	}
	if n, err := io.Copy(io.Discard, zr); err != nil || n == 0 {
		t.Fatalf("profile: %d bytes, %v", n, err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		t.Fatalf("the profiled command did not write its output: %v", err)
	}

	os.Remove(out)
	err = runWith(filepath.Join(dir, "missing", "x.prof"))
	if err == nil || !strings.Contains(err.Error(), cpuProfileEnv) {
		t.Fatalf("unwritable profile: err %v, want one naming %s", err, cpuProfileEnv)
	}
	if report(io.Discard, err, false) != exitFailure {
		t.Errorf("unwritable profile: exit %d, want %d", report(io.Discard, err, false), exitFailure)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the command ran although its profile could not be written")
	}
}
