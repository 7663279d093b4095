package framescan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"

	"github.com/wayside-archive/wayside/internal/mapfile"
)

// Tap frames a file from the gzip members another reader inflates (it
// has the method set of warcio.MemberTap), proving every member it is
// given instead of trusting that reader, and frames on its own — its own
// member walk and inflater, as File does — every stretch not covered by
// a member so proved. Its Result is the one File gives (see the package
// doc for why). Member, Write and End are called from one goroutine, in
// file order; the framing runs in a goroutine of its own, fed through a
// bounded set of buffers. Finish (or Close) must be called.
type Tap struct {
	ev   chan *tapChunk
	free chan *tapChunk
	cur  *tapChunk // the chunk being filled
	done chan struct{}
	res  *Result
	err  error
	once sync.Once
	// abort stops the framing (Close before Finish).
	abort atomic.Bool
	// proved and refused count the members framed from the reader's
	// bytes and those left to the walk (set when the framing ends).
	proved, refused int
}

// Tap buffers: tapBufs chunks of tapBufSize bytes and up to tapEvents
// events bound what is held between the reader and the framing
// goroutine. Events go in batches (a chunk is passed when it is full, not
// per member), so that a file of many small members does not wake the
// goroutine for each one.
const (
	tapBufSize = 256 << 10
	tapBufs    = 4
	tapEvents  = 2048
)

// tapChunk is a batch of events; the data events' bytes lie in buf.
type tapChunk struct {
	buf    []byte
	events []tapEvent
}

type tapKind uint8

const (
	evMember tapKind = iota
	evData
	evEnd
)

type tapEvent struct {
	kind     tapKind
	off, n   int64
	complete bool
	data     []byte
}

// NewTap opens the file at path (mapped read-only, or read when it cannot
// be mapped) and starts framing it. A plain (uncompressed) file is
// framed directly, no member needed: the calls are then ignored.
//
// With emit set, the records are passed to it in file order as soon as
// they are decided (from the framing goroutine), instead of being held
// in Result.Records (left empty): memory then holds only the records
// whose declared end the framing has not passed yet (decided every 4 MiB
// of data inside a member or a plain file, and after every member).
func NewTap(path string, emit func(Record)) (*Tap, error) {
	return NewTapMapped(path, nil, emit)
}

// NewTapMapped is NewTap reading the file through m, a handle on a
// mapping of it (mapfile's Share) that the Tap closes when it is done,
// instead of mapping it again: the reader the Tap frames from can read
// the same mapping, so the file's pages are faulted in once for both.
// Only the kernel's bytes are shared: the Tap reads, inflates and frames
// them on its own. With m nil, or not of the file's size, the Tap maps
// the file itself.
func NewTapMapped(path string, m *mapfile.File, emit func(Record)) (*Tap, error) {
	f, err := os.Open(path)
	if err != nil {
		if m != nil {
			m.Close()
		}
		return nil, fmt.Errorf("framescan: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		if m != nil {
			m.Close()
		}
		return nil, fmt.Errorf("framescan: %w", err)
	}
	if m != nil && (!fi.Mode().IsRegular() || int64(len(m.Bytes())) != fi.Size()) {
		m.Close()
		m = nil
	}
	t := &Tap{ev: make(chan *tapChunk, tapBufs), free: make(chan *tapChunk, tapBufs), done: make(chan struct{})}
	for i := 0; i < tapBufs; i++ {
		t.free <- &tapChunk{buf: make([]byte, 0, tapBufSize), events: make([]tapEvent, 0, tapEvents)}
	}
	var merr error
	if m == nil {
		m, merr = mapfile.Map(f)
	}
	if merr != nil && !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("framescan: %w", merr)
	}
	go func() {
		defer close(t.done)
		defer f.Close()
		var src source
		if merr == nil {
			defer m.Close()
			src = &mappedSource{data: m.Bytes(), release: m.Release}
		} else {
			src = &readerAtSource{ra: f, n: fi.Size(), base: -1}
		}
		t.res, t.err = t.run(src, m, emit)
		if t.err != nil {
			t.res, t.err = nil, fmt.Errorf("framescan: %w", t.err)
		}
		// Let the reader go on (its calls are then ignored).
		for c := range t.ev {
			t.free <- c
		}
	}()
	return t, nil
}

