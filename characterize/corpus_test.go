package characterize

import (
	"path/filepath"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestCorpus characterizes the real-world WARC files of the shared corpus
// (PDFs, office documents, images, fonts, HTML from 2006 to 2019, revisits
// from Heritrix and pywb) and compares every record's PUID, note and
// revisit inheritance, and the per-file aggregates, with
// testdata/corpus.txt.
func TestCorpus(t *testing.T) {
	files := testenv.CorpusWARCs(t)
	st := openStore(t, "", StoreOptions{})
	c := newCharacterizer(t, st, Options{})
	if problems := scanAll(t, c, files...); len(problems) > 0 {
		t.Errorf("corpus WARCs read with problems: %v", problems)
	}
	golden(t, "corpus.txt", render(st, true))
	// ARC files (1996-2008 captures) read by warcio behind the same API.
	arcs, _ := filepath.Glob(filepath.Join(testenv.SharedDir(t), "corpus", "arc", "*.arc*"))
	if len(arcs) == 0 {
		t.Fatal("no ARC files in the corpus")
	}
	ast := openStore(t, "", StoreOptions{})
	if problems := scanAll(t, newCharacterizer(t, ast, Options{}), arcs...); len(problems) > 0 {
		t.Errorf("corpus ARCs read with problems: %v", problems)
	}
	golden(t, "corpus-arc.txt", render(ast, true))
	// Spot checks that do not depend on the pinned file.
	for _, w := range []struct{ file, puid string }{
		{"aut-example.pdf.warc.gz", "fmt/18"},   // PDF 1.4
		{"aut-example.docs.warc.gz", "fmt/412"}, // DOCX
		{"pywb-iana.warc.gz", "x-fmt/224"},      // CSS, by hints
		{"pywb-iana.warc.gz", "fmt/92"},         // SVG 1.1
		{"pywb-iana.warc.gz", "fmt/471"},        // HTML5
	} {
		found := false
		for _, a := range st.Formats(w.puid) {
			found = found || a.File == w.file && a.Objects > 0
		}
		if !found {
			t.Errorf("%s: no %s found", w.file, w.puid)
		}
	}
}
