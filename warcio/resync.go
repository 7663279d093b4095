package warcio

import (
	"bufio"
	"bytes"
	"io"
)

// zeroTail reports whether only zero bytes remain in the raw input,
// consuming them.
func (r *Reader) zeroTail() bool {
	if r.seeker == nil {
		return false
	}
	pos := r.rawPos()
	r.seekTo(pos)
	for {
		b, err := r.raw.Peek(4096)
		for _, c := range b {
			if c != 0 {
				r.seekTo(pos)
				return false
			}
		}
		r.raw.Discard(len(b))
		if err != nil {
			return true
		}
	}
}

func (r *Reader) seekTo(off int64) bool {
	if r.mem != nil {
		if off < 0 || off > int64(len(r.mem.data)) {
			return false
		}
		r.mem.r.Seek(off, io.SeekStart)
		return true
	}
	if r.seeker == nil {
		return false
	}
	if _, err := r.seeker.Seek(r.base+off, io.SeekStart); err != nil {
		return false
	}
	r.cnt.n = off
	r.rawBuf.Reset(&r.cnt)
	return true
}

// skipToRecordLine advances a plain reader to the next line that starts a
// record ("WARC/" or a well-formed ARC header line), or to the end; it
// returns the bytes skipped.
func (r *Reader) skipToRecordLine() int64 {
	var n int64
	for {
		line, err := r.br.ReadSlice('\n')
		n += int64(len(line))
		if err != nil && err != bufio.ErrBufferFull {
			return n
		}
		if err == nil && r.atRecordStart() {
			return n
		}
	}
}

// resynchronise positions the reader on the next plausible record at or
// after off: a gzip member whose data starts a record, or a line starting
// one in a plain file ("WARC/" or a well-formed ARC header line). It reports false at end of input.
func (r *Reader) resynchronise(off int64) bool {
	if !r.seekTo(off) {
		// Cannot go back: scan from where we are.
		if pos := r.rawPos(); pos < off {
			r.raw.Discard(int(off - pos))
		}
	}
	if !r.compressed {
		r.skipToRecordLine()
		return r.moreInput()
	}
	for {
		if !r.scanGzipMagic() {
			return false
		}
		cand := r.rawPos()
		if err := r.openMember(); err == nil {
			if r.skipBlank() == nil && r.atRecordStart() {
				return true
			}
		}
		r.resync = false
		r.memberOpen = false
		if !r.seekTo(cand + 1) {
			if r.rawPos() <= cand {
				r.raw.Discard(1)
			}
		}
	}
}

// scanGzipMagic advances the raw reader to the next "1f 8b 08".
func (r *Reader) scanGzipMagic() bool {
	for {
		b, _ := r.raw.Peek(3)
		if len(b) < 3 {
			r.raw.Discard(len(b))
			return false
		}
		if b[0] == 0x1f && b[1] == 0x8b && b[2] == 0x08 {
			return true
		}
		buf, _ := r.raw.Peek(r.raw.Buffered())
		i := bytes.IndexByte(buf[1:], 0x1f)
		if i < 0 {
			r.raw.Discard(len(buf) - 2)
		} else {
			r.raw.Discard(i + 1)
		}
	}
}