// Member starts the member at stored offset off.
func (t *Tap) Member(off int64) {
	t.event(tapEvent{kind: evMember, off: off})
}

// Write passes decompressed bytes of the current member.
func (t *Tap) Write(p []byte) {
	for len(p) > 0 {
		c := t.chunk()
		if len(c.buf) == cap(c.buf) {
			t.flush()
			continue
		}
		start := len(c.buf)
		n := copy(c.buf[start:cap(c.buf)], p)
		c.buf, p = c.buf[:start+n], p[n:]
		if k := len(c.events) - 1; k >= 0 && c.events[k].kind == evData {
			e := &c.events[k]
			e.data = c.buf[len(c.buf)-len(e.data)-n:] // contiguous: extended
		} else {
			t.event(tapEvent{kind: evData, data: c.buf[start:]})
		}
	}
}

// End says the member at off stopped after compressedLen stored bytes,
// complete or not.
func (t *Tap) End(off, compressedLen int64, complete bool) {
	t.event(tapEvent{kind: evEnd, off: off, n: compressedLen, complete: complete})
}

func (t *Tap) chunk() *tapChunk {
	if t.cur == nil {
		t.cur = <-t.free
		t.cur.buf, t.cur.events = t.cur.buf[:0], t.cur.events[:0]
	}
	return t.cur
}

func (t *Tap) event(e tapEvent) {
	c := t.chunk()
	if len(c.events) == cap(c.events) {
		t.flush()
		c = t.chunk()
	}
	c.events = append(c.events, e)
}

func (t *Tap) flush() {
	if t.cur != nil {
		t.ev <- t.cur
		t.cur = nil
	}
}

// Finish frames what no proved member covered and returns the Result.
func (t *Tap) Finish() (*Result, error) {
	t.once.Do(func() {
		t.flush()
		close(t.ev)
	})
	<-t.done
	return t.res, t.err
}

// Members returns, after Finish, how many members the reader passed
// were proved and framed from its bytes, and how many were refused
// (left to the scan's own walk).
func (t *Tap) Members() (proved, refused int) {
	<-t.done
	return t.proved, t.refused
}

// Close stops the framing: what is left is not framed (after Finish, it
// does nothing).
func (t *Tap) Close() {
	select {
	case <-t.done:
	default:
		t.abort.Store(true)
	}
	t.Finish()
}

// tapFramer is the framing goroutine's state.
type tapFramer struct {
	t    *Tap
	w    *walker
	size int64
	// pos is the framing's cursor: every stored byte before it is framed
	// (by a proved member or by the walk); stopped says the walk stopped
	// (as File's does) and nothing more is framed.
	pos     int64
	stopped bool
	// peek is an event read but not yet handled; closed says the reader
	// finished; chunk is the batch being read, next its next event.
	peek    tapEvent
	hasPeek bool
	closed  bool
	chunk   *tapChunk
	next    int
	// fl and headBuf inflate the first bytes of a member for prove.
	fl      io.ReadCloser
	hi      headInflater
	headBuf [proveHead]byte
	headIn  [proveInput]byte
	// in reads the member being framed from the reader's bytes.
	in tapInput
	// scratch holds a member's gzip header or trailer for prove.
	scratch [10]byte
	// Tap statistics (for tests and measures).
	proved, refused int
}

// nextEvent returns the next event; the bytes of a data event it
// returned before are no longer used when it is called.
func (fr *tapFramer) nextEvent() (tapEvent, bool) {
	if fr.hasPeek {
		fr.hasPeek = false
		return fr.peek, true
	}
	for fr.chunk == nil || fr.next == len(fr.chunk.events) {
		if fr.chunk != nil {
			fr.t.free <- fr.chunk
			fr.chunk = nil
		}
		if fr.closed {
			return tapEvent{}, false
		}
		c, ok := <-fr.t.ev
		if !ok {
			fr.closed = true
			return tapEvent{}, false
		}
		fr.chunk, fr.next = c, 0
	}
	fr.next++
	return fr.chunk.events[fr.next-1], true
}

