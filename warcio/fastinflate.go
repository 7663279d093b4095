package warcio

import (
	"bytes"
	"errors"
	"io"

	"golang.org/x/sys/unix"

	"github.com/wayside-archive/wayside/internal/libdeflate"
	"github.com/wayside-archive/wayside/internal/mapfile"
)

// The fast path: a gzip member whose stored bytes are at hand is inflated
// whole, in one call, by libdeflate (about 2-3x faster than the streaming
// inflater) into a reused buffer, which then serves the member's bytes
// exactly as the gzip reader would have: the same bytes, the same end of
// member, the same stored length (the raw position moves to the member's
// end). The gzip reader parses a member's header first (Reset), so what
// opens a member and the errors for a bad header are unchanged — except
// for a member of an input in memory that libdeflate inflates and
// verifies whole before that (openFastFirst): its header is sound, as
// libdeflate parses it as the gzip reader would (a header CRC-16, which
// libdeflate skips, sends a member to the usual order);
// whatever libdeflate does not inflate completely and verify (CRC-32 and
// ISIZE) — a damaged or cut member, one inflating to more than fastOutCap
// — is read by the gzip reader from the byte after its header, as without
// the fast path, so errors, lenient reading and offsets of damaged input
// stay the same. (libdeflate accepts a few Huffman codes Go's inflater
// rejects — hand-made incomplete codes — so a member made that way, with a
// matching CRC-32, reads on this path where the streaming one reports it
// corrupt.)
//
// Nothing looks for a member's end: libdeflate is handed all the stored
// bytes at hand from the member's first (at most fastInCap), stops at the
// member's end and reports its stored length. A false success is
// impossible (the trailer's CRC-32 and ISIZE are checked); a failure with
// fewer bytes at hand than the input still has is retried with more —
// unless they hold what looks like the next member's header (damaged: a
// failure alone scans for one) — and then left to the gzip reader. (A member inflating to more than
// fastOutCap is known only once libdeflate has filled its buffer: that
// try is wasted, on such members only.) Where the bytes come from:
//
//   - A mapped file (Options.Map): libdeflate never reads the mapping (a
//     file cut under it would raise SIGBUS in C, which no guard turns into
//     an error). The fast path has its own read-ahead window outside the
//     Go heap, copied out of the mapping by Go code under the fault guard
//     (fill), fastFill bytes at a time. When a member is not wholly in it
//     (libdeflate fails with the window ending before the mapped input
//     does), the window is filled again from the member's first byte and
//     the member tried once more — and, for a member larger than
//     fastFill, once more with all the window holds (fastWindow, more
//     than fastInCap). A file cut while read leaves the window ending
//     before the page that faulted: the cut member fails and goes to the
//     gzip reader, which reads the mapping under Next's fault guard and
//     meets ErrFault where it would without the fast path. A member
//     served from the window is checked against the mapping first: its
//     last 8 bytes (the trailer) must read the same there, under the
//     guard, so a file cut before a member's end after the window was
//     filled reads as without the fast path too (ErrFault for a page
//     gone, the gzip reader on the zeros of a cut last page). Each stored
//     byte is copied about once, as when each member was copied out on
//     its own.
//   - Other input in memory (tests' in-memory readers): libdeflate reads
//     it in place.
//   - A buffered input: libdeflate reads the member straight from the
//     reader's buffer, before the gzip reader parses its header (which
//     then reads it from the buffer without reading the input). A member
//     not wholly buffered fails; for a file (not a pipe or socket, where
//     filling could wait for input the gzip reader would not need yet) the
//     buffer is filled once more and the member tried again. I/O errors
//     may then surface a little earlier, within the buffer's read-ahead.

