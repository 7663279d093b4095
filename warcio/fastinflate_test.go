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
	// Fills and Win: the fast path's window fills and size (a mapped
	// file).
	Fills, Win int
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
	return readRun(t, r, name, &run, tap, nil)
}

// readFastOrSlowOpen reads the file at path as Open does it, mapped
// (Options.Map) or not, with the fast path's window of win bytes (0: the
// default); change, when set, is called after the reader is opened and
// after each call to Next with how many calls were made (it may cut or
// grow the file).
func readFastOrSlowOpen(t *testing.T, path string, mapped bool, win int, slow bool, change func(calls int)) fastRun {
	t.Helper()
	var run fastRun
	tap := &eventTap{}
	opts := Options{KeepHTTPHead: true, BlockDigest: true, KeepPayload: 64, Tap: tap, slowInflate: slow,
		OnSpan: func(s Span) { run.Spans = append(run.Spans, s) }, Map: mapped, fastWindow: win}
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(0)
	}
	run = readRun(t, r, path, &run, tap, change)
	if mapped && win > 0 && run.Fills > 0 && run.Win != win {
		t.Fatalf("%s: window of %d bytes, want %d", path, run.Win, win)
	}
	return run
}

// readRun reads r to its end (closing it) into *run, calling after (when
// set) after each call to Next.
func readRun(t *testing.T, r *Reader, name string, run *fastRun, tap *eventTap, after func(calls int)) fastRun {
	t.Helper()
	for i := 0; ; i++ {
		if after != nil && i > 0 {
			after(i)
		}
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
		run.Served, run.Fills, run.Win = r.fast.served, r.fast.fills, len(r.fast.win)
	}
	r.Close()
	return *run
}

// smallWindow is the fast path's window in tests of its edges: most
// members of the generated files straddle its end, some are larger.
const smallWindow = 1500

// checkFastSameAsSlow fails unless the fast path reads data exactly as
// the gzip reader does, from memory, through the reader's buffer and
// from a mapped file (with the default window and a small one), and
// returns the members the fast path served (in memory, buffered). From
// a mapped file with the default window it serves what it serves from
// memory.
func checkFastSameAsSlow(t *testing.T, data []byte, name string) (int, int) {
	t.Helper()
	mem := checkFastSameAsSlowMode(t, data, name, false)
	buf := checkFastSameAsSlowMode(t, data, name+" (buffered)", true)
	path := filepath.Join(t.TempDir(), "x.warc.gz")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, win := range []int{0, smallWindow} {
		slow := readFastOrSlowOpen(t, path, true, win, true, nil)
		fast := readFastOrSlowOpen(t, path, true, win, false, nil)
		fileName := fmt.Sprintf("%s (mapped file, window %d)", name, win)
		sameRuns(t, fileName, fast, slow)
		if win == 0 && fast.Served != mem {
			t.Fatalf("%s: the fast path served %d members, %d from memory", fileName, fast.Served, mem)
		}
	}
	return mem, buf
}

func checkFastSameAsSlowMode(t *testing.T, data []byte, name string, buffered bool) int {
	t.Helper()
	slow := readFastOrSlow(t, data, name, buffered, true)
	fast := readFastOrSlow(t, data, name, buffered, false)
	sameRuns(t, name, fast, slow)
	return fast.Served
}

