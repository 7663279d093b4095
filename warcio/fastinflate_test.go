//go:build cgo

package warcio

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/internal/warcgen"
)

// eventTap records what a MemberTap sees: member openings and ends, and
// a digest of the bytes of each member (how they were split into writes
// is the inflater's affair).
type eventTap struct {
	ev []string
	h  hash.Hash
	n  int64
}

func (e *eventTap) Member(off int64) {
	e.h, e.n = sha256.New(), 0
	e.ev = append(e.ev, fmt.Sprintf("member %d", off))
}

func (e *eventTap) Write(p []byte) {
	e.h.Write(p)
	e.n += int64(len(p))
}

func (e *eventTap) End(off, n int64, complete bool) {
	e.ev = append(e.ev, fmt.Sprintf("end %d %d %v: %d bytes %x", off, n, complete, e.n, e.h.Sum(nil)))
}

// fastRun is everything a reading gave: per call to Next the record (or
// error) and the reader's offsets after it, the spans, the Tap's events.
type fastRun struct {
	Steps  []string
	Recs   []Record
	Spans  []Span
	Tap    []string
	Served int
}

// readFastOrSlow reads data from memory (as Options.Map does) or through
// the reader's buffer (buffered), with the fast path on or off.
func readFastOrSlow(t *testing.T, data []byte, name string, buffered, slow bool) fastRun {
	return readFastOrSlowFrom(t, data, name, buffered, false, slow)
}

// readFastOrSlowFrom is readFastOrSlow; stream: data is read as a stream
// (no size, no seeking: a pipe).
func readFastOrSlowFrom(t *testing.T, data []byte, name string, buffered, stream, slow bool) fastRun {
	t.Helper()
	var run fastRun
	tap := &eventTap{}
	opts := Options{KeepHTTPHead: true, BlockDigest: true, KeepPayload: 64, Tap: tap, slowInflate: slow,
		OnSpan: func(s Span) { run.Spans = append(run.Spans, s) }}
	r := newMemReader(data, name, opts)
	if buffered {
		r = NewReader(bytes.NewReader(data), name, opts)
	}
	if stream {
		r = NewReader(struct{ io.Reader }{bytes.NewReader(data)}, name, opts)
	}
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatalf("%s: reader does not end", name)
		}
		rec, err := r.Next()
		if err == io.EOF {
			run.Steps = append(run.Steps, fmt.Sprintf("EOF at %d/%d", r.Offset(), r.DataOffset()))
			break
		}
		if err != nil {
			run.Steps = append(run.Steps, fmt.Sprintf("error %v, then at %d/%d", err, r.Offset(), r.DataOffset()))
			continue
		}
		run.Recs = append(run.Recs, *rec)
		run.Steps = append(run.Steps, fmt.Sprintf("record %d+%d, then at %d/%d", rec.Offset, rec.Length, r.Offset(), r.DataOffset()))
	}
	run.Tap = tap.ev
	if r.fast != nil {
		run.Served = r.fast.served
	}
	r.Close()
	return run
}

// checkFastSameAsSlow fails unless the fast path reads data exactly as
// the gzip reader does, from memory and through the reader's buffer, and
// returns the members the fast path served (in memory, buffered).
func checkFastSameAsSlow(t *testing.T, data []byte, name string) (int, int) {
	t.Helper()
	mem := checkFastSameAsSlowMode(t, data, name, false)
	buf := checkFastSameAsSlowMode(t, data, name+" (buffered)", true)
	return mem, buf
}

