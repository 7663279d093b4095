package postdedup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/testenv"
	gen "github.com/wayside-archive/wayside/internal/warcgen"
	"github.com/wayside-archive/wayside/warcio"
)

// TestValidateSecondFraming: dedup of an input with damaged bytes between
// records (junk, a gzip member holding no record) validates, the second
// framing agreeing with the reader on every record; and the checks that
// rely on the second framing alone fail when a revisit would replace more
// than one record, or bytes where no record starts, or when the input no
// longer reads as the manifest counted (faults a correct run cannot
// produce, injected into the copies and counts given to checkFraming), or
// when the manifest scan's reading, as its framing record holds it,
// disagrees with the second framing (a record one finds and the other
// does not) or is not the scan's record of this input.
func TestValidateSecondFraming(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "a.warc.gz")
	os.MkdirAll(filepath.Dir(in), 0o755)
	payload := bytes.Repeat([]byte("duplicate payload "), 200)
	var recs []testRecord
	for i := 0; i < 5; i++ {
		recs = append(recs, testRecord{id: id(i + 1), uri: "http://example.org/" + string(rune('a'+i)), date: t0.Add(time.Duration(i) * time.Hour), payload: payload})
	}
	offs := writeWARC(t, in, recs, []byte("junk after the last record that is no gzip member\n"))
	out := filepath.Join(dir, "out")
	rep, err := Run(context.Background(), []string{in}, out, RunOptions{})
	if rep.Rewrite.Revisits != 4 {
		t.Fatalf("run: %v, %d revisits (want 4)", err, rep.Rewrite.Revisits)
	}
	st, err := Validate(context.Background(), []string{manifestPath(out)}, []string{planPath(out)}, out, ValidateOptions{})
	if err != nil {
		t.Fatalf("validate: %v %v", err, st.Problems)
	}
	m, err := OpenManifest(manifestPath(out))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	f := m.Files[0]
	if f.Records != 5 || f.Problems != 1 || f.Framing == "" || f.Framed == "" {
		t.Fatalf("manifest file info %+v: want 5 records, 1 problem, a framing and a framed record", f)
	}
	rec, err := os.ReadFile(f.Framing)
	if err != nil {
		t.Fatal(err)
	}
	// edited returns f with its framing record changed by edit (lines
	// without their newlines) and its counts set to records and problems.
	edited := func(name string, records int, edit func(lines []string) []string) FileInfo {
		lines := strings.Split(strings.TrimSuffix(string(rec), "\n"), "\n")
		g := f
		g.Records = records
		g.Framing = filepath.Join(dir, name)
		if err := os.WriteFile(g.Framing, []byte(strings.Join(edit(lines), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return g
	}
	// dropRecord removes the record read with key from the lines and
	// counts one record fewer in #end.
	dropRecord := func(key string) func([]string) []string {
		return func(lines []string) []string {
			var out []string
			for _, l := range lines {
				switch {
				case strings.HasPrefix(l, "r\t") && strings.HasSuffix(l, "\t"+key):
					continue
				case strings.HasPrefix(l, "#end\t"):
					l = "#end\t4\t1"
				}
				out = append(out, l)
			}
			return out
		}
	}
	addRecord := func(lines []string) []string {
		end := lines[len(lines)-1]
		return append(lines[:len(lines)-1], "r\t7\t7\tid <urn:uuid:never-written>", strings.Replace(end, "\t5\t", "\t6\t", 1))
	}
	stale := f
	stale.ModTime = f.ModTime.Add(time.Second)
	cutFramed := f
	cutFramed.Framed = filepath.Join(dir, "cut.framed")
	if b, err := os.ReadFile(f.Framed); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(cutFramed.Framed, b[:bytes.LastIndex(b[:len(b)-1], []byte("\n"))+1], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		f      FileInfo
		copies []*Copy
		want   string
	}{
		{"agrees", f, []*Copy{{Offset: offs[1], Length: offs[2] - offs[1]}}, ""},
		{"two records in one copy", f, []*Copy{{Offset: offs[1], Length: offs[3] - offs[1]}}, "would drop the record " + "id " + id(3)},
		{"no record at the copy", f, []*Copy{{Offset: offs[1] + 7, Length: 10}}, "finds 0 records starting where"},
		{"counts changed", FileInfo{Path: f.Path, Size: f.Size, ModTime: f.ModTime, Records: 6, Problems: 1, Compressed: true, Framing: f.Framing, Framed: f.Framed}, nil,
			"the scan's framing record holds 5 records and 1 unreadable ones, the manifest counted 6 and 1"},
		// The scan's reading and the second framing disagree.
		{"a record the scan did not read", edited("missing", 4, dropRecord("id "+id(3))), nil,
			"record id " + id(3) + " found by the second framing, neither read nor reported unreadable"},
		{"a record only the scan read", edited("extra", 6, addRecord), nil,
			"record id <urn:uuid:never-written> read, not found by the second framing"},
		// A framing record that is not the scan's of this input is refused.
		{"framing record of another input", stale, nil, "not the manifest's " + in},
		{"framing record cut short", edited("cut", 5, func(l []string) []string { return l[:len(l)-1] }), nil, "no #end line: cut short"},
		{"no framing record", FileInfo{Path: f.Path, Size: f.Size, ModTime: f.ModTime, Records: 5, Problems: 1, Compressed: true, Framed: f.Framed}, nil, "no framing record"},
		// Without the framed record (or when it is cut short), the input
		// is framed on its own and the checks find the same.
		{"no framed record", FileInfo{Path: f.Path, Size: f.Size, ModTime: f.ModTime, Records: 5, Problems: 1, Compressed: true, Framing: f.Framing},
			[]*Copy{{Offset: offs[1], Length: offs[3] - offs[1]}}, "would drop the record " + "id " + id(3)},
		{"framed record cut short", cutFramed, []*Copy{{Offset: offs[1], Length: offs[3] - offs[1]}}, "would drop the record " + "id " + id(3)},
		{"framed record cut short, agrees", cutFramed, []*Copy{{Offset: offs[1], Length: offs[2] - offs[1]}}, ""},
	} {
		// Each case with the framed record the scan made and framing the
		// input on its own (--independent-inflate).
		for _, independent := range []bool{false, true} {
			var st ValidateStats
			checkFraming(context.Background(), tc.f, memCopies(tc.copies), independent, &st)
			got := strings.Join(st.Problems, "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("%s (independent %v): problems %q, want %q", tc.name, independent, got, tc.want)
			}
			// The streamed comparison finds exactly the disagreements
			// framescan.Compare finds over the records held whole.
			reading, err := readFraming(tc.f)
			if err != nil {
				continue
			}
			framed, err := readFramed(tc.f)
			if independent || err != nil {
				if framed, err = framescan.File(tc.f.Path); err != nil {
					t.Fatal(err)
				}
			}
			want := framescan.Compare(tc.f.Path, framed, reading.read, reading.unread)
			var disagree []string
			for _, p := range st.Problems {
				if strings.Contains(p, "by the second framing") {
					disagree = append(disagree, p)
				}
			}
			if !slices.Equal(disagree, want) {
				t.Errorf("%s (independent %v): disagreements %q, framescan.Compare finds %q", tc.name, independent, disagree, want)
			}
		}
	}
}

// TestFramingRecordIsTheScansReading: the framing record the manifest scan
// writes of each input (read with the options the scan needs: payload
// tap, HTTP heads, digests) lists exactly the records, keys, offsets and
// unreadable stretches that a plain read of the input with warcio gives,
// over the real-world WARC and ARC corpus and an input with junk between
// records, so that comparing it with the second framing is comparing the
// reader's framing; a framing record written by inputs read in parallel
// (-j 2) is the same; and the framing records of an earlier manifest are
// removed when it is written again.
func TestFramingRecordIsTheScansReading(t *testing.T) {
	dir := t.TempDir()
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	in := copyInputs(t, filepath.Join(dir, "in"), files...)
	junk := filepath.Join(dir, "in", "junk.warc.gz")
	payload := bytes.Repeat([]byte("duplicate payload "), 200)
	recs := []testRecord{{id: id(1), uri: "http://example.org/a", date: t0, payload: payload}, {id: id(2), uri: "http://example.org/b", date: t0, payload: payload}}
	writeWARC(t, junk, recs, []byte("junk after the last record that is no gzip member\n"))
	in = append(in, junk)
	man := filepath.Join(dir, "m", "manifest.tsv")
	os.MkdirAll(filepath.Dir(man), 0o755)
	if _, err := WriteManifest(context.Background(), in, man, ManifestOptions{Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	m, err := OpenManifest(man)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if len(m.Files) != len(in) {
		t.Fatalf("%d files in the manifest, want %d", len(m.Files), len(in))
	}
	spans := 0
	for _, f := range m.Files {
		got, err := readFraming(f)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		var want framingReading
		r, err := warcio.Open(f.Path, warcio.Options{SkipPayloadDigest: true, OnSpan: func(s warcio.Span) {
			if !s.Padding {
				want.unread = append(want.unread, framescan.Extent{Offset: s.Offset, Length: s.Length, DataOffset: s.DataOffset, DataLength: s.DataLength})
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				want.problems++
				if errors.Is(err, warcio.ErrTruncated) {
					break
				}
				continue
			}
			want.records++
			key := framescan.Key(rec.RecordID, rec.TargetURI, rec.Header("WARC-Date"))
			if rec.ARC != nil {
				key = framescan.Key("", rec.ARC.URL, rec.ARC.Date)
			}
			want.read = append(want.read, framescan.Read{Key: key, Offset: rec.Offset, DataOffset: rec.DataOffset})
		}
		r.Close()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the framing record holds %d records, %d problems, spans %+v; a plain read gives %d, %d, %+v",
				f.Path, got.records, got.problems, got.unread, want.records, want.problems, want.unread)
		}
		if got.records != f.Records || got.problems != f.Problems {
			t.Errorf("%s: framing record counts %d and %d, the manifest %d and %d", f.Path, got.records, got.problems, f.Records, f.Problems)
		}
		spans += len(got.unread)
	}
	if spans == 0 {
		t.Error("no input had an unreadable stretch: the spans were not compared")
	}
	// Written again for one input, the manifest's framing directory holds
	// that input's framing and framed records only (no records of the earlier inputs,
	// no temporary file a killed scan left).
	fdir := man + ".framing"
	os.WriteFile(filepath.Join(fdir, ".000000.tmp-killed"), []byte("partial"), 0o644)
	if _, err := WriteManifest(context.Background(), []string{junk}, man, ManifestOptions{}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(fdir)
	if len(ents) != 2 || ents[0].Name() != filepath.Base(framingName(man, 0)) || ents[1].Name() != filepath.Base(framedName(framingName(man, 0))) {
		t.Errorf("framing directory after a manifest of one input: %v", ents)
	}
}

// TestFramedRecordIsFilesFraming: the framed record the manifest scan
// writes of each input (framescan.Tap over the members the scan's reader
// inflates, read in parallel with -j 2) holds exactly what framescan.File
// finds inflating the input on its own — records, members, gaps, data
// bytes — over the real-world corpus and warcgen's damaged layouts (WARC
// and ARC; plain, gzip per record, multi-record members, one stream;
// damaged records, damaged gzip bytes, files cut short); most members of
// the compressed corpus are taken from the scan (proved), not inflated
// again; and a framed record that lost a record line makes checkFraming
// fail.
func TestFramedRecordIsFilesFraming(t *testing.T) {
	dir := t.TempDir()
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	in := copyInputs(t, filepath.Join(dir, "in"), files...)
	rng := rand.New(rand.NewSource(27))
	for it := 0; it < 24; it++ {
		layout := []string{"plain", "member", "multi", "stream"}[it%4]
		g := gen.Case(rng, it%8 >= 4, layout, 4+rng.Intn(12), it%3 != 2)
		p := filepath.Join(dir, "in", fmt.Sprintf("gen-%02d-%s.warc", it, layout))
		if err := os.WriteFile(p, g.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		in = append(in, p)
	}
	man := filepath.Join(dir, "m", "manifest.tsv")
	os.MkdirAll(filepath.Dir(man), 0o755)
	if _, err := WriteManifest(context.Background(), in, man, ManifestOptions{Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	m, err := OpenManifest(man)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	var proved, walked int
	for i, f := range m.Files {
		got, err := readFramed(f)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		want, err := framescan.File(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		for j := range want.Records {
			want.Records[j] = framescan.Record{Member: want.Records[j].Member, DataOffset: want.Records[j].DataOffset, ARC: want.Records[j].ARC,
				Type: want.Records[j].Type, ID: want.Records[j].ID, URI: want.Records[j].URI, Date: want.Records[j].Date,
				Length: want.Records[j].Length, Confirmed: want.Records[j].Confirmed}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: framed record holds %d records, %d members, %d gaps, %d data bytes; File finds %d, %d, %d, %d", f.Path,
				len(got.Records), got.Members, len(got.Gaps), got.DataBytes, len(want.Records), want.Members, len(want.Gaps), want.DataBytes)
		}
		b, err := os.ReadFile(f.Framed)
		if err != nil {
			t.Fatal(err)
		}
		var h framedResult
		_, rest, _ := strings.Cut(string(b), "\n#result\t")
		rj, _, _ := strings.Cut(rest, "\n")
		if err := json.Unmarshal([]byte(rj), &h); err != nil {
			t.Fatalf("%s: #result line: %v", f.Framed, err)
		}
		if i < len(files) {
			proved, walked = proved+h.Proved, walked+h.Walked
		}
	}
	if proved == 0 || walked > proved/10 {
		t.Errorf("corpus: %d members proved, %d left to framescan's walk: the scan's members were not used", proved, walked)
	}
	// A framed record that lost a record line is no longer the second
	// framing of the input: the record read is not found.
	f := m.Files[0]
	b, err := os.ReadFile(f.Framed)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var kept []string
	var dropped string
	for _, l := range lines {
		if dropped == "" && strings.HasPrefix(l, "f\t") {
			dropped = l
			continue
		}
		if strings.HasPrefix(l, "#end\t") {
			var recs, gaps int
			fmt.Sscanf(l, "#end\t%d\t%d", &recs, &gaps)
			l = fmt.Sprintf("#end\t%d\t%d", recs-1, gaps)
		}
		kept = append(kept, l)
	}
	g := f
	g.Framed = filepath.Join(dir, "dropped.framed")
	if err := os.WriteFile(g.Framed, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	var st ValidateStats
	checkFraming(context.Background(), g, nil, false, &st)
	if !strings.Contains(strings.Join(st.Problems, "\n"), "not found by the second framing") {
		t.Errorf("framed record without %q: problems %q", dropped, st.Problems)
	}
}
