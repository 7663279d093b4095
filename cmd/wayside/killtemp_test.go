//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestKilledRunsLeaveNoTemporaryFiles kills (SIGKILL) a command while its
// temporary files exist, then runs it again: the second run removes what
// the first left (issue 21: temporary files stayed forever), and no
// temporary file was ever made beside the input WARCs. Cases: cdxj -o (the
// output's ".NAME.tmp-*"), characterize --write-metadata beside the WARC
// (its temporary file is beside the input by necessity: it is removed) and
// dedup assess (its directory in TMPDIR).
func TestKilledRunsLeaveNoTemporaryFiles(t *testing.T) {
	bin := waysideBinary(t)
	corpus := filepath.Join(testenv.SharedDir(t), "corpus", "warc")
	var big bytes.Buffer // gzip members concatenate: a WARC of many copies
	for range 12 {
		for _, n := range []string{"pywb-iana.warc.gz", "pywb-example-wget-1-14.warc.gz", "aut-example.pdf.warc.gz"} {
			b, err := os.ReadFile(filepath.Join(corpus, n))
			if err != nil {
				t.Fatal(err)
			}
			big.Write(b)
		}
	}
	for _, tc := range []struct {
		name string
		args func(in, out string) []string
		// temp reports whether the run's temporary files exist yet.
		temp func(in, out, tmp string) bool
	}{
		{"cdxj", func(in, out string) []string { return []string{"cdxj", "-q", "-o", filepath.Join(out, "x.cdxj"), in} },
			func(_, out, _ string) bool { return globAny(filepath.Join(out, ".x.cdxj.tmp-*")) }},
		{"assess", func(in, _ string) []string { return []string{"dedup", "assess", "-q", in} },
			func(_, _, tmp string) bool { return globAny(filepath.Join(tmp, "wayside-dedup-assess-*", ".lock")) }},
		{"characterize-metadata", func(in, _ string) []string { return []string{"characterize", "-q", "-j", "1", "--write-metadata", in} },
			func(in, _, _ string) bool {
				return globAny(filepath.Join(filepath.Dir(in), ".big.characterization.warc.gz.tmp-*"))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			inDir, out, tmp := filepath.Join(dir, "in"), filepath.Join(dir, "out"), filepath.Join(dir, "tmp")
			for _, d := range []string{inDir, out, tmp} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			in := filepath.Join(inDir, "big.warc.gz")
			if err := os.WriteFile(in, big.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, tc.args(in, out)...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			seen := false
			for i := 0; i < 20000 && !seen; i++ { // bounded: at most the run itself
				select {
				case err := <-done:
					t.Fatalf("the run ended (%v) before its temporary files were seen: nothing to kill", err)
				default:
				}
				seen = tc.temp(in, out, tmp)
				if !seen {
					time.Sleep(time.Millisecond)
				}
			}
			if !seen {
				cmd.Process.Kill()
				<-done
				t.Fatal("no temporary file appeared")
			}
			// Stopped first (SIGSTOP), so it cannot finish and rename its
			// output between the check and the kill however loaded the
			// machine: the kill lands while the temporary files exist.
			if _, err := testenv.StopProcess(cmd.Process.Pid); err != nil {
				cmd.Process.Kill()
				<-done
				t.Fatalf("the run ended before it was stopped: nothing to kill (%v)", err)
			}
			if !tc.temp(in, out, tmp) {
				cmd.Process.Kill()
				<-done
				t.Fatal("the run's temporary files went away before it was stopped (it ended): nothing to kill")
			}
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			if !tc.temp(in, out, tmp) {
				t.Fatal("the killed run left nothing: the case proves nothing")
			}
			again := exec.Command(bin, tc.args(in, out)...)
			again.Env = append(os.Environ(), "TMPDIR="+tmp)
			if b, err := again.CombinedOutput(); err != nil && tc.name != "assess" && tc.name != "characterize-metadata" {
				t.Fatalf("the run again: %v\n%s", err, b)
			}
			if tc.temp(in, out, tmp) {
				t.Errorf("the temporary files of the killed run are still there after a run again")
			}
			ents, _ := os.ReadDir(inDir)
			for _, e := range ents {
				if e.Name() != "big.warc.gz" && e.Name() != "big.characterization.warc.gz" {
					t.Errorf("left beside the input WARC: %s", e.Name())
				}
			}
			if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
				t.Errorf("left in TMPDIR: %v", ents)
			}
		})
	}
}

func globAny(pattern string) bool {
	m, _ := filepath.Glob(pattern)
	return len(m) > 0
}
