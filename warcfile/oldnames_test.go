package warcfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
	"github.com/wayside-archive/wayside/warcio"
)

// TestOldSideFileNames opens testdata/oldnames, a directory written by the
// writer before the side-file naming rule (NAME.cdxj beside NAME.warc.gz,
// and a file left ".open" by a crash): its side files are still found and
// replayed, the ".open" file is recovered with its side file rebuilt under
// the new name (the old one removed, so no line is listed twice), and new
// files get the new name.
func TestOldSideFileNames(t *testing.T) {
	dir := t.TempDir()
	ents, err := os.ReadDir("testdata/oldnames")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata/oldnames", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const crashed = "WAYSIDE-20261127030003000-00002-fixture.warc.gz"
	w, err := OpenWriter(WriterOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rep := w.Recovery(); len(rep.Files) != 1 || rep.Files[0].Final != crashed || rep.Files[0].Records != 3 || rep.PartialTails != 0 {
		t.Fatalf("recovery: %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(dir, "WAYSIDE-20261127030003000-00002-fixture.cdxj")); !os.IsNotExist(err) {
		t.Errorf("the crashed file's side file under the old name is still there: %v", err)
	}
	wr, err := w.Write(testRecord("http://example.org/new", []byte("new")))
	if err != nil {
		t.Fatal(err)
	}
	caps, err := w.WaitDurable(context.Background(), wr)
	if err != nil || len(caps) != 1 {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Every closed WARC's side file is found, under whichever name, and
	// is exactly `wayside cdxj` of the WARC.
	var warcs []string
	all, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, p := range all {
		warcs = append(warcs, filepath.Base(p))
	}
	if len(warcs) != 4 {
		t.Fatalf("WARC files %v, want the 3 of the fixture and a new one", warcs)
	}
	legacy := 0
	for _, name := range warcs {
		side, found, err := cdxj.FindSideFile(dir, name)
		if err != nil || !found {
			t.Fatalf("%s: no side file found (%v)", name, err)
		}
		if side != filepath.Join(dir, cdxj.SideFileName(name)) {
			legacy++
		}
		if name == caps[0].File && side != filepath.Join(dir, name+".cdxj") {
			t.Errorf("new file's side file is %s, want NAME.warc.gz.cdxj", side)
		}
		if name == crashed {
			// Rebuilt by recovery, which does not hash payloads (these
			// records declare no payload digest): the lines less digests.
			if n := strings.Count(readFile(t, side), "\n"); n != 2 {
				t.Errorf("%s: %d lines, want 2", side, n)
			}
			continue
		}
		if got, want := readFile(t, side), indexOf(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s is not the index of %s:\n%s\nwant\n%s", side, name, got, want)
		}
	}
	if legacy != 2 {
		t.Errorf("%d side files found under the old name, want the fixture's 2 closed files", legacy)
	}

	// Listing and replaying the directory, as the consumers catch up: every
	// line once, each pointing at its record.
	sides, err := cdxj.ListSideFiles(dir)
	if err != nil || len(sides) != 4 {
		t.Fatalf("side files %v (%v), want 4", sides, err)
	}
	seen := map[string]bool{}
	for _, p := range sides {
		err := cdxj.ReplaySideFile(p, -1, func(line string, lineNo int) error {
			l, err := cdxj.Parse(line)
			if err != nil {
				return err
			}
			c, err := l.Capture()
			if err != nil {
				return err
			}
			key := c.File + " " + c.URI
			if seen[key] {
				t.Errorf("%s listed twice", key)
			}
			seen[key] = true
			f, err := os.Open(filepath.Join(dir, c.File))
			if err != nil {
				return err
			}
			defer f.Close()
			rec, err := warcio.ReadAt(f, c.File, c.Offset, c.Length, warcio.Options{})
			if err != nil {
				return err
			}
			if rec.TargetURI != c.URI || rec.End() != c.Offset+c.Length {
				t.Errorf("%s line %d: the record at %d is %s, %d bytes", p, lineNo, c.Offset, rec.TargetURI, rec.Length)
			}
			return nil
		})
		if err != nil {
			t.Errorf("replay %s: %v", p, err)
		}
	}
	if len(seen) != 9 {
		t.Errorf("%d lines replayed, want 9", len(seen))
	}
	cdxjtest.CheckSorted(t, sides)
}
