package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wayside-archive/wayside/internal/failpoint"
)

// TestCrashLeavesWholeOutputOrNone kills a real child process converting an
// ARC file (kill -9, at failpoint convert.record-written: after a chosen
// record, while its temporary output is being written): the final output
// name then holds nothing, never a partial WARC, the partial temporary
// output is there, and the input is unchanged; a new run converts it and
// the result verifies.
func TestCrashLeavesWholeOutputOrNone(t *testing.T) {
	if os.Getenv("WAYSIDE_ARC2WARC_CHILD") != "" {
		if _, err := failpoint.Arm(os.Getenv("WAYSIDE_ARC2WARC_CHILD")); err != nil {
			os.Exit(4)
		}
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
	for run := range 2 {
		// Killed after record nth of 4*300 (+ warcinfo): past the first
		// 64 KiB of output (the writer's buffer; ~7 KiB a record), well
		// before the end.
		nth := 30 + rand.IntN(270)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLeavesWholeOutputOrNone$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("WAYSIDE_ARC2WARC_CHILD=convert.record-written=%d*kill", nth),
			"WAYSIDE_ARC2WARC_IN="+in, "WAYSIDE_ARC2WARC_OUT="+out)
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: child not killed after record %d: %v", run, nth, err)
		}
		if _, err := os.Stat(final); err == nil {
			t.Fatalf("run %d: killed after record %d, yet %s exists", run, nth, final)
		}
		if tempBytes(out) == 0 {
			t.Fatalf("run %d: killed after record %d with no temporary output written: the case proves nothing", run, nth)
		}
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
