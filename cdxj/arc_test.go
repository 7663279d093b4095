package cdxj

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestIndexARCCorpusGolden indexes the corpus ARC files into one sorted
// index and compares it with testdata/corpus-arc.cdxj (-update rewrites it).
func TestIndexARCCorpusGolden(t *testing.T) {
	got := indexSorted(t, testenv.CorpusARCs(t), IndexOptions{})
	golden(t, "testdata/corpus-arc.cdxj", got)
	// The Heritrix ARC: 300 records, the filedesc not indexed.
	if n := strings.Count(got, `"filename": "aut-example.arc.gz"`); n != 299 {
		t.Errorf("%d lines for aut-example.arc.gz, want 299 (300 records less the filedesc)", n)
	}
	if strings.Contains(got, "filedesc") {
		t.Error("the filedesc record is indexed")
	}
}

// TestPywbARCCompat: the index lines of pywb's ARC sample (warcio's
// example.arc, example.arc.gz) carry the values pywb's own CDX of it gives
// (pywb sample_archive/cdx/example.cdx and its indexer tests):
//
//	com,example)/ 20140216050221 http://example.com/ text/html 200 B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A - - 856 171 example.arc.gz
//	com,example)/ 20140216050221 http://example.com/ text/html 200 B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A - - 1656 151 example.arc
func TestPywbARCCompat(t *testing.T) {
	dir := filepath.Join(testenv.SharedDir(t), "corpus", "arc")
	for name, want := range map[string]string{
		"warcio-example.arc.gz": `com,example)/ 20140216050221 {"url": "http://example.com/", "mime": "text/html", "status": "200", "digest": "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", "length": "856", "offset": "171", "filename": "example.arc.gz"}` + "\n",
		"warcio-example.arc":    `com,example)/ 20140216050221 {"url": "http://example.com/", "mime": "text/html", "status": "200", "digest": "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", "length": "1656", "offset": "151", "filename": "example.arc"}` + "\n",
	} {
		got := indexSorted(t, []string{filepath.Join(dir, name)}, IndexOptions{Filename: strings.TrimPrefix(name, "warcio-")})
		if got != want {
			t.Errorf("%s:\n got %s want %s", name, got, want)
		}
	}
}
