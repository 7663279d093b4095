package framescan

import (
	"bufio"
	"bytes"
	"io"
)

// lineBuf is the size of the buffer lines are read through: a line longer
// than that comes in pieces of lineBuf bytes (bufio.ErrBufferFull).
const lineBuf = 64 << 10

// lineReader is what the scan reads its data with: bufio.Reader's
// ReadSlice and Peek, which a *bufio.Reader of lineBuf bytes and a
// *sliceLines both give.
type lineReader interface {
	ReadSlice(delim byte) ([]byte, error)
	Peek(n int) ([]byte, error)
}

// sliceSource passes data as a series of slices: each stays valid until
// next is called again; ok false is the end.
type sliceSource interface {
	next() (data []byte, ok bool)
}

// sliceLines reads the data a sliceSource passes as a *bufio.Reader of
// lineBuf bytes would read it from the same bytes — the same lines, the
// same pieces of a line longer than lineBuf, the same Peek — but returns
// a line that lies within one slice as a part of that slice, copying
// only the lines that span two slices (the Tap's slices are up to 256 KiB
// of data: copying every byte through a bufio.Reader cost more than
// finding its lines).
type sliceLines struct {
	src sliceSource
	// cur is the rest of the current slice; pend holds bytes taken from
	// earlier slices (or peeked) and not yet returned, which come before
	// cur. spare is a second buffer for what follows a returned line in
	// pend.
	cur, pend, spare []byte
}

func (l *sliceLines) reset(src sliceSource) {
	l.src, l.cur, l.pend = src, nil, l.pend[:0]
}

// fetch makes the next non-empty slice cur (false at the end).
func (l *sliceLines) fetch() bool {
	for {
		d, ok := l.src.next()
		if !ok {
			return false
		}
		if len(d) > 0 {
			l.cur = d
			return true
		}
	}
}

// ReadSlice is bufio.Reader.ReadSlice: the data up to and including
// delim; lineBuf bytes and bufio.ErrBufferFull when delim is not among
// them; what is left and io.EOF at the end. The line is valid until the
// next call.
func (l *sliceLines) ReadSlice(delim byte) ([]byte, error) {
	if len(l.pend) == 0 {
		if len(l.cur) == 0 && !l.fetch() {
			return nil, io.EOF
		}
		lim := min(len(l.cur), lineBuf)
		if i := bytes.IndexByte(l.cur[:lim], delim); i >= 0 {
			line := l.cur[:i+1]
			l.cur = l.cur[i+1:]
			return line, nil
		}
		if lim == lineBuf {
			line := l.cur[:lineBuf]
			l.cur = l.cur[lineBuf:]
			return line, bufio.ErrBufferFull
		}
		l.pend = append(l.pend[:0], l.cur...) // the line goes on in the next slice
		l.cur = nil
	}
	// pend holds the start of the line (or, after Peek, bytes that may
	// hold whole lines).
	if i := bytes.IndexByte(l.pend, delim); i >= 0 {
		return l.take(i + 1), nil
	}
	for {
		if len(l.pend) >= lineBuf {
			return l.take(lineBuf), bufio.ErrBufferFull
		}
		if len(l.cur) == 0 && !l.fetch() {
			return l.take(len(l.pend)), io.EOF
		}
		// Only the line's bytes are copied: the rest stays in cur.
		lim := min(len(l.cur), lineBuf-len(l.pend))
		if i := bytes.IndexByte(l.cur[:lim], delim); i >= 0 {
			l.pend = append(l.pend, l.cur[:i+1]...)
			l.cur = l.cur[i+1:]
			return l.take(len(l.pend)), nil
		}
		l.pend = append(l.pend, l.cur[:lim]...)
		l.cur = l.cur[lim:]
	}
}

// take returns the first n pending bytes, keeping the rest pending.
func (l *sliceLines) take(n int) []byte {
	line := l.pend[:n]
	rest := l.pend[n:]
	if len(rest) == 0 {
		l.pend = l.pend[:0]
		return line
	}
	// The rest moves to the spare buffer (line stays valid until the
	// next call), which becomes pend.
	l.spare = append(l.spare[:0], rest...)
	l.pend, l.spare = l.spare, l.pend[:0]
	return line
}

// Peek is bufio.Reader.Peek for n up to lineBuf: the next n bytes, not
// taken; fewer and io.EOF at the end.
func (l *sliceLines) Peek(n int) ([]byte, error) {
	if len(l.pend) == 0 {
		if len(l.cur) >= n {
			return l.cur[:n], nil
		}
		l.pend = append(l.pend[:0], l.cur...)
		l.cur = nil
	}
	for len(l.pend) < n {
		if len(l.cur) == 0 && !l.fetch() {
			return l.pend, io.EOF
		}
		k := min(len(l.cur), n-len(l.pend))
		l.pend = append(l.pend, l.cur[:k]...)
		l.cur = l.cur[k:]
	}
	return l.pend[:n], nil
}