func checkFastSameAsSlowMode(t *testing.T, data []byte, name string, buffered bool) int {
	t.Helper()
	slow := readFastOrSlow(t, data, name, buffered, true)
	fast := readFastOrSlow(t, data, name, buffered, false)
	if slow.Served != 0 {
		t.Fatalf("%s: the fast path served %d members with it turned off", name, slow.Served)
	}
	if !reflect.DeepEqual(fast.Steps, slow.Steps) {
		t.Fatalf("%s: fast path read differently:\nfast %q\nslow %q", name, fast.Steps, slow.Steps)
	}
	if !reflect.DeepEqual(fast.Recs, slow.Recs) {
		for i := range fast.Recs {
			if !reflect.DeepEqual(fast.Recs[i], slow.Recs[i]) {
				t.Fatalf("%s: record %d differs:\nfast %+v\nslow %+v", name, i, fast.Recs[i], slow.Recs[i])
			}
		}
	}
	if !reflect.DeepEqual(fast.Spans, slow.Spans) {
		t.Fatalf("%s: spans differ:\nfast %+v\nslow %+v", name, fast.Spans, slow.Spans)
	}
	if !reflect.DeepEqual(fast.Tap, slow.Tap) {
		t.Fatalf("%s: Tap saw differently:\nfast %q\nslow %q", name, fast.Tap, slow.Tap)
	}
	return fast.Served
}

// generatedCases returns warcgen.Cases (every layout, WARC and ARC, sound
// and damaged, some with random stored damage on top) and concatenations
// of two of them.
func generatedCases() map[string][]byte {
	cases := map[string][]byte{}
	var prev []byte
	for it, c := range warcgen.Cases(27, 96) {
		cases[c.Name] = c.Data
		if it%7 == 6 {
			cases[c.Name+"+previous"] = append(append([]byte(nil), prev...), c.Data...)
		}
		prev = c.Data
	}
	return cases
}

// TestFastInflateSameAsSlow: over every file of the shared corpus (WARC
// and ARC) and warcgen's layouts and damage, reading with libdeflate's
// fast path gives exactly what the gzip reader gives: the same records
// (offsets, stored lengths, payload and block digests, anomalies), the
// same errors, spans and reader offsets, and the same members, bytes and
// stored lengths seen by Options.Tap; and the fast path does serve the
// members of the compressed files.
func TestFastInflateSameAsSlow(t *testing.T) {
	if !fastAvailable {
		t.Fatal("libdeflate is not built in: this test needs cgo")
	}
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		mem, buf := checkFastSameAsSlow(t, data, filepath.Base(path))
		if gz := len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b; gz && (mem == 0 || buf == 0) {
			t.Errorf("%s: the fast path served %d members in memory, %d buffered", filepath.Base(path), mem, buf)
		}
	}
	var mem, buf int
	for name, data := range generatedCases() {
		m, b := checkFastSameAsSlow(t, data, name)
		mem, buf = mem+m, buf+b
	}
	if mem < 300 || buf < 300 {
		t.Errorf("the fast path served only %d members of the generated files in memory, %d buffered", mem, buf)
	}
}

