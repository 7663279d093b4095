package convert

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrashLeavesWholeOutputOrNone kills a real child process converting an
// ARC file (kill -9) once its temporary output is being written: the final
// output name then holds nothing, never a partial WARC, and the input is
// unchanged; a new run converts it and the result verifies.
func TestCrashLeavesWholeOutputOrNone(t *testing.T) {
	if os.Getenv("WAYSIDE_ARC2WARC_CHILD") != "" {
		_, err := ARCToWARC(context.Background(), os.Getenv("WAYSIDE_ARC2WARC_IN"), os.Getenv("WAYSIDE_ARC2WARC_OUT"), Options{CompressionLevel: 9})
		if err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	// A larger ARC: the Heritrix ARC's members repeated (each record keeps
	// its bytes; only the file grows), so the child is caught mid-write.
	src := corpusARC(t, "aut-example.arc.gz")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "big.arc.gz")
	if err := os.WriteFile(in, bytes.Repeat(data, 4), 0o444); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(in)
	out := t.TempDir()
	final := filepath.Join(out, OutputName(in))
	killed := 0
	for run := 0; run < 2; run++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLeavesWholeOutputOrNone$")
		cmd.Env = append(os.Environ(), "WAYSIDE_ARC2WARC_CHILD=1", "WAYSIDE_ARC2WARC_IN="+in, "WAYSIDE_ARC2WARC_OUT="+out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait (bounded) until the temporary output holds data, then kill.
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) && tempBytes(out) < 64<<10 {
			time.Sleep(2 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if _, statErr := os.Stat(final); statErr == nil {
			// The child finished before the kill: the output must be whole.
			if rep, verr := Verify(context.Background(), in, final); verr != nil || !rep.OK() {
				t.Fatalf("run %d: output present but does not verify: %v %+v", run, verr, rep)
			}
			os.Remove(final)
			continue
		}
		if err == nil {
			t.Fatalf("run %d: child succeeded but left no output", run)
		}
		killed++
	}
	if killed == 0 {
		t.Fatal("every child finished before the kill: the test proved nothing (make the input larger)")
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(before, after) {
		t.Fatal("input changed")
	}
	res, err := ARCToWARC(context.Background(), in, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(context.Background(), in, res.WARC); err != nil || !rep.OK() || rep.Matched != 4*300 {
		t.Fatalf("re-run does not verify: %v %+v", err, rep)
	}
}

// tempBytes is the size of the largest temporary output file in dir.
func tempBytes(dir string) int64 {
	ents, _ := os.ReadDir(dir)
	var n int64
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			if fi, err := e.Info(); err == nil && fi.Size() > n {
				n = fi.Size()
			}
		}
	}
	return n
}
