package framescan

import (
	"encoding/binary"
	"math/bits"
)

// headInflater inflates the first bytes of a deflate stream (RFC 1951)
// held in memory and stops as soon as it has made as many as it was
// asked for. Tap's start proof needs only the first proveHead bytes of
// each member; a general inflater builds decoding tables for every code
// length up to 15 bits and inflates all its input (filling its 32 KiB
// window) before it returns, which made the proof cost more than
// framing the member. This one builds a small table per code (codes
// longer than it are decoded bit by bit, as zlib's puff does) and reads
// only the input the asked-for bytes need. It is as strict as the
// inflater File uses (klauspost/compress) where a stream's codes are
// concerned; what it cannot decode, the caller leaves to that inflater.
type headInflater struct {
	in   []byte
	pos  int
	bits uint64
	nb   uint
	out  []byte
	// lit, dist and cl are the current block's codes; fixed says lit and
	// dist hold the fixed codes (built on first use).
	lit, dist, cl huffCode
	fixed         bool
	lens          [maxLit + maxDist]uint8
}

const (
	maxLit  = 286 // literal/length codes a block may define (288 in the fixed code)
	maxDist = 30
	maxBits = 15
)

// huffCode is a canonical Huffman code: fast maps the next tableBits
// bits of input to sym<<4|length for codes that short (0: longer, or no
// code); count and syms decode the longer ones canonically.
type huffCode struct {
	tableBits uint
	fast      [1 << 9]uint16
	count     [maxBits + 1]uint16
	syms      [288]uint16
}

// build makes the code of the given code lengths (symbol i has length
// lengths[i], 0: none). As klauspost/compress's inflater does, it refuses
// an over-subscribed set of lengths and an incomplete one, except a
// single code of one bit; a set with no code at all is accepted (and
// fails when used).
func (h *huffCode) build(lengths []uint8, tableBits uint) bool {
	h.tableBits = tableBits
	h.count = [maxBits + 1]uint16{}
	maxLen := 0
	for _, n := range lengths {
		h.count[n]++
		if int(n) > maxLen {
			maxLen = int(n)
		}
	}
	h.count[0] = 0
	fast := h.fast[:1<<tableBits]
	clear(fast)
	if maxLen == 0 {
		return true
	}
	var next [maxBits + 2]int
	var offs [maxBits + 2]int
	code := 0
	for l := 1; l <= maxLen; l++ {
		code <<= 1
		next[l] = code
		code += int(h.count[l])
		offs[l+1] = offs[l] + int(h.count[l])
	}
	if code != 1<<maxLen && !(code == 1 && maxLen == 1) {
		return false
	}
	for sym, n := range lengths {
		if n == 0 {
			continue
		}
		h.syms[offs[n]] = uint16(sym)
		offs[n]++
		if uint(n) > tableBits {
			next[n]++
			continue
		}
		rev := int(bits.Reverse16(uint16(next[n])) >> (16 - n))
		next[n]++
		for r := rev; r < len(fast); r += 1 << n {
			fast[r] = uint16(sym)<<4 | uint16(n)
		}
	}
	return true
}

// fill puts at least n bits in the bit buffer if the input has them.
func (d *headInflater) fill(n uint) {
	if d.nb >= n {
		return
	}
	if d.pos+8 <= len(d.in) {
		// Eight bytes at once; the bits above the 56 to 63 taken are
		// the bytes after them, ORed again, unchanged, next time.
		d.bits |= binary.LittleEndian.Uint64(d.in[d.pos:]) << d.nb
		d.pos += int(63-d.nb) >> 3
		d.nb |= 56
		return
	}
	for d.nb < n && d.pos < len(d.in) {
		d.bits |= uint64(d.in[d.pos]) << d.nb
		d.pos++
		d.nb += 8
	}
}

// getBits takes the next n bits (false: the input ended).
func (d *headInflater) getBits(n uint) (int, bool) {
	d.fill(n)
	if d.nb < n {
		return 0, false
	}
	v := int(d.bits & (1<<n - 1))
	d.bits >>= n
	d.nb -= n
	return v, true
}

// decode takes the next symbol of code h (false: the input ended, or the
// bits are no code of h).
func (d *headInflater) decode(h *huffCode) (int, bool) {
	d.fill(maxBits)
	if e := h.fast[d.bits&(1<<h.tableBits-1)]; e != 0 {
		n := uint(e & 15)
		if n > d.nb {
			return 0, false
		}
		d.bits >>= n
		d.nb -= n
		return int(e >> 4), true
	}
	code, first, index := 0, 0, 0
	for l := uint(1); l <= maxBits && l <= d.nb; l++ {
		code |= int(d.bits>>(l-1)) & 1
		count := int(h.count[l])
		if code-count < first {
			d.bits >>= l
			d.nb -= l
			return int(h.syms[index+code-first]), true
		}
		index += count
		first += count
		first <<= 1
		code <<= 1
	}
	return 0, false
}

