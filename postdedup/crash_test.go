package postdedup

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/testenv"
)

const crashEnv = "WAYSIDE_POSTDEDUP_CRASH_CHILD"

// crashChild is the process TestCrashKill kills (the test binary
// re-executed with crashEnv set: TestMain runs it instead of the tests).
// It arms the failpoint spec its parent passed ("postdedup.POINT=N*kill":
// SIGKILL at the n-th hit of the point) and runs the pipeline.
func crashChild(spec string) error {
	f := strings.Split(spec, "|")
	point, out, inputs := f[0], f[1], f[2:]
	off, err := failpoint.Arm(point)
	if err != nil {
		return err
	}
	defer off()
	opts := RunOptions{Replace: strings.Contains(point, ".replace-")}
	_, err = Run(context.Background(), inputs, out, opts)
	return err
}

// TestCrashKill kills a real child process running `dedup run` (and
// `dedup run --replace`) with SIGKILL at random failpoints, at least 20
// times, and checks after each kill: every input path holds its original
// bytes (or, while replacing, the validated output); every output file is
// absent or complete (it reads to the end with every record of its input);
// a re-run finishes the job and validates.
func TestCrashKill(t *testing.T) {
	a, _ := warcgen(t, "crash-a.warc.gz", "-size-mb", "1", "-seed", "1")
	b, _ := warcgen(t, "crash-b.warc.gz", "-size-mb", "1", "-seed", "2")
	rng := rand.New(rand.NewPCG(20261124, 7))
	points := []struct {
		name string
		max  int
	}{
		{"rewrite-copy", 20}, {"rewrite-revisit", 20}, {"rewrite-before-sync", 2}, {"rewrite-before-rename", 2},
		{"rewrite-before-cdxj", 2}, {"replace-before-swap", 2}, {"replace-after-swap", 2},
	}
	kills, runs := 0, 0
	for kills < 24 && runs < 60 {
		runs++
		p := points[rng.IntN(len(points))]
		n := 1 + rng.IntN(p.max)
		dir := t.TempDir()
		in := copyInputs(t, filepath.Join(dir, "in"), a, b)
		orig := map[string]string{}
		for _, f := range in {
			orig[f] = sha256File(t, f)
		}
		out := filepath.Join(dir, "out")
		arm := fmt.Sprintf("postdedup.%s=%d*kill", p.name, n)
		if !testenv.CrashChild(t, crashEnv+"="+strings.Join(append([]string{arm, out}, in...), "|"), func(string) bool { return false }) {
			continue // the failpoint was hit fewer than n times
		}
		kills++
		replacing := strings.HasPrefix(p.name, "replace")
		var stamp Stamp
		if replacing {
			var err error
			if stamp, err = ReadStamp(out); err != nil {
				t.Fatalf("killed at %s #%d before replacing, yet no validation stamp: %v", p.name, n, err)
			}
		}
		for _, f := range in {
			got := sha256File(t, f)
			if got == orig[f] {
				continue
			}
			ok := false
			for _, s := range stamp.Files {
				ok = ok || s.Input == f && checkSum(t, f) == s.OutputXXH64
			}
			if !ok {
				t.Fatalf("killed at %s #%d: input %s damaged", p.name, n, f)
			}
		}
		for i, f := range in {
			o := filepath.Join(out, filepath.Base(f))
			if _, err := os.Stat(o); err != nil {
				continue // absent: fine (temporary files are marked .NAME.tmp-*)
			}
			if got, want := len(readAllRecords(t, o, warcioOpts())), len(readAllRecords(t, []string{a, b}[i], warcioOpts())); got != want {
				t.Fatalf("killed at %s #%d: %s holds %d records, its input %d", p.name, n, o, got, want)
			}
		}
		// A re-run finishes the job.
		opts := RunOptions{Replace: replacing}
		opts.Validate.Deep = true
		rep, err := Run(context.Background(), in, out, opts)
		if err != nil {
			t.Fatalf("killed at %s #%d: re-run: %v %v", p.name, n, err, rep.Validate.Problems)
		}
		if replacing {
			final, _ := ReadStamp(out)
			for _, s := range final.Files {
				if checkSum(t, s.Input) != s.OutputXXH64 {
					t.Fatalf("killed at %s #%d: after the re-run %s is not its validated output", p.name, n, s.Input)
				}
			}
			for i, f := range in {
				retired := filepath.Join(out, StateDir, "retired", fmt.Sprintf("%04d-%s", i, filepath.Base(f)))
				if sha256File(t, retired) != orig[f] {
					t.Fatalf("killed at %s #%d: the retired copy of %s is not the original input", p.name, n, f)
				}
			}
		} else {
			for _, f := range in {
				if sha256File(t, f) != orig[f] {
					t.Fatalf("%s changed", f)
				}
				testenv.StrictWARC(t, filepath.Join(out, filepath.Base(f)))
			}
		}
	}
	if kills < 20 {
		t.Fatalf("only %d kills in %d runs", kills, runs)
	}
	t.Logf("%d kills in %d runs", kills, runs)
}

// checkSum is the checksum validation stamps carry.
func checkSum(t testing.TB, path string) string {
	t.Helper()
	s, err := fileXXH64(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