// run frames the file src reads (m: its mapping, nil when read).
func (t *Tap) run(src source, m *mapfile.File, emit func(Record)) (res *Result, err error) {
	if m != nil {
		defer mapfile.Recover(&err, mapfile.Guard(), m)
	}
	fr := &tapFramer{t: t, size: src.size()}
	defer func() { t.proved, t.refused = fr.proved, fr.refused }()
	defer func() {
		// Chunks still queued go back (the reader may wait for one).
		for {
			if _, ok := fr.nextEvent(); !ok {
				return
			}
		}
	}()
	res = &Result{}
	if fr.size >= 2 {
		var magic [2]byte
		if n, _ := io.ReadFull(src.at(0), magic[:]); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			res.Compressed = true
		}
	}
	s := &scanner{res: res, done: func() { src.done(src.pos()) }, emit: emit}
	if !res.Compressed {
		// A plain file needs no inflation: it is framed as File frames
		// it, whatever the reader reports.
		s.flushable = true
		if err := s.stream(src.at(0), 0); err != nil {
			return nil, err
		}
		res.DataBytes = s.data
		s.ends = append(s.ends, s.data)
		s.resolve()
		return res, nil
	}
	fr.w = &walker{src: src, s: s}
	for {
		e, ok := fr.nextEvent()
		if !ok {
			break
		}
		if e.kind != evMember {
			continue // data or end of a member not being framed
		}
		fr.member(e.off)
	}
	fr.walkTo(fr.size)
	res.DataBytes = s.data
	s.resolve()
	return res, nil
}

// walkTo frames the stored bytes from the cursor up to limit with the
// scan's own walk (a member found there may take the cursor past limit).
func (fr *tapFramer) walkTo(limit int64) {
	for !fr.stopped && fr.pos < limit && !fr.t.abort.Load() {
		fr.pos, fr.stopped = fr.w.step(fr.pos)
		fr.w.s.flush()
	}
	fr.w.src.done(fr.pos)
}

// member frames the member the reader opened at off from the bytes it
// passes, if the walk stands there, and keeps that framing only if the
// member is proved (see prove); otherwise the framing is undone and the
// member is left to the walk.
func (fr *tapFramer) member(off int64) {
	if off > fr.pos {
		fr.walkTo(off)
	}
	s := fr.w.s
	if fr.stopped || off != fr.pos {
		fr.refused++
		fr.skipMember()
		return
	}
	snap := s.snapshot()
	in := &fr.in // reused: a file of many small members would allocate one per member
	*in = tapInput{fr: fr}
	serr := s.streamSlices(in, off)
	if serr != nil {
		in.drain()
	}
	end := in.end
	if serr == nil && in.ended && end.off == off && end.complete && fr.prove(off, end.n, in.crc, in.count, in.head[:in.headN]) {
		fr.proved++
		s.res.Members++
		s.ends = append(s.ends, s.data)
		fr.pos = off + end.n
		fr.w.src.done(fr.pos) // the pages behind are released
		s.flush()
		return
	}
	fr.refused++
	s.restore(snap)
}

// skipMember drops the events of a member that is not framed from the
// reader's bytes.
func (fr *tapFramer) skipMember() {
	for {
		e, ok := fr.nextEvent()
		if !ok {
			return
		}
		switch e.kind {
		case evMember:
			fr.peek, fr.hasPeek = e, true
			return
		case evEnd:
			return
		}
	}
}

