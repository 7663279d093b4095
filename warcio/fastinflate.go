package warcio

import (
	"bytes"
	"encoding/binary"
	"io"

	"golang.org/x/sys/unix"

	"github.com/wayside-archive/wayside/internal/libdeflate"
	"github.com/wayside-archive/wayside/internal/mapfile"
)

// The fast path: a gzip member of an input held in memory (Options.Map),
// or wholly in the reader's buffer, is inflated whole, in one call, by
// libdeflate (about 2-3x faster than the streaming inflater) into a reused
// buffer, which then serves the member's bytes exactly as the gzip reader
// would have: the same bytes, the same end of member, the same stored
// length (the raw position moves to the member's end). The gzip reader
// still parses every member's header first (Reset), so what opens a member
// and the errors for a bad header are unchanged; whatever libdeflate does
// not inflate completely and verify (CRC-32 and ISIZE) — a damaged or cut
// member, one inflating to more than fastOutCap — is read by the gzip
// reader from the byte after its header, as without the fast path, so
// errors, lenient reading and offsets of damaged input stay the same.
// (libdeflate accepts a few Huffman codes Go's inflater rejects —
// hand-made incomplete codes — so a member made that way, with a matching
// CRC-32, reads on this path where the streaming one reports it corrupt.)
//
// A buffered input's member is read by libdeflate straight from the
// reader's buffer (for a file, filled once more when a member straddles
// its end: I/O
// errors may then surface a little earlier, within the buffer's
// read-ahead). libdeflate never reads a mapping itself: the member's
// stored bytes are first copied into a buffer by Go code, under the fault
// guard of Next, so a file truncated under its mapping still gives
// ErrFault, not a crash in C. The member's end is found by looking for the
// next member's magic bytes (1f 8b 08); a false match (those bytes inside
// compressed data) fails verification and is retried with all the bytes up
// to fastInCap.

const (
	// fastOutCap bounds the inflated size of a member the fast path takes,
	// and so the buffer it keeps.
	fastOutCap = 4 << 20
	// fastInCap bounds the stored bytes it copies for one member.
	fastInCap = fastOutCap + 64<<10
	// minGzipMember is the size of the smallest gzip member (header,
	// empty final block, trailer).
	minGzipMember = 20
)

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// fastInflate holds the fast path's decompressor and buffers (kept by
// Reset) and the member it serves. For a mapped input its buffers are one
// anonymous mapping outside the Go heap (so they do not raise the
// collector's heap goal, and only the pages a member touches are
// resident), unmapped by Reader.Close; for a buffered input (whose Reader
// may never be closed) the output buffer is on the Go heap, sized to the
// members read, and libdeflate reads the member straight from the
// reader's buffer.
type fastInflate struct {
	d        *libdeflate.Decompressor
	mem      []byte // the mapping: in, then out (nil: heap buffers)
	in, out  []byte
	pos, end int  // out[pos:end] is still to be read
	on       bool // the open member is served from out
	served   int  // members served (tests)
}

// fastAvailable says whether readers take the fast path (libdeflate built
// in).
var fastAvailable = libdeflate.Available()

// newFastInflate maps the buffers; nil if that fails (the gzip reader
// then reads every member).
func newFastInflate() *fastInflate {
	mem, err := unix.Mmap(-1, 0, fastInCap+fastOutCap, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil
	}
	return &fastInflate{d: libdeflate.New(), mem: mem, in: mem[:fastInCap:fastInCap], out: mem[fastInCap:]}
}

// newHeapFastInflate has its buffers on the Go heap, allocated as members
// need them.
func newHeapFastInflate() *fastInflate { return &fastInflate{d: libdeflate.New()} }

// free unmaps the buffers.
func (f *fastInflate) free() {
	f.on = false
	f.in, f.out = nil, nil
	if f.mem != nil {
		unix.Munmap(f.mem)
		f.mem = nil
	}
}

// heapBuf returns b with room for n bytes (at most limit), reallocated
// when it has less.
func heapBuf(b []byte, n, limit int) []byte {
	if cap(b) < n {
		b = make([]byte, min((n+4095)&^4095, limit))
	}
	return b[:cap(b)]
}

