package warcio

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/internal/warcgen"
)

type reading struct {
	recs  []*Record
	spans []Span
	errs  []error
}

func readAccounted(t *testing.T, name string, data []byte, seekable bool) reading {
	t.Helper()
	var rd reading
	var src io.Reader = bytes.NewReader(data)
	if !seekable {
		src = onlyReader{src}
	}
	r := NewReader(src, name, Options{OnSpan: func(s Span) { rd.spans = append(rd.spans, s) }})
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("reader does not end")
		}
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			rd.errs = append(rd.errs, err)
			continue
		}
		rd.recs = append(rd.recs, rec)
	}
	if n, _ := r.Unaccounted(); n != countReal(rd.spans) {
		t.Errorf("%s: Unaccounted says %d spans, OnSpan saw %d", name, n, countReal(rd.spans))
	}
	if seekable {
		// Read as a mapped file is read (Options.Map): the same records,
		// errors and spans.
		var spans []Span
		m := newMemReader(data, name, Options{OnSpan: func(s Span) { spans = append(spans, s) }})
		got := readOutcome(t, m)
		if len(got.Recs) != len(rd.recs) || len(got.Errs) != len(rd.errs) || !reflect.DeepEqual(spans, rd.spans) {
			t.Errorf("%s in memory: %d records, errors %v, spans %v; buffered: %d records, errors %v, spans %v", name, len(got.Recs), got.Errs, spans, len(rd.recs), rd.errs, rd.spans)
		} else {
			for i := range got.Recs {
				if !reflect.DeepEqual(got.Recs[i], *rd.recs[i]) {
					t.Errorf("%s in memory: record %d differs: %+v\nbuffered: %+v", name, i, got.Recs[i], *rd.recs[i])
				}
			}
		}
	}
	return rd
}

func countReal(ss []Span) int {
	n := 0
	for _, s := range ss {
		if !s.Padding {
			n++
		}
	}
	return n
}

func recKey(rec *Record) string {
	if rec.ARC != nil {
		return framescan.Key("", rec.ARC.URL, rec.ARC.Date)
	}
	return framescan.Key(rec.RecordID, rec.TargetURI, rec.Header("WARC-Date"))
}

type interval struct {
	off, n int64
	what   string
}

// checkTiling checks that the intervals cover data[0:len) with no overlap,
// the bytes between them blank.
func checkTiling(t *testing.T, name, coord string, data []byte, iv []interval) {
	t.Helper()
	sort.Slice(iv, func(i, j int) bool { return iv[i].off < iv[j].off })
	pos := int64(0)
	for _, x := range iv {
		if x.off < pos {
			t.Errorf("%s (%s): %s at %d overlaps what ends at %d", name, coord, x.what, x.off, pos)
		}
		for k := pos; k < x.off && k < int64(len(data)); k++ {
			if !isBlank(data[k]) {
				t.Errorf("%s (%s): byte %d (%q) is in no record and no span (next: %s at %d)", name, coord, k, data[k], x.what, x.off)
				break
			}
		}
		pos = max(pos, x.off+x.n)
	}
	for k := pos; k < int64(len(data)); k++ {
		if !isBlank(data[k]) {
			t.Errorf("%s (%s): byte %d (%q) after the last record or span is unaccounted", name, coord, k, data[k])
			break
		}
	}
	if pos > int64(len(data)) {
		t.Errorf("%s (%s): records and spans run to %d, past the end %d", name, coord, pos, len(data))
	}
}

// checkAccounting checks a reading of f: every byte in a record or a
// span; every good record read; the independent framing's records read or
// inside a span, and every record read found by it.
func checkAccounting(t *testing.T, f warcgen.File, rd reading) {
	t.Helper()
	got := map[string]int{}
	for _, rec := range rd.recs {
		got[recKey(rec)]++
	}
	for k := range f.Good {
		if got[k] == 0 {
			t.Errorf("%s: good record %s lost (errors %v)", f.Name, k, rd.errs)
		}
	}
	for k, n := range got {
		if n > 1 {
			t.Errorf("%s: record %s read %d times", f.Name, k, n)
		}
	}
	if f.Layout == "plain" || f.Layout == "member" {
		var iv []interval
		for _, rec := range rd.recs {
			if rec.Length > 0 {
				iv = append(iv, interval{rec.Offset, rec.Length, "record " + recKey(rec)})
			}
		}
		for _, s := range rd.spans {
			if s.Length > 0 {
				iv = append(iv, interval{s.Offset, s.Length, "span " + s.String()})
			}
		}
		checkTiling(t, f.Name, "stored", f.Data, iv)
	}
	plain := f.Data
	if f.Layout != "plain" {
		if f.RawBad {
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(f.Data))
		if err != nil {
			t.Fatal(err)
		}
		plain, err = io.ReadAll(zr)
		if err != nil && err != io.ErrUnexpectedEOF { // a cut file: its data as far as it goes
			t.Fatal(err)
		}
	}
	// A cut gzip member: decompressors differ in how much of its last
	// deflate block they hand out before the error, so the data ends where
	// the reader's tail span does.
	for _, s := range rd.spans {
		if strings.Contains(s.Reason, "cut short") && s.DataOffset >= 0 && s.DataOffset+s.DataLength < int64(len(plain)) {
			plain = plain[:s.DataOffset+s.DataLength]
		}
	}
	var iv []interval
	for _, rec := range rd.recs {
		iv = append(iv, interval{rec.DataOffset, rec.DataLength, "record " + recKey(rec)})
	}
	for _, s := range rd.spans {
		if s.DataOffset >= 0 {
			iv = append(iv, interval{s.DataOffset, s.DataLength, "span " + s.String()})
		}
	}
	checkTiling(t, f.Name, "uncompressed", plain, iv)

	// The independent framing.
	sc, err := framescan.Scan(bytes.NewReader(f.Data), int64(len(f.Data)))
	if err != nil {
		t.Fatal(err)
	}
	var read []framescan.Read
	for _, rec := range rd.recs {
		read = append(read, framescan.Read{Key: recKey(rec), Offset: rec.Offset, DataOffset: rec.DataOffset})
	}
	var unread []framescan.Extent
	for _, s := range rd.spans {
		if s.DataOffset >= 0 { // data extents: stored ones of a damaged member may hold records the scan reads
			unread = append(unread, framescan.Extent{DataOffset: s.DataOffset, DataLength: s.DataLength})
		}
	}
	for _, d := range framescan.Compare(f.Name, sc, read, unread) {
		t.Error(d)
	}
}

