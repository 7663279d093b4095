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
)

// A generated test file: its stored bytes, and what a correct reading of
// it finds.
type genFile struct {
	name   string
	data   []byte
	keys   []string        // every record written, in order (framescan.Record.Key form)
	good   map[string]bool // records no damage touched: never lost
	rawBad bool            // stored (gzip) bytes damaged: data offsets are not comparable
	layout string
}

type genRec struct {
	key  string
	b    []byte
	good bool
}

const genDate = "2024-05-06T07:08:09Z"

func genWARCRecord(i int, body string) genRec {
	id := fmt.Sprintf("<urn:uuid:00000000-0000-0000-0000-%012d>", i)
	block := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	head := fmt.Sprintf("WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: %s\r\nWARC-Target-URI: http://example.org/%d\r\nWARC-Date: %s\r\nContent-Type: application/http;msgtype=response\r\nContent-Length: %d\r\n\r\n", id, i, genDate, len(block))
	return genRec{key: "id " + id, b: []byte(head + block + "\r\n\r\n"), good: true}
}

func genARCRecord(i int, body string) genRec {
	block := "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	url := fmt.Sprintf("http://example.org/%d", i)
	return genRec{key: "uri " + url + " 20240506070809", b: []byte(fmt.Sprintf("%s 10.0.0.1 20240506070809 text/plain %d\n%s\n", url, len(block), block)), good: true}
}

func genFiledesc() genRec {
	fd := "1 0 Wayside\nURL IP-address Archive-date Content-type Archive-length\n"
	return genRec{key: "uri filedesc://gen.arc 20240506070809", b: []byte(fmt.Sprintf("filedesc://gen.arc 0.0.0.0 20240506070809 text/plain %d\n%s\n", len(fd), fd)), good: true}
}

// genBody is a payload of n random printable bytes, some lines long.
func genBody(rng *rand.Rand, n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789 <>/=\n"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rng.Intn(len(chars))]
	}
	return string(b)
}

// setDeclared replaces the declared length of a generated record.
func setDeclared(r genRec, arc bool, delta int) genRec {
	s := string(r.b)
	if arc {
		nl := strings.IndexByte(s, '\n')
		line := s[:nl]
		sp := strings.LastIndexByte(line, ' ')
		var n int
		fmt.Sscan(line[sp+1:], &n)
		r.b = []byte(line[:sp+1] + fmt.Sprint(n+delta) + s[nl:])
		return r
	}
	i := strings.Index(s, "Content-Length: ")
	j := i + strings.Index(s[i:], "\r\n")
	var n int
	fmt.Sscan(s[i+len("Content-Length: "):j], &n)
	r.b = []byte(s[:i] + "Content-Length: " + fmt.Sprint(n+delta) + s[j:])
	return r
}

