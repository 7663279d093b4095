package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// inputTree lays out, from real corpus files: top/a.warc.gz, top/data.bin
// (a WARC under a name that says nothing), top/README.txt and
// top/notes.warc.gz (text, named like a WARC), top/sub/b.arc.gz and
// top/sub/c.warc (uncompressed), top/.hidden.warc.gz.
func inputTree(t *testing.T) (top string, warcA, bin, arcB, warcC string) {
	t.Helper()
	shared := filepath.Join(testenv.SharedDir(t), "corpus")
	top = t.TempDir()
	cp := func(src, dst string) string {
		b, err := os.ReadFile(filepath.Join(shared, src))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(top, dst)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	warcA = cp("warc/warcio-example.warc.gz", "a.warc.gz")
	bin = cp("warc/pywb-example-wget-1-14.warc.gz", "data.bin")
	cp("warc/pywb-dupes.warc.gz", ".hidden.warc.gz")
	arcB = cp("arc/warcio-example.arc.gz", "sub/b.arc.gz")
	warcC = cp("warc/npmwarc-CC-MAIN-20140820021334-00006.warc", "sub/c.warc")
	os.WriteFile(filepath.Join(top, "README.txt"), []byte("not an archive\n"), 0o644)
	os.WriteFile(filepath.Join(top, "notes.warc.gz"), []byte("WARC files are listed in the catalogue\n"), 0o644)
	return top, warcA, bin, arcB, warcC
}

// TestExpandInputs: a directory means its WARC and ARC files, decided by
// content (a WARC named data.bin is in, a text file named .warc.gz is
// out, with a line saying how many were skipped); -r recurses;
// --from-list reads paths one a line from a file or stdin; a URL there, an
// empty list and a directory without archives are errors naming them.
func TestExpandInputs(t *testing.T) {
	top, warcA, bin, arcB, warcC := inputTree(t)
	var stderr bytes.Buffer
	e := &env{stderr: &stderr}
	got, err := (&inputFlags{}).expand(context.Background(), e, "cmd", []string{top})
	if want := []string{warcA, bin}; err != nil || !slices.Equal(got, want) {
		t.Errorf("directory: %v %v, want %v", got, err, want)
	}
	if !strings.Contains(stderr.String(), "skipped 2 file(s) that are not WARC or ARC files") {
		t.Errorf("stderr %q does not count the 2 files skipped", stderr.String())
	}
	got, err = (&inputFlags{recurse: true}).expand(context.Background(), e, "cmd", []string{top})
	if want := []string{warcA, bin, arcB, warcC}; err != nil || !slices.Equal(got, want) {
		t.Errorf("-r: %v %v, want %v", got, err, want)
	}
	list := filepath.Join(t.TempDir(), "list.txt")
	os.WriteFile(list, []byte("# inputs\n"+warcC+"\n\n"+filepath.Join(top, "sub")+"\r\n"), 0o644)
	got, err = (&inputFlags{fromList: list}).expand(context.Background(), e, "cmd", []string{warcA})
	if want := []string{warcA, warcC, arcB}; err != nil || !slices.Equal(got, want) {
		t.Errorf("--from-list: %v %v, want %v (a path named twice once)", got, err, want)
	}
	e.stdin = strings.NewReader(bin + "\n")
	got, err = (&inputFlags{fromList: "-"}).expand(context.Background(), e, "cmd", nil)
	if want := []string{bin}; err != nil || !slices.Equal(got, want) {
		t.Errorf("--from-list -: %v %v, want %v", got, err, want)
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "x.txt"), []byte("x"), 0o644)
	os.WriteFile(list, []byte("https://example.org/a.warc.gz\n"), 0o644)
	blank := filepath.Join(t.TempDir(), "blank.txt")
	os.WriteFile(blank, []byte("# nothing\n"), 0o644)
	for _, tc := range []struct {
		in   inputFlags
		args []string
		want string
	}{
		{inputFlags{}, []string{empty}, empty + ": directory holds no WARC or ARC file (-r looks in subdirectories)"},
		{inputFlags{fromList: list}, nil, list + " line 1: \"https://example.org/a.warc.gz\" is a URL"},
		{inputFlags{fromList: blank}, nil, blank + ": no paths in it"},
		{inputFlags{fromList: filepath.Join(top, "nope.txt")}, nil, "nope.txt: no such file"},
	} {
		_, err := tc.in.expand(context.Background(), e, "cmd", tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v %v: error %v, want one saying %q", tc.in, tc.args, err, tc.want)
		}
	}
}

