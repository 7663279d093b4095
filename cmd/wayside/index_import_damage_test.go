package main

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
	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/internal/warcgen"
)

// importedOriginals imports path into a new index and returns its
// originals by (URL digest) with the stored offset each has, and the
// command's stderr and error.
func importedOriginals(t *testing.T, path string, extra ...string) (map[string]int64, string, error) {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "idx")
	_, stderr, err := runIndexCLI(t, append(append([]string{"import", "-q", "--index", idx}, extra...), path)...)
	exp, stderr2, err2 := runIndexCLI(t, "export", "--index", idx, "--captures", "-")
	if err2 != nil {
		t.Fatalf("export: %v\n%s", err2, stderr2)
	}
	got := map[string]int64{}
	for _, line := range strings.Split(exp, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		l, err := cdxj.Parse(line)
		if err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		got[l.URL+" "+l.Digest] = l.Offset
	}
	return got, stderr, err
}

// members returns the stored gzip member boundaries of a corpus file, as
// the second framing (internal/framescan) finds them: the start of each
// member holding a record, and the file's end.
func members(t *testing.T, data []byte) []int64 {
	t.Helper()
	res, err := framescan.Scan(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var m []int64
	for _, r := range res.Records {
		if len(m) == 0 || m[len(m)-1] != r.Member {
			m = append(m, r.Member)
		}
	}
	return append(m, int64(len(data)))
}

// TestIndexImportGoesOnPastDamageRealFiles: issue 21 found `index import`
// without --strict stopping at the first bad record although the README
// says it goes on. Real files of the shared corpus (WARC and ARC), each
// damaged one way in a member in its middle — bytes that are no gzip data
// inserted, the member's deflate data flipped, its record header
// damaged, two members merged into one (a multi-record member), the file
// cut — are imported: every original of the intact file outside the
// damaged member(s) is imported all the same, the damage is named by file
// and offset on stderr, the exit status is 1; with --strict the import
// stops at the damage with exit 1.
func TestIndexImportGoesOnPastDamageRealFiles(t *testing.T) {
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	dir := t.TempDir()
	tried := 0
	for _, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			continue // the shapes are gzip member shapes
		}
		mem := members(t, data)
		if len(mem) < 5 {
			continue
		}
		intact, stderr, err := importedOriginals(t, src)
		if err != nil {
			t.Fatalf("%s intact: %v\n%s", src, err, stderr)
		}
		if len(intact) == 0 {
			continue
		}
		k := len(mem) / 2 // the member damaged: mem[k]..mem[k+1]
		a, b, c := mem[k], mem[k+1], mem[k+2]
		z := gzip.NewReader
		var rec []byte
		if zr, err := z(bytes.NewReader(data[a:b])); err == nil {
			rec, _ = io.ReadAll(zr)
		}
		join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
		type shape struct {
			name string
			data []byte
			// lost: stored range of the intact file whose originals may be
			// missing; shift: how far offsets after it moved
			lostFrom, lostTo int64
			named            string // what stderr must say
		}
		shapes := []shape{
			{"junk-between-members", join(data[:b], []byte("junk that is no gzip data\n"), data[b:]), -1, -1, fmt.Sprintf("offset %d", b)},
			{"deflate-flipped", func() []byte {
				d := slices.Clone(data)
				for i := a + (b-a)/2; i < a+(b-a)/2+8 && i < b-8; i++ {
					d[i] ^= 0x5a
				}
				return d
			}(), a, b, fmt.Sprintf("offset %d", a)},
			{"header-damaged", join(data[:a], warcgen.Gzip(bytes.Replace(rec, []byte("WARC/1."), []byte("WARX/1."), 1)), data[b:]), a, b, fmt.Sprintf("offset %d", a)},
			{"members-merged", join(data[:a], warcgen.Gzip(join(rec, func() []byte {
				zr, err := z(bytes.NewReader(data[b:c]))
				if err != nil {
					t.Fatal(err)
				}
				r, _ := io.ReadAll(zr)
				return r
			}())), data[c:]), a, c, fmt.Sprintf("offset %d", a)},
			{"cut", data[:len(data)-7], mem[len(mem)-2], int64(len(data)), fmt.Sprintf("offset %d", mem[len(mem)-2])},
		}
		if bytes.Equal(bytes.Replace(rec, []byte("WARC/1."), []byte("WARX/1."), 1), rec) {
			// an ARC record: damage its Archive-date
			nl := bytes.IndexByte(rec, '\n')
			f := bytes.Fields(rec[:nl])
			if len(f) < 5 {
				t.Fatalf("%s: member at %d holds no ARC header line", src, a)
			}
			f[2] = append([]byte("2O"), f[2][2:]...)
			shapes[2].data = join(data[:a], warcgen.Gzip(join(bytes.Join(f, []byte(" ")), rec[nl:])), data[b:])
		}
		// Records sharing a member cannot be located: each would-be
		// original among them is named; other records are not originals.
		holds := false
		for _, off := range intact {
			holds = holds || off >= a && off < c
		}
		if !holds {
			shapes[3].named = ""
		}
		for _, s := range shapes {

			path := filepath.Join(dir, filepath.Base(src)+"."+s.name+".bin")
			if err := os.WriteFile(path, s.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, stderr, err := importedOriginals(t, path)
			if s.named != "" && (err == nil || report(&strings.Builder{}, err, false) != exitFailure) {
				t.Errorf("%s: exit status not 1 (%v)\n%s", path, err, stderr)
			}
			if s.named != "" && (!strings.Contains(stderr, filepath.Base(path)) || !strings.Contains(stderr, s.named)) {
				t.Errorf("%s: stderr does not name the damage (%q):\n%s", path, s.named, stderr)
			}
			for key, off := range intact {
				if off >= s.lostFrom && off < s.lostTo {
					continue
				}
				if _, ok := got[key]; !ok {
					t.Errorf("%s: original %s (intact offset %d) not imported: the import stopped at the damage?\n%s", path, key, off, stderr)
				}
			}
			// --strict stops at the damage.
			if _, stderr, err := importedOriginals(t, path, "--strict"); s.named != "" && err == nil {
				t.Errorf("%s --strict: exit 0\n%s", path, stderr)
			}
		}
		tried++
	}
	if tried < 3 {
		t.Fatalf("only %d corpus files have enough gzip members", tried)
	}
}