// prove checks, with this package's own code reading the stored bytes,
// that the member at off of n stored bytes is a gzip member whose trailer
// (CRC-32 and ISIZE of its original data) matches the bytes the reader
// passed: a header at off (magic, CM 8, flags as File's inflater takes
// them), room for deflate data, the trailer at off+n-8 — and that those
// bytes are the data of the member that starts at off, not of a later
// one: head, the first bytes the reader passed (up to proveHead), must be
// what this package's own inflater makes of the deflate data after the
// header at off. Without it a reader that skipped a member and passed
// the next one's bytes under the skipped member's offset, with the two
// members' stored length, would pass the trailer check and the skipped
// member's records would be missing from both framings.
func (fr *tapFramer) prove(off, n int64, sum uint32, count int64, head []byte) bool {
	src := fr.w.src
	if n < 18 || off < 0 || off+n > fr.size {
		return false
	}
	h, ok := gzipHeaderLen(src, off, off+n-8, &fr.scratch)
	if !ok || h >= n-8 {
		return false
	}
	tr := fr.scratch[:8]
	if src.readAt(tr, off+n-8) != 8 {
		return false
	}
	if binary.LittleEndian.Uint32(tr[:4]) != sum || binary.LittleEndian.Uint32(tr[4:]) != uint32(count) {
		return false
	}
	return fr.startsWith(off+h, off+n-8, head)
}

// proveHead is how many of a member's first data bytes prove checks by
// inflating them itself: enough to hold a WARC record's first header
// lines (its WARC-Record-ID among them) or an ARC record's URL line, so
// that two members agree in it only when they hold the same record.
const proveHead = 512

// startsWith reports whether the deflate data stored from off to end
// inflates to data that begins with head, inflated by this package's own
// code from the stored bytes: first the head inflater (headinflate.go),
// from the first proveInput stored bytes, which makes only len(head)
// bytes; when it cannot (the stream needs more stored bytes, or it is one
// it does not take) or makes other bytes, the inflater File uses decides,
// given the whole stretch.
func (fr *tapFramer) startsWith(off, end int64, head []byte) bool {
	if len(head) == 0 {
		return true
	}
	in := fr.headIn[:min(int64(len(fr.headIn)), end-off)]
	if fr.w.src.readAt(in, off) != len(in) {
		return false
	}
	if got, ok := fr.hi.inflate(in, fr.headBuf[:0], len(head)); ok && bytes.Equal(got, head) {
		return true
	}
	got := fr.headBuf[:len(head)]
	return fr.inflateHead(fr.w.src.at(off), got) == len(got) && bytes.Equal(got, head)
}

// proveInput is how many stored bytes the head inflater is given: enough,
// in all but contrived streams, for proveHead bytes of data (a dynamic
// block's codes take about 60-120 bytes, and a record's first header
// lines, which hardly repeat, about 6 bits a byte: on every member of the
// shared corpus and of warcgen's WARCs 544 stored bytes made 512 bytes).
// It reads only what it needs of them.
const proveInput = 1536

// inflateHead inflates from rd into got and returns how many bytes it
// made (an error, the end of the stored bytes among them, stops it).
func (fr *tapFramer) inflateHead(rd flate.Reader, got []byte) int {
	if fr.fl == nil {
		fr.fl = flate.NewReader(rd)
	} else if err := fr.fl.(flate.Resetter).Reset(rd, nil); err != nil {
		return 0
	}
	m, _ := io.ReadFull(fr.fl, got)
	return m
}

