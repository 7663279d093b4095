package dedupindex_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/ddtest"
	"github.com/wayside-archive/wayside/internal/testenv"
)

func formatFileStats(s dedupindex.FileStats) string {
	return fmt.Sprintf("%s: format=%s records=%d originals=%d present=%d revisits=%d skipped=%d bad=%d",
		filepath.Base(s.File), s.Format, s.Records, s.Originals, s.Present, s.Revisits, s.Skipped, s.Bad)
}

// TestImportCorpus imports every real-world WARC of the shared corpus into
// one index and pins the per-file counts in testdata/import-corpus.txt.
func TestImportCorpus(t *testing.T) {
	files := testenv.CorpusWARCs(t)
	ctx := context.Background()
	ix := openTestIndex(t)
	byName := map[string]string{}
	for _, f := range files {
		byName[filepath.Base(f)] = f
	}
	seen := map[string]bool{}
	ddtest.Run(t, "testdata/import-corpus.txt", func(t *testing.T, c *ddtest.Case) string {
		if c.Cmd != "import" {
			t.Fatalf("unknown command %q", c.Cmd)
		}
		path, ok := byName[c.Positional()[0]]
		if !ok {
			t.Fatalf("corpus file %s is missing", c.Positional()[0])
		}
		seen[c.Positional()[0]] = true
		st, err := dedupindex.Import(ctx, ix, []string{path}, dedupindex.ImportOptions{Scope: "corpus", BatchSize: 7})
		if err != nil {
			t.Fatalf("Import(%s): %v", path, err)
		}
		fs := st.Files[0]
		if sum := fs.Originals + fs.Present + fs.Revisits + fs.Skipped + fs.Bad; sum != fs.Records {
			t.Errorf("%s: counts add up to %d, read %d records", path, sum, fs.Records)
		}
		var b strings.Builder
		b.WriteString(formatFileStats(fs))
		for _, e := range st.Errors {
			b.WriteString("\n  " + strings.ReplaceAll(e.Error(), filepath.Dir(path)+"/", ""))
		}
		return b.String()
	})
	for name := range byName {
		if !seen[name] {
			t.Errorf("corpus file %s is not in testdata/import-corpus.txt", name)
		}
	}
}