// sameRuns fails unless fast (a reading with the fast path) gave what
// slow (without it) gave.
func sameRuns(t *testing.T, name string, fast, slow fastRun) {
	t.Helper()
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
// (compressible; incompressible: its stored bytes over the output cap
// too) is read by the gzip reader, right; one just under the cap takes
// the fast path; a member whose stored bytes hold the gzip magic (even
// followed by what looks like a gzip header) is served by the fast path
// (libdeflate finds the member's end; nothing looks for the magic).
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
// exactly at the end of a member that ends on a page boundary, or inside
// a member, reads with the fast path as with the gzip reader — with the
// default window (filled before the cut: the members after it are caught
// by the check of their trailer against the mapping) and a small one
// (filled after it: cut short) — the same records, then the same
// ErrFault at the same offset; no crash.
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
	for _, c := range []struct{ cut, win int64 }{{2 * page, 0}, {4 * page, 0}, {2 * page, smallWindow}, {4 * page, smallWindow}} {
		cut := c.cut
		var runs [2][]string
		for i, slow := range []bool{true, false} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path, Options{Map: true, slowInflate: slow, fastWindow: int(c.win)})
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
				t.Fatalf("cut at %d, window %d (slow %v): want records then a fault: %q", cut, c.win, slow, steps)
			}
		}
		if !reflect.DeepEqual(runs[0], runs[1]) {
			t.Fatalf("cut at %d, window %d: fast path %q, gzip reader %q", cut, c.win, runs[1], runs[0])
		}
		t.Logf("cut at %d, window %d: %q", cut, c.win, runs[1])
	}
}

// Body is a record body of a few hundred varied bytes.
func Body(i int) string {
	return strings.Repeat(fmt.Sprintf("line %d of a body\n", i), 20+i%30)
}

// randomMembers returns n gzip members, one WARC record each, with
// incompressible bodies of 1 to maxBody bytes (so a member's stored
// length is about its body's), and the members' ends.
func randomMembers(rng *rand.Rand, n, maxBody int) ([]byte, []int) {
	var data []byte
	var ends []int
	for i := range n {
		body := make([]byte, 1+rng.Intn(maxBody))
		rng.Read(body)
		data = append(data, warcgen.Gzip(warcgen.WARCRecord(i, string(body)).B)...)
		ends = append(ends, len(data))
	}
	return data, ends
}

// TestFastInflateWindow: from a mapped file, through a window smaller
// than many members (one ends exactly at the first window's end, some
// straddle its later ends, some are larger than it, the last ends the
// file), the fast path reads as the gzip reader does, serving exactly
// the members no larger than the window (a straddling one after filling
// the window again from its first byte); with the default window it
// serves every member, filling the window once, and a member larger than
// the window's usual fill after filling it with more.
func TestFastInflateWindow(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	data, ends := randomMembers(rng, 60, 12_000)
	var win int // a member ends where the first window does
	for _, e := range ends {
		if e >= 7000 {
			win = e
			break
		}
	}
	fits := 0
	for i, end := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		if end-start <= win {
			fits++
		}
	}
	if fits == len(ends) || fits < len(ends)/2 {
		t.Fatalf("%d of %d members fit a window of %d: want most but not all", fits, len(ends), win)
	}
	path := filepath.Join(t.TempDir(), "w.warc.gz")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	slow := readFastOrSlowOpen(t, path, true, win, true, nil)
	fast := readFastOrSlowOpen(t, path, true, win, false, nil)
	sameRuns(t, "small window", fast, slow)
	if len(fast.Recs) != len(ends) || fast.Served != fits || fast.Fills < len(data)/win {
		t.Fatalf("small window: %d records, %d members served (want %d), %d fills", len(fast.Recs), fast.Served, fits, fast.Fills)
	}
	fast = readFastOrSlowOpen(t, path, true, 0, false, nil)
	sameRuns(t, "default window", fast, slow)
	if fast.Served != len(ends) || fast.Fills != 1 {
		t.Fatalf("default window: %d of %d members served, %d fills", fast.Served, len(ends), fast.Fills)
	}
	// A member larger than the window's usual fill, straddling its end:
	// filled again from its first byte, as usual (still too short), then
	// with all the window holds.
	big := make([]byte, fastFill+fastFill/2)
	rng.Read(big)
	data = append(data, warcgen.Gzip(warcgen.WARCRecord(len(ends), string(big)).B)...)
	more, _ := randomMembers(rng, 20, 12_000)
	data = append(data, more...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	slow = readFastOrSlowOpen(t, path, true, 0, true, nil)
	fast = readFastOrSlowOpen(t, path, true, 0, false, nil)
	sameRuns(t, "a large member", fast, slow)
	if n := len(ends) + 1 + 20; len(fast.Recs) != n || fast.Served != n || fast.Fills != 3 {
		t.Fatalf("a large member: %d records, %d served (want %d), %d fills (want 3)", len(fast.Recs), fast.Served, n, fast.Fills)
	}
}