// Length and distance bases and extra bits (RFC 1951 3.2.5).
var (
	lenBase   = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra  = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase  = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	// clOrder is the order of the code length code's lengths.
	clOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// inflate makes up to want bytes of the deflate stream in, appended to
// out[:0]: fewer when the stream ends first. ok is false when the stream
// cannot be decoded that far from in (it is cut short, or it is not a
// deflate stream this inflater takes).
func (d *headInflater) inflate(in, out []byte, want int) ([]byte, bool) {
	d.in, d.pos, d.bits, d.nb, d.out = in, 0, 0, 0, out[:0]
	for final := false; !final && len(d.out) < want; {
		hdr, ok := d.getBits(3)
		if !ok {
			return nil, false
		}
		final = hdr&1 == 1
		switch hdr >> 1 {
		case 0:
			ok = d.stored(want)
		case 1:
			if !d.fixed {
				d.buildFixed()
			}
			ok = d.codes(want)
		case 2:
			ok = d.dynamic() && d.codes(want)
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
	}
	return d.out, true
}

// stored copies a stored block's bytes.
func (d *headInflater) stored(want int) bool {
	d.bits >>= d.nb & 7 // to a byte boundary
	d.nb &^= 7
	n, ok1 := d.getBits(16)
	nn, ok2 := d.getBits(16)
	if !ok1 || !ok2 || n != ^nn&0xffff {
		return false
	}
	for ; n > 0 && len(d.out) < want; n-- {
		b, ok := d.getBits(8)
		if !ok {
			return false
		}
		d.out = append(d.out, byte(b))
	}
	return true
}

func (d *headInflater) buildFixed() {
	l := d.lens[:288]
	for i := range l {
		switch {
		case i < 144:
			l[i] = 8
		case i < 256:
			l[i] = 9
		case i < 280:
			l[i] = 7
		default:
			l[i] = 8
		}
	}
	d.lit.build(l, 9)
	for i := range d.lens[:maxDist+2] {
		d.lens[i] = 5
	}
	d.dist.build(d.lens[:maxDist+2], 5)
	d.fixed = true
}

// dynamic reads a dynamic block's codes.
func (d *headInflater) dynamic() bool {
	d.fixed = false
	hlit, ok1 := d.getBits(5)
	hdist, ok2 := d.getBits(5)
	hclen, ok3 := d.getBits(4)
	nlit, ndist := hlit+257, hdist+1
	if !ok1 || !ok2 || !ok3 || nlit > maxLit || ndist > maxDist {
		return false
	}
	var cl [19]uint8
	for i := 0; i < hclen+4; i++ {
		v, ok := d.getBits(3)
		if !ok {
			return false
		}
		cl[clOrder[i]] = uint8(v)
	}
	if !d.cl.build(cl[:], 7) {
		return false
	}
	lens := d.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		sym, ok := d.decode(&d.cl)
		if !ok {
			return false
		}
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var val uint8
		switch sym {
		case 16:
			if i == 0 {
				return false
			}
			val = lens[i-1]
			rep, ok = d.getBits(2)
			rep += 3
		case 17:
			rep, ok = d.getBits(3)
			rep += 3
		default:
			rep, ok = d.getBits(7)
			rep += 11
		}
		if !ok || i+rep > len(lens) {
			return false
		}
		for ; rep > 0; rep-- {
			lens[i] = val
			i++
		}
	}
	return d.lit.build(lens[:nlit], 9) && d.dist.build(lens[nlit:], 8)
}

// codes decodes a compressed block's symbols until its end or want bytes.
func (d *headInflater) codes(want int) bool {
	for len(d.out) < want {
		sym, ok := d.decode(&d.lit)
		if !ok {
			return false
		}
		switch {
		case sym < 256:
			d.out = append(d.out, byte(sym))
			continue
		case sym == 256:
			return true
		case sym-257 >= len(lenBase):
			return false
		}
		sym -= 257
		extra, ok := d.getBits(uint(lenExtra[sym]))
		if !ok {
			return false
		}
		length := int(lenBase[sym]) + extra
		ds, ok := d.decode(&d.dist)
		if !ok || ds >= maxDist {
			return false
		}
		extra, ok = d.getBits(uint(distExtra[ds]))
		if !ok {
			return false
		}
		dist := int(distBase[ds]) + extra
		if dist > len(d.out) {
			return false
		}
		for ; length > 0 && len(d.out) < want; length-- {
			d.out = append(d.out, d.out[len(d.out)-dist])
		}
	}
	return true
}
