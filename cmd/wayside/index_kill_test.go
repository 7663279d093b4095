package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
)

// TestIndexDeleteExportKill9 kills the real binary (SIGKILL) during
// `index delete` and `index export` at a random moment: afterwards `index
// stats --check` passes, every original of the files not selected is
// there unchanged, each selected one is there or gone, the export left no
// output file (outputs appear by rename when complete), and running the
// delete again finishes it. (Where the kill lands is random: the package
// tests of dedupindex/pebble and captureindex kill deletes provably half
// way, at a chosen count.)
func TestIndexDeleteExportKill9(t *testing.T) {
	bin := waysideBinary(t)
	ctx := context.Background()
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	const n, perFile = 6000, 2000 // three files
	ix, err := dipebble.Open(idx)
	if err != nil {
		t.Fatal(err)
	}
	var es []dedupindex.Entry
	for i := range n {
		o := indextest.SyntheticOriginal(i)
		o.File = fmt.Sprintf("WAYSIDE-20250101000000-%05d.warc.gz", i/perFile)
		es = append(es, dedupindex.Entry{Key: dedupindex.Key{Scope: "s", Digest: o.Digest}, Original: o})
	}
	for i := 0; i < n; i += 1000 {
		if _, err := ix.PutBatch(ctx, es[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	ix.Close()
	sel := []string{"WAYSIDE-20250101000000-00000.warc.gz", "WAYSIDE-20250101000000-00001.warc.gz"}
	// kill runs the binary and kills it (SIGKILL) once its stderr has
	// printed a line containing after ("": at a random moment).
	kill := func(after string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if after == "" {
			time.Sleep(time.Duration(50+rand.IntN(400)) * time.Millisecond) // picks a random kill point; nothing waits on it
		} else {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() && !strings.Contains(sc.Text(), after) {
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	check := func(when string) int {
		t.Helper()
		if out, _, err := runCLI(ctx, "index", "stats", "--index", idx, "--check"); err != nil {
			t.Fatalf("%s: index stats --check: %v\n%s", when, err, out)
		}
		ix, err := dipebble.Open(idx)
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		gone := 0
		for _, e := range es {
			o, ok, err := ix.Lookup(ctx, e.Key)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !ok && !dedupindex.MatchFile(sel, e.Original.File):
				t.Fatalf("%s: an original of another file is gone: %+v", when, e.Original)
			case !ok:
				gone++
			case o.RecordID != e.Original.RecordID || o.Offset != e.Original.Offset || o.File != e.Original.File:
				t.Fatalf("%s: original changed: %+v", when, o)
			}
		}
		return gone
	}
	out := filepath.Join(dir, "export.cdxj")
	kill("", "index", "export", "--index", idx, "-o", out)
	if _, err := os.Stat(out); err == nil {
		t.Log("the export finished before the kill")
	} else {
		check("after kill -9 during export")
	}
	kill(fmt.Sprintf("%s: %d originals deleted", sel[0], perFile), "index", "delete", "--index", idx, "--file", sel[0], "--file", sel[1])
	gone := check("after kill -9 during delete")
	if gone < perFile {
		t.Fatalf("the first file's delete was reported done, but only %d of its %d originals are gone", gone, perFile)
	}
	t.Logf("kill -9 during delete, after the first file: %d of %d selected originals were gone", gone, 2*perFile)
	if _, _, err := runCLI(ctx, "index", "delete", "--index", idx, "--file", sel[0], "--file", sel[1]); err != nil {
		t.Fatal(err)
	}
	if gone := check("after the delete ran again"); gone != 2*perFile {
		t.Fatalf("%d selected originals gone after the second delete, want %d", gone, 2*perFile)
	}
}