// gzipHeaderLen parses the gzip member header at off (RFC 1952; as
// klauspost/compress's reader, the inflater File uses, takes it: reserved
// flags zero, FNAME and FCOMMENT under 512 bytes, FHCRC checked) and
// returns its length; the header must end before limit. b is scratch
// space (a local array would escape through src and be allocated for
// every member).
func gzipHeaderLen(src source, off, limit int64, b *[10]byte) (int64, bool) {
	if off+10 > limit || src.readAt(b[:], off) != 10 || b[0] != 0x1f || b[1] != 0x8b || b[2] != 8 || b[3]>>5 != 0 {
		return 0, false
	}
	flg := b[3]
	sum := crc32.ChecksumIEEE(b[:])
	p := off + 10
	read := func(n int64) ([]byte, bool) {
		if n < 0 || p+n > limit {
			return nil, false
		}
		buf := make([]byte, n)
		if int64(src.readAt(buf, p)) != n {
			return nil, false
		}
		p += n
		sum = crc32.Update(sum, crc32.IEEETable, buf)
		return buf, true
	}
	if flg&0x04 != 0 { // FEXTRA
		x, ok := read(2)
		if !ok {
			return 0, false
		}
		if _, ok := read(int64(binary.LittleEndian.Uint16(x))); !ok {
			return 0, false
		}
	}
	for _, bit := range []byte{0x08, 0x10} { // FNAME, FCOMMENT
		if flg&bit == 0 {
			continue
		}
		buf := make([]byte, min(512, max(limit-p, 0)))
		m := int64(src.readAt(buf, p))
		i := int64(-1)
		for j := int64(0); j < m; j++ {
			if buf[j] == 0 {
				i = j
				break
			}
		}
		if i < 0 {
			return 0, false
		}
		if _, ok := read(i + 1); !ok {
			return 0, false
		}
	}
	if flg&0x02 != 0 { // FHCRC
		want := uint16(sum)
		x, ok := read(2)
		if !ok || binary.LittleEndian.Uint16(x) != want {
			return 0, false
		}
	}
	return p - off, true
}

// tapInput passes the bytes the reader passes for the member being
// framed, up to its End (kept in end) or the next member (left in peek),
// and computes their CRC-32 and count.
type tapInput struct {
	fr    *tapFramer
	data  []byte   // the bytes being read
	end   tapEvent // the member's End (ended: seen)
	ended bool
	over  bool
	crc   uint32
	count int64
	// head holds the first headN (up to proveHead) bytes passed.
	head  [proveHead]byte
	headN int
}

// next passes the next slice of the member's bytes (sliceSource), valid
// until it is called again, counting them into the CRC-32, the count and
// the head; ok is false once the member's bytes end (and stays so).
func (in *tapInput) next() ([]byte, bool) {
	for len(in.data) == 0 {
		if in.over {
			return nil, false
		}
		e, ok := in.fr.nextEvent()
		if !ok {
			in.over = true
			return nil, false
		}
		switch e.kind {
		case evData:
			in.data = e.data
		case evEnd:
			in.over, in.end, in.ended = true, e, true
		case evMember:
			in.over, in.fr.peek, in.fr.hasPeek = true, e, true
		}
	}
	d := in.data
	in.data = nil
	if in.headN < proveHead {
		in.headN += copy(in.head[in.headN:], d)
	}
	in.crc = crc32.Update(in.crc, crc32.IEEETable, d)
	in.count += int64(len(d))
	return d, true
}

// drain reads the rest of the member's bytes.
func (in *tapInput) drain() {
	for {
		if _, ok := in.next(); !ok {
			return
		}
	}
}

// scanState is what framing one member changes in a scanner.
type scanState struct {
	records, ends   int
	data, expect    int64
	arcV, head      int
	headCL, httpEnd int64
	nextDone        int64
	members, gaps   int
}

func (s *scanner) snapshot() scanState {
	return scanState{records: len(s.res.Records), ends: len(s.ends), data: s.data, expect: s.expect, arcV: s.arcV,
		head: s.head, headCL: s.headCL, httpEnd: s.httpEnd, nextDone: s.nextDone, members: s.res.Members, gaps: len(s.res.Gaps)}
}

func (s *scanner) restore(st scanState) {
	clear(s.res.Records[st.records:])
	s.res.Records = s.res.Records[:st.records]
	s.ends = s.ends[:st.ends]
	s.data, s.expect, s.arcV = st.data, st.expect, st.arcV
	s.head, s.headCL, s.httpEnd, s.nextDone = st.head, st.headCL, st.httpEnd, st.nextDone
	s.res.Members = st.members
	s.res.Gaps = s.res.Gaps[:st.gaps]
}