const (
	// fastOutCap bounds the inflated size of a member the fast path takes,
	// and so the buffer it keeps.
	fastOutCap = 4 << 20
	// fastInCap bounds the stored bytes handed to libdeflate for one
	// member (a member inflating to fastOutCap is smaller).
	fastInCap = fastOutCap + 64<<10
	// fastWindow is the size of a mapped file's read-ahead window: large
	// enough for the largest member taken and then some. Only members
	// that do not fit fastFill make it fill (and keep resident) more.
	fastWindow = fastInCap + 1<<20
	// fastFill is what the window is usually filled with: a refill
	// (wasting a failed try on the member that straddles its end) about
	// once per fastFill.
	fastFill = 2 << 20
	// minGzipMember is the size of the smallest gzip member (header,
	// empty final block, trailer).
	minGzipMember = 20
	// minHeapOut is the smallest output buffer of a buffered input.
	minHeapOut = 4 << 10
	// fillChunk is what the window's fill copies between two notes of
	// how far it got, aligned in the file (a page: a cut file leaves the
	// window ending where its pages do).
	fillChunk = 4 << 10
)

// fastInflate holds the fast path's decompressor and buffers (kept by
// Reset) and the member it serves. For a mapped input its buffers (window
// and output) are one anonymous mapping outside the Go heap (so they do
// not raise the collector's heap goal, and only the pages used are
// resident), unmapped by Reader.Close; for a buffered input (whose Reader
// may never be closed) the output buffer is on the Go heap, grown as
// members need it, and libdeflate reads the member straight from the
// reader's buffer.
type fastInflate struct {
	d   *libdeflate.Decompressor
	mem []byte // the mapping: win, then out (nil: heap buffers)
	// win[:winLen] holds the file's bytes from winOff (a mapped file).
	win    []byte
	winOff int64
	winLen int
	out    []byte
	pos    int  // out[pos:end] is still to be read
	end    int  // (see pos)
	on     bool // the open member is served from out
	served int  // members served (tests)
	fills  int  // window fills (tests)
}

// fastAvailable says whether readers take the fast path (libdeflate built
// in).
var fastAvailable = libdeflate.Available()

// newFastInflate maps the buffers, with a window of win bytes; nil if
// that fails (the gzip reader then reads every member).
func newFastInflate(win int) *fastInflate {
	mem, err := unix.Mmap(-1, 0, win+fastOutCap, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil
	}
	return &fastInflate{d: libdeflate.New(), mem: mem, win: mem[:win:win], out: mem[win:]}
}

// newHeapFastInflate has its output buffer on the Go heap, allocated as
// members need it.
func newHeapFastInflate() *fastInflate { return &fastInflate{d: libdeflate.New()} }

// free unmaps the buffers.
func (f *fastInflate) free() {
	f.on = false
	f.win, f.out, f.winLen = nil, nil, 0
	if f.mem != nil {
		unix.Munmap(f.mem)
		f.mem = nil
	}
}

// reset forgets the member served and the window's bytes (a new input).
func (f *fastInflate) reset() {
	f.on = false
	f.winOff, f.winLen = 0, 0
}

// heapBuf returns b with room for n bytes (at most limit), reallocated
// when it has less.
func heapBuf(b []byte, n, limit int) []byte {
	if cap(b) < n {
		b = make([]byte, min((n+4095)&^4095, limit))
	}
	return b[:cap(b)]
}

// inflate inflates the gzip member at the start of in (the stored bytes at
// hand from its first; only fastInCap of them are used) into out and
// returns its stored length. It returns libdeflate.ErrBadData when the
// member is damaged or not wholly in in, ErrInsufficientSpace when it
// inflates to more than fastOutCap. A heap output buffer grows (fourfold,
// the member inflated again) until the member fits.
func (f *fastInflate) inflate(in []byte) (int, error) {
	in = in[:min(len(in), fastInCap)]
	if f.mem == nil && len(f.out) < minHeapOut {
		f.out = heapBuf(f.out, min(max(8*len(in), minHeapOut), 64<<10), fastOutCap)
	}
	for {
		inLen, outLen, err := f.d.Gzip(in, f.out)
		if errors.Is(err, libdeflate.ErrInsufficientSpace) && f.mem == nil && len(f.out) < fastOutCap {
			f.out = heapBuf(nil, 4*len(f.out), fastOutCap)
			continue
		}
		if err != nil {
			return 0, err
		}
		f.pos, f.end = 0, outLen
		return inLen, nil
	}
}

