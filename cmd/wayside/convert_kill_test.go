//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/internal/warcgen"
)

// TestConvertKilledLeavesNoBlockBuffer: `convert arc2warc` holds a record
// block larger than its memory limit (32 MiB) in a temporary file in the
// output directory; issue 21 found such files left behind by a SIGKILL.
// The run is killed (internal/failpoint, in a crash child) right after
// the block went to that file: nothing of it is left on disk (its name is
// removed as soon as it is made), the output directory holds no partial
// WARC under its final name, and a run again removes the partial output
// the kill left and converts the whole file (every record of the ARC, as
// the second framing reads it, in the WARC).
func TestConvertKilledLeavesNoBlockBuffer(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	for _, d := range []string{in, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var arc []byte
	arc = append(arc, warcgen.Filedesc().B...)
	arc = append(arc, warcgen.ARCRecord(1, "a small record before").B...)
	arc = append(arc, warcgen.ARCRecord(2, strings.Repeat("a block larger than the memory limit\n", (33<<20)/37)).B...)
	arc = append(arc, warcgen.ARCRecord(3, "a small record after").B...)
	path := filepath.Join(in, "big.arc")
	if err := os.WriteFile(path, arc, 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"convert", "arc2warc", "-q", "-o", out, path})
	t.Setenv(failpointsEnv, "convert.block-spilled=kill") // read by the crash child only
	if !testenv.CrashChild(t, cliChildEnv+"="+string(args), func(string) bool { return false }) {
		t.Fatal("the conversion ended before its block went to a temporary file: the case proves nothing")
	}
	for _, name := range listDir(t, out) {
		switch {
		case strings.HasPrefix(name, ".arc2warc-block-"):
			t.Errorf("the killed run left its block buffer %s on disk", name)
		case name == "big.warc.gz":
			t.Errorf("the killed run left a WARC under its final name")
		}
	}
	if names := listDir(t, in); len(names) != 1 {
		t.Errorf("beside the input: %v", names)
	}
	if _, stderr, err := runCDXJCmd(t, "convert", "arc2warc", "-q", "-o", out, path); err != nil {
		t.Fatalf("the run again: %v\n%s", err, stderr)
	}
	if names := listDir(t, out); len(names) != 1 || names[0] != "big.warc.gz" {
		t.Errorf("after the run again the output directory holds %v, want big.warc.gz alone", names)
	}
	res, err := framescan.File(filepath.Join(out, "big.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range res.Records {
		got[r.URI] = true
	}
	for i := 1; i <= 3; i++ {
		if u := fmt.Sprintf("http://example.org/%d", i); !got[u] {
			t.Errorf("%s not in the converted WARC", u)
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
