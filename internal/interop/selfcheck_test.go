package interop_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
)

// recorder collects the errors a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}

func (r *recorder) want(t *testing.T, what string) {
	t.Helper()
	for _, e := range r.errs {
		if strings.Contains(e, what) {
			return
		}
	}
	t.Errorf("the checks did not report %q; they reported:\n%s", what, strings.Join(r.errs, "\n"))
}

// mutate changes the byte at offset pos into the value of the header
// named name (its first occurrence at or after from) to another Base32
// digit or decimal digit, so that the record stays well-formed.
func mutate(t *testing.T, b []byte, from int, name string, pos int) int {
	t.Helper()
	i := bytes.Index(b[from:], []byte("\r\n"+name+": "))
	if i < 0 {
		t.Fatalf("no %s header", name)
	}
	at := from + i + len(name) + 4 + pos
	switch c := b[at]; {
	case c >= '0' && c <= '8':
		b[at] = c + 1
	case c == '9':
		b[at] = '0'
	case c == 'A':
		b[at] = 'B'
	default:
		b[at] = 'A'
	}
	return at
}

// TestChecksCatchBrokenOutput shows the checks fail on the defects they
// exist for: a crawl's WARC (decompressed, so that header bytes can be
// changed in place) with a wrong block digest, a wrong payload digest and
// a revisit whose WARC-Refers-To-Date names no record; a CDXJ file out of
// order; a CDXJ line whose status differs from warcio.js's.
func TestChecksCatchBrokenOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	dir := crawlExample(t, false)
	gz := glob(t, filepath.Join(dir, "*.warc.gz"))
	if len(gz) != 1 {
		t.Fatalf("want one WARC file, got %v", gz)
	}
	f, err := os.Open(gz[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	mutate(t, b, 0, "WARC-Block-Digest", len("sha1:"))
	mutate(t, b, bytes.Index(b, []byte("WARC-Type: response")), "WARC-Payload-Digest", len("sha1:"))
	mutate(t, b, bytes.Index(b, []byte("WARC-Type: revisit")), "WARC-Refers-To-Date", len("2006-01-02T15:04:0"))
	broken := filepath.Join(t.TempDir(), "broken.warc")
	if err := os.WriteFile(broken, b, 0o644); err != nil {
		t.Fatal(err)
	}
	set := outputSet{name: "broken", warcs: []string{broken}}
	recs := js.warcioRecords(t, set.warcs)
	r := &recorder{TB: t}
	checkRecords(r, set, recs)
	written := checkRevisitRefs(r, set, recs, nil)
	r.want(t, "warcio.js computes block sha1")
	r.want(t, "warcio.js computes payload sha1")
	r.want(t, "no response or resource record of")

	// wabac.js, given the revisit with its wrong date, must not be taken
	// to resolve it: name the original by the date it really has.
	for _, p := range recs[broken] {
		if strings.EqualFold(p.h("WARC-Type"), "revisit") {
			written = append(written, revisitRef{where: "broken revisit", revisit: &p, original: &p})
		}
	}
	if len(written) != 1 {
		t.Fatalf("want the crawl's one revisit, got %d", len(written))
	}
	checkReplay(r, js, set, written)
	r.want(t, "wabac.js resolves it to")

	// A CDXJ file out of order.
	lines := readLines(t, glob(t, filepath.Join(dir, "*.cdxj"))[0])
	slices.Sort(lines)
	slices.Reverse(lines)
	unsorted := filepath.Join(t.TempDir(), "unsorted.cdxj")
	if err := os.WriteFile(unsorted, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cdxjtest.CheckSorted(r, []string{unsorted})
	r.want(t, "sorts before the line above it")

	// A line that disagrees with warcio.js.
	l, err := cdxj.Parse(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	other := l
	other.Status++
	if diffs, _ := cdxjDiff(l, other, nil); len(diffs) != 1 || !strings.HasPrefix(diffs[0], "status:") {
		t.Errorf("cdxjDiff of lines differing in status: %q", diffs)
	}
}