// memberEnd returns where the member at the start of data ends if the
// next member's magic bytes are the first found after its smallest size,
// and whether they were found (else len(data)).
func memberEnd(data []byte) (int, bool) {
	if len(data) > minGzipMember {
		if i := bytes.Index(data[minGzipMember:], gzipMagic); i >= 0 {
			return minGzipMember + i, true
		}
	}
	return len(data), false
}

// member inflates the gzip member at the start of data (the input from
// the member's first byte; all of it when the window ends before the
// input does). It reports the member's stored length, or false when the
// member is to be read by the gzip reader. copyIn: data is a mapping,
// copied before libdeflate reads it.
func (f *fastInflate) member(data []byte, copyIn bool) (int, bool) {
	f.on = false
	if len(data) < minGzipMember {
		return 0, false
	}
	lim := min(len(data), fastInCap)
	w, _ := memberEnd(data[:lim])
	// The trailer's ISIZE, if the member ends at w: a member too large
	// for the buffer goes to the gzip reader at once, when what follows
	// looks like the next member's header (else the magic is taken for
	// bytes inside this member).
	need := int64(binary.LittleEndian.Uint32(data[w-4 : w]))
	if w < lim && need > fastOutCap {
		if gzipHeaderAt(data, w) {
			return 0, false
		}
		w = lim
	}
	// (A member that ends the input has its ISIZE there too; a wrong
	// guess only costs the fast path.)
	need = min(need, fastOutCap)
	for {
		in := data[:w]
		if copyIn {
			if f.mem == nil {
				f.in = heapBuf(f.in, w, fastInCap)
			}
			copy(f.in, in)
			in = f.in[:w]
		}
		if f.mem == nil {
			f.out = heapBuf(f.out, int(need), fastOutCap)
		}
		inLen, outLen, err := f.d.Gzip(in, f.out)
		if err == nil {
			f.pos, f.end, f.on = 0, outLen, true
			f.served++
			return inLen, true
		}
		if w == lim {
			return 0, false
		}
		// The magic found was inside this member (or it is damaged):
		// once more with all the bytes there may be.
		w, need = lim, fastOutCap
	}
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
// to the member's end. pre is what peekMember returned before the header
// was read (a buffered input).
func (r *Reader) openFast(start int64, pre []byte) {
	if r.fast == nil || !r.useFast {
		return
	}
	if r.mem == nil {
		if n, ok := r.fast.member(pre, false); ok {
			r.raw.Discard(int(start + int64(n) - r.rawPos()))
		}
		return
	}
	if n, ok, err := r.fastMember(start); ok && err == nil {
		r.mem.r.Seek(start+int64(n), io.SeekStart)
	}
}

// peekMember returns, for the fast path over a buffered input, the
// buffered stored bytes from the current position when they hold the
// whole member there (up to the next member's magic bytes, or to the end
// of the input), filling the buffer once if need be; nil when they do
// not. The gzip reader then reads the member's header from the buffer
// without reading the input (the bytes stay valid).
func (r *Reader) peekMember() []byte {
	if r.fast == nil || !r.useFast || r.mem != nil {
		return nil
	}
	b, _ := r.rawBuf.Peek(r.rawBuf.Buffered())
	if _, found := memberEnd(b); found {
		return b
	}
	if r.size < 0 {
		// Not a file (a pipe, a socket): filling the buffer could wait
		// for input the gzip reader would not need yet.
		return nil
	}
	b, err := r.rawBuf.Peek(r.rawBuf.Size())
	if _, found := memberEnd(b); found || err != nil {
		return b // or the input ends (or fails) in this member
	}
	return nil
}

// fastMember runs the fast path on the member at start. Looking for the
// member's end reads a few bytes past it (the next member's magic): a
// mapping cut short there faults here, and the gzip reader then reads the
// member and meets the fault where it would have without the fast path.
func (r *Reader) fastMember(start int64) (n int, ok bool, err error) {
	if r.mapping != nil {
		defer mapfile.Recover(&err, mapfile.Guard(), r.mapping)
	}
	n, ok = r.fast.member(r.mem.data[start:], true)
	return n, ok, nil
}
