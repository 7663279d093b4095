package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkOutput, the one output check: an output that is an input under
// another name (hard link, symlink, ./ path) is refused even with
// --overwrite; two outputs naming one file are refused; an existing file
// needs --overwrite; a new file in an existing directory passes, and the
// stale temporary files of a killed writer of it are removed.
func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.warc.gz")
	if err := os.WriteFile(in, []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.warc.gz")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	sym := filepath.Join(dir, "sym.warc.gz")
	if err := os.Symlink("in.warc.gz", sym); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.cdxj")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "new.cdxj")
	stale := filepath.Join(dir, ".new.cdxj.tmp-123")
	if err := os.WriteFile(stale, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		outs      []outFile
		overwrite bool
		want      string // "" for no error
	}{
		{[]outFile{{"-o", in}}, true, "is one of the inputs"},
		{[]outFile{{"-o", hard}}, true, "is the input " + in},
		{[]outFile{{"-o", sym}}, true, "is the input " + in},
		{[]outFile{{"-o", dir + "/./in.warc.gz"}}, true, "is the input"},
		{[]outFile{{"-o", other}}, false, "already exists (give --overwrite"},
		{[]outFile{{"-o", other}}, true, ""},
		{[]outFile{{"--table", fresh}, {"--plot", fresh}}, false, "the same file is written twice"},
		{[]outFile{{"-o", filepath.Join(dir, "missing", "x")}}, false, "no such directory"},
		{[]outFile{{"-o", dir}}, true, "is a directory"},
		{[]outFile{{"-o", "-"}, {"-o", ""}}, false, ""},
		{[]outFile{{"-o", fresh}}, false, ""},
	} {
		err := checkOutput("test", []string{in, "-"}, tc.overwrite, tc.outs...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v, want no error", tc.outs, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v (overwrite %v): %v, want %q", tc.outs, tc.overwrite, err, tc.want)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temporary file of new.cdxj is still there (%v)", err)
	}
	if b, _ := os.ReadFile(in); string(b) != "input" {
		t.Errorf("the input changed: %q", b)
	}
}