// TestAccountingShapes reads one file of each shape the issue names and
// checks the reading against the independent framing.
func TestAccountingShapes(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for _, arc := range []bool{false, true} {
		for _, layout := range []string{"plain", "member", "multi", "stream"} {
			f := warcgen.Case(rng, arc, layout, 12, true)
			checkAccounting(t, f, readAccounted(t, f.Name, f.Data, true))
		}
	}
}

// TestAccountingProperty: random valid WARC and ARC files in every layout,
// with random damage; for each, records read + spans reported cover every
// byte, no good record is lost, and the second framing agrees. Bounded
// iterations, fixed seed.
func TestAccountingProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(2026))
	for it := range 300 {
		arc := it%2 == 1
		layout := []string{"plain", "member", "multi", "stream"}[it/2%4]
		f := warcgen.Case(rng, arc, layout, 3+rng.Intn(15), it%8 != 0)
		f.Name = fmt.Sprintf("%s#%d", f.Name, it)
		checkAccounting(t, f, readAccounted(t, f.Name, f.Data, it%3 != 2))
		if t.Failed() {
			return
		}
	}
}

// TestARCLengthOverrunsEOFKept: an LF-only ARC file whose last record
// declares a few bytes more than the file holds (its HTTP message whole)
// is read with that record kept, marked truncated, every byte accounted;
// plain and as one gzip stream. A record whose Archive-length is short
// does not swallow the next header line, and one whose length is long
// stops at the next header line.
func TestARCLengthOverrunsEOFKept(t *testing.T) {
	fd := warcgen.Filedesc()
	a := warcgen.ARCRecord(1, "first body")
	long := warcgen.SetDeclared(warcgen.ARCRecord(2, "second body"), true, 40)
	short := warcgen.SetDeclared(warcgen.ARCRecord(3, "third body"), true, -5)
	last := warcgen.SetDeclared(warcgen.ARCRecord(4, "last body"), true, 3)
	var plain []byte
	for _, r := range []warcgen.Rec{fd, a, long, short, last} {
		plain = append(plain, r.B...)
	}
	for _, data := range [][]byte{plain, warcgen.Gzip(plain)} {
		rd := readAccounted(t, "overrun.arc", data, true)
		if len(rd.errs) != 0 || len(rd.spans) != 0 {
			t.Errorf("errors %v spans %v", rd.errs, rd.spans)
		}
		if len(rd.recs) != 5 {
			t.Fatalf("%d records, want 5", len(rd.recs))
		}
		for i, want := range []string{"", "", "length", "", "length"} {
			if rd.recs[i].Truncated != want {
				t.Errorf("record %d (%s): Truncated %q, want %q (%v)", i, rd.recs[i].TargetURI, rd.recs[i].Truncated, want, rd.recs[i].Anomalies)
			}
			if h := rd.recs[i].HTTP; i > 0 && (h == nil || h.Status != 200) {
				t.Errorf("record %d: HTTP message not read whole", i)
			}
		}
		f := warcgen.File{Name: "overrun.arc", Data: data, Good: map[string]bool{}, Layout: "plain"}
		if data[0] == 0x1f {
			f.Layout = "stream"
		}
		for _, r := range []warcgen.Rec{fd, a, long, short, last} {
			f.Good[r.Key] = true
		}
		checkAccounting(t, f, rd)
	}
}

// TestARCDamagedHeaderEndsSharedMember: a gzip member holding a filedesc
// and, last, a record whose header line is damaged (found by the command
// property test): the filedesc keeps its Archive-length and the damaged
// record is a span of its own, not swallowed into the filedesc's block.
func TestARCDamagedHeaderEndsSharedMember(t *testing.T) {
	fd := warcgen.Filedesc()
	bad := warcgen.ARCRecord(1, "damaged header")
	bad.B = bytes.Replace(bad.B, []byte(" 20240506070809 "), []byte(" 2024O506070809 "), 1)
	good := warcgen.ARCRecord(2, "good body")
	data := append(warcgen.Gzip(append(append([]byte{}, fd.B...), bad.B...)), warcgen.Gzip(good.B)...)
	rd := readAccounted(t, "shared.arc.gz", data, true)
	if len(rd.recs) != 2 || rd.recs[0].ContentLength != rd.recs[0].ARC.Length || len(rd.spans) != 1 || len(rd.errs) != 1 {
		t.Fatalf("records %d (filedesc block %d), spans %v, errors %v", len(rd.recs), rd.recs[0].ContentLength, rd.spans, rd.errs)
	}
	f := warcgen.File{Name: "shared.arc.gz", Data: data, Good: map[string]bool{fd.Key: true, good.Key: true}, Layout: "multi"}
	checkAccounting(t, f, rd)
}