// gzipLevel compresses b as one gzip member at level.
func gzipLevel(t *testing.T, b []byte, level int) []byte {
	t.Helper()
	var z bytes.Buffer
	zw, err := kgzip.NewWriterLevel(&z, level)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// TestFastInflateLimits: a member inflating to more than the buffer's cap
// (compressible: found by its trailer's ISIZE; incompressible: stored
// bytes past the copy's cap too) is read by the gzip reader, right; one
// just under the cap takes the fast path; a member whose stored bytes
// hold the gzip magic (so its end is first guessed wrong) is still served
// by the fast path, on its second try.
func TestFastInflateLimits(t *testing.T) {
	if !fastAvailable {
		t.Fatal("libdeflate is not built in: this test needs cgo")
	}
	rng := rand.New(rand.NewSource(5))
	random := func(n int) string {
		b := make([]byte, n)
		rng.Read(b)
		return string(b)
	}
	over := strings.Repeat("compressible ", fastOutCap/13+1000)
	cases := []struct {
		name  string
		recs  []warcgen.Rec
		level int
		// members served by the fast path, in memory and buffered (a
		// member stored larger than the reader's buffer is not)
		want, wantBuf int
	}{
		{"compressible over the cap", []warcgen.Rec{warcgen.WARCRecord(1, "small"), warcgen.WARCRecord(2, over), warcgen.WARCRecord(3, "after")}, kgzip.DefaultCompression, 2, 2},
		{"incompressible over the cap", []warcgen.Rec{warcgen.WARCRecord(1, random(fastOutCap+100)), warcgen.WARCRecord(2, "after")}, kgzip.BestSpeed, 1, 1},
		{"just under the cap", []warcgen.Rec{warcgen.WARCRecord(1, random(fastOutCap-4096)), warcgen.WARCRecord(2, "after")}, kgzip.BestSpeed, 2, 1},
		{"the magic inside a member", []warcgen.Rec{warcgen.WARCRecord(1, "x\x1f\x8b\x08\xff y"), warcgen.WARCRecord(2, "after\x1f\x8b\x08")}, kgzip.NoCompression, 2, 2},
		// A false match followed by what looks like a gzip header, with
		// a small "ISIZE" before it: tried there, failed, tried again.
		{"a header-like magic inside a member", []warcgen.Rec{warcgen.WARCRecord(1, "x\x00\x00\x00\x00\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03 y"), warcgen.WARCRecord(2, "after")}, kgzip.NoCompression, 2, 2},
	}
	for _, c := range cases {
		var data []byte
		for _, r := range c.recs {
			data = append(data, gzipLevel(t, r.B, c.level)...)
		}
		if mem, buf := checkFastSameAsSlow(t, data, c.name); mem != c.want || buf != c.wantBuf {
			t.Errorf("%s: the fast path served %d members in memory, %d buffered, want %d and %d", c.name, mem, buf, c.want, c.wantBuf)
		}
		fast := readFastOrSlow(t, data, c.name, false, false)
		if len(fast.Recs) != len(c.recs) || len(fast.Steps) != len(c.recs)+1 {
			t.Fatalf("%s: %q", c.name, fast.Steps)
		}
		for i, rec := range fast.Recs {
			if want := "id " + rec.RecordID; want != c.recs[i].Key || rec.PayloadDigest == "" {
				t.Errorf("%s: record %d is %s (payload %s), want %s", c.name, i, rec.RecordID, rec.PayloadDigest, c.recs[i].Key)
			}
		}
	}
}

// TestFastInflateBufferEdges: through the reader's buffer (1 MiB), members
// that straddle its end (the buffer is filled once more for them), one
// larger than it (read by the gzip reader) and a file cut in its last
// member read as without the fast path, which serves all the others.
func TestFastInflateBufferEdges(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	var data []byte
	n := 0
	for i := 0; len(data) < 3*rawBufSize; i++ {
		size := 1 + rng.Intn(60_000)
		if i == 20 {
			size = rawBufSize + 1000 // stored larger than the buffer
		}
		body := make([]byte, size)
		rng.Read(body)
		data = append(data, warcgen.Gzip(warcgen.WARCRecord(i, string(body)).B)...)
		n++
	}
	if _, buf := checkFastSameAsSlow(t, data, "straddling"); buf != n-1 {
		t.Errorf("buffered: the fast path served %d of %d members, want all but the one larger than the buffer", buf, n)
	}
	// A stream (a pipe) is not read ahead for a member: only members
	// already in the buffer take the fast path.
	slow := readFastOrSlowFrom(t, data, "stream", true, true, true)
	fast := readFastOrSlowFrom(t, data, "stream", true, true, false)
	if !reflect.DeepEqual(fast.Steps, slow.Steps) || !reflect.DeepEqual(fast.Recs, slow.Recs) || !reflect.DeepEqual(fast.Tap, slow.Tap) {
		t.Fatalf("stream: the fast path read differently:\nfast %q\nslow %q", fast.Steps, slow.Steps)
	}
	if fast.Served == 0 || fast.Served >= n-1 {
		t.Errorf("stream: the fast path served %d of %d members, want some but not those straddling the buffer's end", fast.Served, n)
	}
	cut := data[:len(data)-7]
	if _, buf := checkFastSameAsSlow(t, cut, "cut"); buf != n-2 {
		t.Errorf("cut file, buffered: the fast path served %d of %d members, want all but the large and the cut one", buf, n)
	}
}

// TestFastInflateClose: Close releases the fast path's buffers; the
// reader then reads nothing more.
func TestFastInflateClose(t *testing.T) {
	data := warcgen.Gzip(warcgen.WARCRecord(1, "one").B)
	data = append(data, warcgen.Gzip(warcgen.WARCRecord(2, "two").B)...)
	r := newMemReader(data, "x", Options{})
	if _, err := r.Next(); err != nil || r.fast == nil || r.fast.served != 1 {
		t.Fatalf("first record: %v (fast path %+v)", err, r.fast)
	}
	if err := r.Close(); err != nil || r.fast != nil {
		t.Fatalf("Close: %v, fast path %+v", err, r.fast)
	}
	if rec, err := r.Next(); err != io.EOF {
		t.Fatalf("after Close: %+v, %v, want io.EOF", rec, err)
	}
}

// TestFastInflateTruncatedMapping: a mapped file cut under the reader
// exactly at the end of a member that ends on a page boundary (the fast
// path reads a few bytes past a member to find its end, and faults there)
// or inside a member reads with the fast path as with the gzip reader:
// the same records, then the same ErrFault at the same offset; no crash.
func TestFastInflateTruncatedMapping(t *testing.T) {
	const page = 4096
	a := warcgen.Gzip(warcgen.WARCRecord(1, "first").B)
	rec2 := warcgen.WARCRecord(2, strings.Repeat("second ", 200)).B
	member := func(extra int) []byte {
		var z bytes.Buffer
		zw, _ := kgzip.NewWriterLevel(&z, kgzip.BestSpeed)
		if extra > 0 {
			zw.Extra = make([]byte, extra)
		}
		zw.Write(rec2)
		zw.Close()
		return z.Bytes()
	}
	// Pad member b (with a gzip extra field) to end at 2 pages.
	b := member(2*page - len(a) - len(member(0)) - 2)
	var data []byte
	data = append(append(data, a...), b...)
	if len(data) != 2*page {
		t.Fatalf("members end at %d, want %d", len(data), 2*page)
	}
	for i := 3; len(data) < 6*page; i++ {
		data = append(data, warcgen.Gzip(warcgen.WARCRecord(i, Body(i)).B)...)
	}
	path := filepath.Join(t.TempDir(), "x.warc.gz") // the same name in both runs' errors
	for _, cut := range []int64{2 * page, 4 * page} {
		var runs [2][]string
		for i, slow := range []bool{true, false} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path, Options{Map: true, slowInflate: slow})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			var steps []string
			for k := 0; k < 100000; k++ {
				rec, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					steps = append(steps, "error "+err.Error())
					continue
				}
				steps = append(steps, fmt.Sprintf("record %d+%d", rec.Offset, rec.Length))
			}
			r.Close()
			runs[i] = steps
			if len(steps) < 2 || !strings.Contains(steps[len(steps)-1], "mapped file could not be read") {
				t.Fatalf("cut at %d (slow %v): want records then a fault: %q", cut, slow, steps)
			}
		}
		if !reflect.DeepEqual(runs[0], runs[1]) {
			t.Fatalf("cut at %d: fast path %q, gzip reader %q", cut, runs[1], runs[0])
		}
		t.Logf("cut at %d: %q", cut, runs[1])
	}
}

// Body is a record body of a few hundred varied bytes.
func Body(i int) string {
	return strings.Repeat(fmt.Sprintf("line %d of a body\n", i), 20+i%30)
}