// gzipMagic opens every gzip member (with the deflate method).
var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// damaged reports whether in, the stored bytes at hand from a member's
// first byte that libdeflate could not inflate, hold what looks like the
// next member's header (past the smallest member): the member then ended
// in them and is damaged, so more bytes would not help. Only failures
// scan (a damaged member, one straddling the end of the bytes at hand),
// and only as far as the first such header.
func damaged(in []byte) bool {
	for i := minGzipMember; i < len(in); {
		j := bytes.Index(in[i:], gzipMagic)
		if j < 0 {
			return false
		}
		if gzipHeaderAt(in, i+j) {
			return true
		}
		i += j + 1
	}
	return false
}

// gzipHeaderAt reports whether data holds a plausible gzip header at i
// (magic, no reserved flag bits, a known OS byte).
func gzipHeaderAt(data []byte, i int) bool {
	if len(data)-i < 10 || !bytes.Equal(data[i:i+3], gzipMagic) {
		return false
	}
	os := data[i+9]
	return data[i+3]&0xe0 == 0 && (os <= 13 || os == 255)
}

// serve makes out the open member's bytes.
func (f *fastInflate) serve() {
	f.on = true
	f.served++
}

// ahead returns the window's bytes from file offset off (none when off is
// outside it).
func (f *fastInflate) ahead(off int64) []byte {
	if off < f.winOff || off >= f.winOff+int64(f.winLen) {
		return nil
	}
	return f.win[off-f.winOff : f.winLen]
}

// fill copies n bytes (fewer at the end of data) of data, the mapped
// file, from offset off into the window, a fillChunk at a time, under the
// fault guard: a file cut under the mapping leaves the window ending
// before the page that faulted (shorter than asked), and the member cut
// there goes to the gzip reader, which meets the fault where it would
// without the fast path.
func (f *fastInflate) fill(data []byte, off int64, n int, m *mapfile.File) (err error) {
	f.fills++
	f.winOff, f.winLen = off, 0
	src := data[off:min(int64(len(data)), off+int64(min(n, len(f.win))))]
	defer mapfile.Recover(&err, mapfile.Guard(), m)
	for f.winLen < len(src) {
		next := (off+int64(f.winLen))/fillChunk*fillChunk + fillChunk - off
		f.winLen += copy(f.win[f.winLen:], src[f.winLen:min(int64(len(src)), next)])
	}
	return nil
}

// Read serves the inflated member, returning io.EOF with its last bytes
// as the gzip reader does.
func (f *fastInflate) Read(p []byte) (int, error) {
	n := copy(p, f.out[f.pos:f.end])
	f.pos += n
	if f.pos == f.end {
		return n, io.EOF
	}
	return n, nil
}

// fastAhead returns the open member's next inflated bytes (at most max)
// when the fast path serves it and the data buffer is empty: they are
// read where they are, and fastTake consumes them as if read through the
// data buffer. nil otherwise.
func (r *Reader) fastAhead(max int64) []byte {
	f := r.fast
	if f == nil || !f.on || f.pos >= f.end || r.br.Buffered() > 0 {
		return nil
	}
	return f.out[f.pos : f.pos+int(min(max, int64(f.end-f.pos)))]
}

// fastTake consumes the first n bytes fastAhead returned, as reading them
// through tapReader and the data buffer would: counted in the data
// offset, seen by Options.Tap.
func (r *Reader) fastTake(n int) {
	f := r.fast
	p := f.out[f.pos : f.pos+n]
	f.pos += n
	r.dcnt.n += int64(n)
	if r.tapOpen {
		r.opts.Tap.Write(p)
	}
}

// inflated reads the open member's inflated bytes: from the fast path's
// buffer, or from the gzip reader.
func (r *Reader) inflated(p []byte) (int, error) {
	if f := r.fast; f != nil && f.on {
		return f.Read(p)
	}
	return r.gz.Read(p)
}

// openFast tries the fast path on the member at raw offset start, whose
// header the gzip reader has just read; on success the raw position moves
// to the member's end. pre is the stored length peekMember found
// (buffered input; 0: none). A member of an input in memory openFastFirst
// tried already is not tried again.
func (r *Reader) openFast(start int64, pre int) {
	if r.fast == nil || !r.useFast {
		return
	}
	if r.mem == nil {
		if pre > 0 {
			r.fast.serve()
			r.raw.Discard(int(start + int64(pre) - r.rawPos()))
		}
		return
	}
	if r.fastTried {
		r.fastTried = false
		return
	}
	if n, ok, err := r.fastMember(start); ok && err == nil {
		r.fast.serve()
		r.mem.r.Seek(start+int64(n), io.SeekStart)
	}
}