func gzipBytes(b []byte) []byte {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// damage kinds
const (
	dmgNone = iota
	dmgHeader
	dmgLong
	dmgShort
	dmgGarbage
	dmgNoLF // ARC only: no line feed after the record
	dmgCount
)

// genCase builds a file of n records in a layout ("plain", "member",
// "multi", "stream"), damaging some records.
func genCase(rng *rand.Rand, arc bool, layout string, n int, damage bool) genFile {
	var recs []genRec
	if arc {
		recs = append(recs, genFiledesc())
	} else {
		recs = append(recs, genWARCRecord(0, "warcinfo-like first record"))
	}
	for i := 1; i < n; i++ {
		if arc {
			recs = append(recs, genARCRecord(i, genBody(rng, 1+rng.Intn(3000))))
		} else {
			recs = append(recs, genWARCRecord(i, genBody(rng, 1+rng.Intn(3000))))
		}
	}
	if damage {
		// Damage records that are not adjacent, never the first.
		for i := 1; i < len(recs)-1; i += 2 + rng.Intn(3) {
			switch rng.Intn(dmgCount) {
			case dmgHeader:
				if arc {
					recs[i].b = bytes.Replace(recs[i].b, []byte(" 20240506070809 "), []byte(" 2024O506070809 "), 1)
				} else {
					recs[i].b = bytes.Replace(recs[i].b, []byte("WARC/1.0"), []byte("WARX/1.0"), 1)
				}
				recs[i].good = false
			case dmgLong:
				recs[i] = setDeclared(recs[i], arc, 1+rng.Intn(len(recs[i+1].b)/2))
				recs[i].good = false
			case dmgShort:
				recs[i] = setDeclared(recs[i], arc, -1-rng.Intn(20))
				recs[i].good = false
			case dmgGarbage:
				g := []byte("\x01garbage " + genBody(rng, 10+rng.Intn(200)) + "\n")
				recs[i].b = append(recs[i].b, g...)
				recs[i].good = false
			case dmgNoLF:
				if arc {
					recs[i].b = bytes.TrimSuffix(recs[i].b, []byte("\n"))
				}
			}
		}
	}
	f := genFile{good: map[string]bool{}, layout: layout, name: fmt.Sprintf("gen-%v-%s", arc, layout)}
	for _, r := range recs {
		f.keys = append(f.keys, r.key)
		if r.good {
			f.good[r.key] = true
		}
	}
	switch layout {
	case "plain":
		for _, r := range recs {
			f.data = append(f.data, r.b...)
		}
	case "member":
		for _, r := range recs {
			f.data = append(f.data, gzipBytes(r.b)...)
		}
	case "multi":
		for i := 0; i < len(recs); {
			k := 1 + rng.Intn(4)
			var m []byte
			for j := i; j < i+k && j < len(recs); j++ {
				m = append(m, recs[j].b...)
			}
			f.data = append(f.data, gzipBytes(m)...)
			i += k
		}
	case "stream":
		var all []byte
		for _, r := range recs {
			all = append(all, r.b...)
		}
		f.data = gzipBytes(all)
	}
	if !damage {
		return f
	}
	switch rng.Intn(4) {
	case 0: // stored bytes damaged in the middle of a gzip member
		if layout != "member" || len(recs) < 4 {
			break
		}
		k := 1 + rng.Intn(len(recs)-2)
		off := 0
		for _, r := range recs[:k] {
			off += len(gzipBytes(r.b))
		}
		m := len(gzipBytes(recs[k].b))
		for i := off + m/3; i < off+m/3+8 && i < off+m-8; i++ {
			f.data[i] ^= 0x55
		}
		delete(f.good, recs[k].key)
		f.rawBad = true
	case 1: // cut at the end
		cut := 1 + rng.Intn(len(recs[len(recs)-1].b)/2)
		if layout != "plain" {
			cut = 1 + rng.Intn(20)
		}
		f.data = f.data[:len(f.data)-cut]
		delete(f.good, recs[len(recs)-1].key)
		if layout == "stream" || layout == "multi" {
			// the last member's records are all in the cut member
			for _, r := range recs[max(0, len(recs)-4):] {
				delete(f.good, r.key)
			}
		}
	}
	return f
}

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
func checkAccounting(t *testing.T, f genFile, rd reading) {
	t.Helper()
	got := map[string]int{}
	for _, rec := range rd.recs {
		got[recKey(rec)]++
	}
	for k := range f.good {
		if got[k] == 0 {
			t.Errorf("%s: good record %s lost (errors %v)", f.name, k, rd.errs)
		}
	}
	for k, n := range got {
		if n > 1 {
			t.Errorf("%s: record %s read %d times", f.name, k, n)
		}
	}
	if f.layout == "plain" || f.layout == "member" {
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
		checkTiling(t, f.name, "stored", f.data, iv)
	}
	plain := f.data
	if f.layout != "plain" {
		if f.rawBad {
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(f.data))
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
	checkTiling(t, f.name, "uncompressed", plain, iv)

	// The independent framing.
	sc, err := framescan.Scan(bytes.NewReader(f.data), int64(len(f.data)))
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
	for _, d := range framescan.Compare(f.name, sc, read, unread) {
		t.Error(d)
	}
}

// TestAccountingShapes reads one file of each shape the issue names and
// checks the reading against the independent framing.
func TestAccountingShapes(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for _, arc := range []bool{false, true} {
		for _, layout := range []string{"plain", "member", "multi", "stream"} {
			f := genCase(rng, arc, layout, 12, true)
			checkAccounting(t, f, readAccounted(t, f.name, f.data, true))
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
		f := genCase(rng, arc, layout, 3+rng.Intn(15), it%8 != 0)
		f.name = fmt.Sprintf("%s#%d", f.name, it)
		checkAccounting(t, f, readAccounted(t, f.name, f.data, it%3 != 2))
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
	fd := genFiledesc()
	a := genARCRecord(1, "first body")
	long := setDeclared(genARCRecord(2, "second body"), true, 40)
	short := setDeclared(genARCRecord(3, "third body"), true, -5)
	last := setDeclared(genARCRecord(4, "last body"), true, 3)
	var plain []byte
	for _, r := range []genRec{fd, a, long, short, last} {
		plain = append(plain, r.b...)
	}
	for _, data := range [][]byte{plain, gzipBytes(plain)} {
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
		f := genFile{name: "overrun.arc", data: data, good: map[string]bool{}, layout: "plain"}
		if data[0] == 0x1f {
			f.layout = "stream"
		}
		for _, r := range []genRec{fd, a, long, short, last} {
			f.good[r.key] = true
		}
		checkAccounting(t, f, rd)
	}
}