// TestFastInflateFileChanges: a mapped file cut (at a page boundary, at a
// member's end, inside a member) before reading starts or after its first
// record, or grown after it was opened, reads with the fast path (small
// window and default) exactly as with the gzip reader: the same records,
// errors (ErrFault where a page is gone) and offsets.
func TestFastInflateFileChanges(t *testing.T) {
	const page = 4096
	rng := rand.New(rand.NewSource(41))
	data, ends := randomMembers(rng, 40, 1500)
	if len(data) < 8*page {
		t.Fatalf("%d bytes: want more than 8 pages", len(data))
	}
	var boundary int // a member's end past the first member and page 2
	for _, e := range ends {
		if e > 2*page+100 {
			boundary = e
			break
		}
	}
	path := filepath.Join(t.TempDir(), "c.warc.gz")
	cuts := []int{2 * page, 5 * page, boundary, boundary + 1, 5*page + 100, len(data) - 3}
	faults := 0
	for _, cut := range cuts {
		for _, when := range []int{0, 1} {
			for _, win := range []int{0, 2000} {
				runs := slowAndFastChanged(t, path, data, win, func(calls int) {
					if calls == when {
						if err := os.Truncate(path, int64(cut)); err != nil {
							t.Fatal(err)
						}
					}
				})
				name := fmt.Sprintf("cut at %d after %d records, window %d", cut, when, win)
				sameRuns(t, name, runs[1], runs[0])
				if runs[1].Served == 0 || len(runs[1].Recs) == 0 {
					t.Fatalf("%s: %d records, %d served: %q", name, len(runs[1].Recs), runs[1].Served, runs[1].Steps)
				}
				if last := runs[1].Steps[len(runs[1].Steps)-2]; strings.Contains(last, "mapped file could not be read") {
					faults++
				}
			}
		}
	}
	if faults == 0 {
		t.Fatal("no cut faulted: the cuts do not test the fault path")
	}
	// Grown after it was opened: only what was mapped is read.
	more, _ := randomMembers(rng, 5, 1500)
	for _, win := range []int{0, 2000} {
		runs := slowAndFastChanged(t, path, data, win, func(calls int) {
			if calls == 1 {
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(more)
				f.Close()
			}
		})
		sameRuns(t, fmt.Sprintf("grown, window %d", win), runs[1], runs[0])
		if len(runs[1].Recs) != len(ends) || runs[1].Served != len(ends) {
			t.Fatalf("grown, window %d: %d records, %d served, want %d", win, len(runs[1].Recs), runs[1].Served, len(ends))
		}
	}
}

// slowAndFastChanged writes data to path and reads it mapped (window of
// win bytes) without the fast path, then with it, calling change as
// readFastOrSlowOpen does.
func slowAndFastChanged(t *testing.T, path string, data []byte, win int, change func(calls int)) [2]fastRun {
	t.Helper()
	var runs [2]fastRun
	for i, slow := range []bool{true, false} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		runs[i] = readFastOrSlowOpen(t, path, true, win, slow, change)
	}
	return runs
}

// shortReader reads at most 777 bytes a call, as a file on a slow device
// or network file system may; it keeps bytes.Reader's Size and Seek, so
// the reader takes it for a file.
type shortReader struct{ *bytes.Reader }

func (s shortReader) Read(p []byte) (int, error) { return s.Reader.Read(p[:min(len(p), 777)]) }