// gzipFHCRC is the gzip header flag of a header CRC-16.
const gzipFHCRC = 0x02

// openFastFirst tries the fast path on the member at raw offset start of
// an input in memory before the gzip reader parses its header, and
// reports whether it serves the member (the raw position then at its
// end). libdeflate parses the header as the gzip reader does, except for
// a header CRC-16, which it skips: a member declaring one (FHCRC) is left
// to the usual order (the gzip reader checks its header first). When it
// fails, openFast does not try the member again.
func (r *Reader) openFastFirst(start int64) bool {
	r.fastTried = false
	if r.fast == nil || !r.useFast || r.mem == nil {
		return false
	}
	data := r.mem.data
	if int64(len(data)) < start+minGzipMember || data[start+3]&gzipFHCRC != 0 {
		return false
	}
	r.fastTried = true
	n, ok, err := r.fastMember(start)
	if !ok || err != nil {
		return false
	}
	r.fastTried = false
	r.fast.serve()
	r.mem.r.Seek(start+int64(n), io.SeekStart)
	return true
}

// peekMember inflates, for the fast path over a buffered input, the member
// at the current position from the buffered bytes (filling the buffer
// once more when they do not hold it and the input is a file), and
// returns its stored length; 0 when it is left to the gzip reader. The
// gzip reader then reads the member's header from the buffer without
// reading the input (the bytes stay valid).
func (r *Reader) peekMember() int {
	if r.fast == nil || !r.useFast || r.mem != nil {
		return 0
	}
	b, _ := r.rawBuf.Peek(r.rawBuf.Buffered())
	n, err := r.fast.inflate(b)
	if err == nil {
		return n
	}
	if r.size < 0 || !errors.Is(err, libdeflate.ErrBadData) || len(b) >= fastInCap || len(b) >= r.rawBuf.Size() ||
		r.rawPos()+int64(len(b)) >= r.size || damaged(b) {
		// Not a file (a pipe, a socket: filling the buffer could wait
		// for input the gzip reader would not need yet), or more bytes
		// cannot help (the buffer holds the rest of the file, or the
		// member is damaged).
		return 0
	}
	more, _ := r.rawBuf.Peek(r.rawBuf.Size())
	if len(more) <= len(b) {
		return 0 // the input ends (or fails) in this member
	}
	if n, err = r.fast.inflate(more); err != nil {
		return 0
	}
	return n
}

// fastMember inflates the member at start of an input in memory: from the
// window for a mapped file (checking the member's trailer against the
// mapping, under the fault guard: a fault there sends the member to the
// gzip reader, which meets it where it would have without the fast path),
// in place otherwise.
func (r *Reader) fastMember(start int64) (n int, ok bool, err error) {
	f, data := r.fast, r.mem.data
	if r.mapping == nil {
		n, err := f.inflate(data[start:])
		return n, err == nil, nil
	}
	in := f.ahead(start)
	if len(in) == 0 {
		f.fill(data, start, fastFill, r.mapping)
		in = f.ahead(start)
	}
	n, err = f.inflate(in)
	for errors.Is(err, libdeflate.ErrBadData) && len(in) < fastInCap && f.winOff+int64(f.winLen) < int64(len(data)) && !damaged(in) {
		// The window may end inside the member: again from the member's
		// first byte, as much as usual, then as much as the window holds
		// (unless the file was cut short there).
		want := fastFill
		if f.winOff == start {
			if f.winLen != min(fastFill, len(f.win)) || fastFill >= len(f.win) {
				break
			}
			want = len(f.win)
		}
		f.fill(data, start, want, r.mapping)
		in = f.ahead(start)
		n, err = f.inflate(in)
	}
	if err != nil {
		return 0, false, nil
	}
	defer mapfile.Recover(&err, mapfile.Guard(), r.mapping)
	end := start + int64(n)
	return n, bytes.Equal(data[end-8:end], f.win[end-8-f.winOff:end-f.winOff]), nil
}