// TestReadingCommandsTakeDirectories: cdxj, characterize, mementomap
// generate, index import and dedup assess read a directory (-r) and a
// --from-list as they read the same files named one by one; a file named
// explicitly that is not a WARC or ARC is still an error.
func TestReadingCommandsTakeDirectories(t *testing.T) {
	top, warcA, bin, arcB, warcC := inputTree(t)
	files := []string{warcA, bin, arcB, warcC}
	list := filepath.Join(t.TempDir(), "list.txt")
	os.WriteFile(list, []byte(strings.Join(files, "\n")+"\n"), 0o644)
	ctx := context.Background()
	for _, cmd := range [][]string{
		{"cdxj"},
		{"mementomap", "generate", "-q"},
	} {
		named, stderr, err := runCLI(ctx, append(append([]string{}, cmd...), files...)...)
		if err != nil {
			t.Fatalf("%v FILES: %v\n%s", cmd, err, stderr)
		}
		byDir, stderr, err := runCLI(ctx, append(append([]string{}, cmd...), "-r", top)...)
		if err != nil {
			t.Fatalf("%v -r DIR: %v\n%s", cmd, err, stderr)
		}
		byList, stderr, err := runCLI(ctx, append(append([]string{}, cmd...), "--from-list", list)...)
		if err != nil {
			t.Fatalf("%v --from-list: %v\n%s", cmd, err, stderr)
		}
		// A map's header carries the time it was written (updated_at, to the
		// second): the three runs may straddle a second on a loaded machine.
		named, byDir, byList = withoutUpdatedAt(named), withoutUpdatedAt(byDir), withoutUpdatedAt(byList)
		if named == "" || byDir != named || byList != named {
			t.Errorf("%v: output differs between named files (%d bytes), -r DIR (%d) and --from-list (%d)", cmd, len(named), len(byDir), len(byList))
		}
	}
	for _, cmd := range [][]string{
		{"characterize", "-q", "--json"},
		{"dedup", "assess", "--json"},
		{"index", "import", "-q", "--index", filepath.Join(t.TempDir(), "ix")},
	} {
		if _, stderr, err := runCLI(ctx, append(append([]string{}, cmd...), "-r", top)...); err != nil {
			t.Errorf("%v -r DIR: %v\n%s", cmd, err, stderr)
		}
	}
	out := t.TempDir()
	if _, stderr, err := runCLI(ctx, "convert", "arc2warc", "-q", "-o", out, "-r", top); err != nil {
		t.Errorf("convert arc2warc -r DIR: %v\n%s", err, stderr)
	} else if m, _ := filepath.Glob(filepath.Join(out, "*.warc.gz")); len(m) != 1 {
		t.Errorf("convert arc2warc -r DIR wrote %v, want the one ARC converted", m)
	}
	if _, _, err := runCLI(ctx, "cdxj", filepath.Join(top, "notes.warc.gz")); err == nil {
		t.Errorf("cdxj of a named text file: no error")
	}
}

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

var updatedAt = regexp.MustCompile(`"updated_at":"[^"]*"`)

// withoutUpdatedAt blanks the write time in a MementoMap's !meta header.
func withoutUpdatedAt(s string) string { return updatedAt.ReplaceAllString(s, `"updated_at":""`) }