// TestFastInflateShortReads: a buffered file whose reads return few bytes
// reads as with the gzip reader, every member served by the fast path
// (the buffer is filled again for a member not wholly in it).
func TestFastInflateShortReads(t *testing.T) {
	rng := rand.New(rand.NewSource(43))
	data, ends := randomMembers(rng, 300, 9000)
	var runs [2]fastRun
	for i, slow := range []bool{true, false} {
		var run fastRun
		tap := &eventTap{}
		opts := Options{KeepHTTPHead: true, BlockDigest: true, KeepPayload: 64, Tap: tap, slowInflate: slow,
			OnSpan: func(s Span) { run.Spans = append(run.Spans, s) }}
		runs[i] = readRun(t, NewReader(shortReader{bytes.NewReader(data)}, "short", opts), "short", &run, tap, nil)
	}
	sameRuns(t, "short reads", runs[1], runs[0])
	if len(runs[1].Recs) != len(ends) || runs[1].Served != len(ends) {
		t.Fatalf("short reads: %d records, %d served, want %d", len(runs[1].Recs), runs[1].Served, len(ends))
	}
}

// readCounter counts the reads of a file-like input (keeping
// bytes.Reader's Size and Seek).
type readCounter struct {
	*bytes.Reader
	n *int
}

func (c readCounter) Read(p []byte) (int, error) {
	*c.n++
	return c.Reader.Read(p)
}

// TestFastInflateDamagedNoRefill: a member that fails with the next
// member's header in the bytes at hand is damaged, not cut by their end:
// the fast path does not fill its window (mapped) or the reader's buffer
// (buffered) again for it — a file with a damaged member every few reads
// with as many fills and reads as the sound file, plus one — and reads
// as the gzip reader does.
func TestFastInflateDamagedNoRefill(t *testing.T) {
	rng := rand.New(rand.NewSource(47))
	sound, ends := randomMembers(rng, 1200, 9000)
	if len(sound) < 2*fastFill {
		t.Fatalf("%d bytes: want more than two window fills", len(sound))
	}
	bad := append([]byte(nil), sound...)
	for i := 1; i < len(ends); i += 3 {
		bad[(ends[i-1]+ends[i])/2] ^= 0x55
	}
	dir := t.TempDir()
	// fills: window fills; reads[file][slow]: reads of the buffered input.
	var fills [2]int
	var reads [2][2]int
	for i, data := range [][]byte{sound, bad} {
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		slow := readFastOrSlowOpen(t, path, true, 0, true, nil)
		fast := readFastOrSlowOpen(t, path, true, 0, false, nil)
		sameRuns(t, path, fast, slow)
		fills[i] = fast.Fills
		var runs [2]fastRun
		for k, slow := range []bool{false, true} {
			var run fastRun
			tap := &eventTap{}
			r := NewReader(readCounter{bytes.NewReader(data), &reads[i][k]}, path, Options{Tap: tap, slowInflate: slow})
			runs[k] = readRun(t, r, path, &run, tap, nil)
		}
		sameRuns(t, path+" (buffered)", runs[0], runs[1])
		if i == 1 && (len(runs[0].Recs) >= len(ends) || runs[0].Served == 0) {
			t.Fatalf("damaged, buffered: %d records, %d served", len(runs[0].Recs), runs[0].Served)
		}
	}
	// (The gzip reader itself reads a damaged file's buffer again where
	// it resynchronises.)
	if fills[1] > fills[0]+1 || reads[1][0]-reads[1][1] > reads[0][0]-reads[0][1]+1 {
		t.Fatalf("damaged members: %d window fills and %d reads (%d without the fast path), sound file %d and %d (%d)",
			fills[1], reads[1][0], reads[1][1], fills[0], reads[0][0], reads[0][1])
	}
	t.Logf("window fills %v, buffered reads %v", fills, reads)
}
