package warcio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/wayside-archive/wayside/internal/excerpt"
)

// Span is a stretch of the input the reader did not turn into a record:
// a damaged record, bytes between records that start none, a partial
// record at the end, zero padding. Every input byte lies in exactly one
// record or one span, apart from the blank lines (CR, LF, space, tab)
// between records, which belong to neither:
//
//   - in an uncompressed file, records ([Record.Offset, Record.End())) and
//     spans ([Offset, Offset+Length)) cover the file;
//   - in a compressed file, the gzip members of records with a Length and
//     spans with a Length cover the file; inside a gzip member that holds
//     several records (or a file that is one gzip stream), records
//     ([Record.DataOffset, +Record.DataLength)) and spans ([DataOffset,
//     +DataLength)) cover the member's uncompressed data.
//
// Reader reports spans through Options.OnSpan; Unaccounted counts them.
type Span struct {
	// Offset and Length locate the span in the stored file; for a span
	// inside a gzip member that also holds records, Offset is the member's
	// start and Length is 0 (the span has no stored bytes of its own).
	Offset, Length int64
	// DataOffset and DataLength locate the span in the uncompressed data
	// (the same as Offset and Length in an uncompressed file); DataOffset
	// is -1 for stored bytes that are no gzip data at all.
	DataOffset, DataLength int64
	// Reason says why the bytes are not a record.
	Reason string
	// Padding marks zero bytes at the end of the file (a preallocated
	// file): they hold nothing, and are not reported as an error.
	Padding bool
}

func (s Span) String() string {
	if s.DataOffset >= 0 && s.Length == 0 {
		return fmt.Sprintf("offset %d (uncompressed offset %d): %d bytes: %s", s.Offset, s.DataOffset, s.DataLength, s.Reason)
	}
	return fmt.Sprintf("offset %d: %d bytes: %s", s.Offset, s.Length, s.Reason)
}

// Unaccounted returns how many spans the reader reported so far (zero
// padding not included) and their stored, or for spans inside a gzip
// member uncompressed, bytes.
func (r *Reader) Unaccounted() (spans int, bytes int64) { return r.spans, r.spanBytes }

func (r *Reader) emitSpan(s Span) {
	if s.Length <= 0 && s.DataLength <= 0 {
		return
	}
	if s.DataOffset >= 0 {
		r.lastEnd = max(r.lastEnd, s.DataOffset+s.DataLength)
	}
	if !s.Padding {
		r.spans++
		if s.Length > 0 {
			r.spanBytes += s.Length
		} else {
			r.spanBytes += s.DataLength
		}
	}
	if r.opts.OnSpan != nil {
		r.opts.OnSpan(s)
	}
}

// emitRaw reports the span begun by a raw resynchronisation (r.span),
// ending at end.
func (r *Reader) emitRaw(end int64) {
	s := r.span
	r.span = Span{}
	s.Length = end - s.Offset
	if !r.compressed {
		s.DataOffset, s.DataLength = s.Offset, s.Length
	}
	r.emitSpan(s)
}

// emitTail reports the partial record at the end of the input: stored
// bytes from off, uncompressed ones from dataOff (-1: none).
func (r *Reader) emitTail(off, dataOff int64, reason string) {
	s := Span{Offset: off, DataOffset: dataOff, Reason: reason}
	if dataOff >= 0 && r.compressed && r.br != nil {
		io.Copy(io.Discard, r.br)
		s.DataLength = r.dataPos() - dataOff
	}
	io.Copy(io.Discard, r.raw)
	s.Length = r.rawPos() - off
	if !r.compressed {
		s.DataOffset, s.DataLength = s.Offset, s.Length
	}
	r.emitSpan(s)
}

// skipInMember skips the data of the open gzip member up to the next line
// that starts a record, or to the member's end (r.memberOpen is then
// false), and returns the span skipped (from r.span), not yet reported,
// and the last byte skipped. A gzip error ends the member with the error
// endMember gives.
func (r *Reader) skipInMember() (Span, byte, error) {
	s := r.span
	r.span = Span{}
	var last byte
	first := true
	for {
		line, err := r.br.ReadSlice('\n')
		if len(line) > 0 {
			last = line[len(line)-1]
		}
		if first && s.Reason != "" && len(line) > 0 {
			s.Reason += " (starts " + excerpt.Quote(line, 60) + ")"
		}
		first = false
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err != io.EOF {
				return s, last, r.endMember(err)
			}
			r.memberOpen = false
			s.DataLength = r.dataPos() - s.DataOffset
			if r.spanFirst {
				s.Length = r.rawPos() - s.Offset
			}
			return s, last, nil
		}
		if r.atRecordStart() {
			s.DataLength = r.dataPos() - s.DataOffset
			return s, last, nil
		}
	}
}

// resyncInMember goes on after a record that failed inside a sound gzip
// member: at the next line of the member that starts a record, or after
// the member.
func (r *Reader) resyncInMember() error {
	s, _, err := r.skipInMember()
	if err != nil {
		if r.quietGzip && errors.Is(err, ErrCorrupt) {
			return nil // reading goes on at the next gzip member
		}
		return err
	}
	r.emitSpan(s)
	if r.memberOpen {
		r.shared = true
	}
	return nil
}

// junkAfter handles bytes that start no record after rec in its gzip
// member: they are skipped up to the next record line in the member (or
// its end), reported as a span, and Next returns an error for them next.
// A gzip error on the way is the record's own: it is returned (the
// record's member is damaged).
func (r *Reader) junkAfter(rec *Record, from int64) error {
	rec.DataLength = from - rec.DataOffset
	r.span = Span{Offset: r.memberStart, DataOffset: from, Reason: "bytes that start no record follow the record"}
	r.spanFirst = false
	s, _, err := r.skipInMember()
	if err != nil {
		return err
	}
	r.junkSpan(rec, s)
	return nil
}

func (r *Reader) junkSpan(rec *Record, s Span) {
	r.emitSpan(s)
	r.pendErr = r.errorf(r.memberStart, ErrCorrupt, "%d bytes at uncompressed offset %d start no record (after the record at uncompressed offset %d): %s", s.DataLength, s.DataOffset, rec.DataOffset, s.Reason)
}

// recordLineIn returns the offset in b of the first line after from
// that starts a record (a complete line, preceded by a line feed), or -1.
func recordLineIn(b []byte, from, arcVersion int) int {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		if i < len(b) && startsRecord(b[i:], arcVersion) {
			return i
		}
	}
	return -1
}

// isBlank reports whether c is a byte skipped between records.
func isBlank(c byte) bool { return c == '\r' || c == '\n' || c == ' ' || c == '\t' }

// checkWARCLength checks, before a WARC record's block is read, that its
// Content-Length ends where a record (or the data) ends, when the block
// and what follows it are already buffered (no read, no copy: the hot
// path stays as it is). A Content-Length running over the next record's
// header is cut back to it: the record is marked truncated, and the next
// record is not swallowed.
func (r *Reader) checkWARCLength(rec *Record) {
	n := r.br.Buffered()
	end := rec.ContentLength
	if end+16 > int64(n) {
		// A small block not yet buffered is read ahead (at most 64 KiB
		// moved within the buffer, once per buffer fill).
		if end+16 > int64(min(maxCheckAhead, r.br.Size()/4)) {
			return
		}
		b, _ := r.br.Peek(int(end + 16))
		if n = len(b); end+16 > int64(n) {
			return
		}
	}
	b, _ := r.br.Peek(n)
	i := int(end)
	for k := 0; i < len(b) && k < 4 && isBlank(b[i]); k++ {
		i++
	}
	if len(b)-i < len(headerPrefix) || startsWARC(b[i:]) || isBlank(b[i]) {
		return
	}
	// The declared end is not followed by a record: is there a record
	// header inside the declared block?
	j := -1
	lim := min(int(end)+len(headerPrefix), len(b))
	for k := 0; k < int(end); {
		x := bytes.Index(b[k:lim], []byte("\nWARC/"))
		if x < 0 {
			break
		}
		k += x + 1
		if k < int(end) && startsWARC(b[k:]) && hasWARCType(b[k:]) {
			j = k
			break
		}
	}
	if j < 0 {
		return
	}
	blk := j
	for blk > 0 && (b[blk-1] == '\r' || b[blk-1] == '\n') && j-blk < 4 {
		blk--
	}
	rec.anomaly("Content-Length %d runs over the next record's header: the block holds %d bytes", rec.ContentLength, blk)
	rec.ContentLength = int64(blk)
	rec.Truncated = "length"
}

// maxCheckAhead bounds the read-ahead of checkWARCLength.
const maxCheckAhead = 64 << 10

// startsWARC reports whether b starts a WARC version line ("WARC/1.0").
func startsWARC(b []byte) bool {
	return len(b) >= 7 && (bytes.EqualFold(b[:5], []byte(headerPrefix))) && b[5] >= '0' && b[5] <= '9' && b[6] == '.'
}

// hasWARCType reports whether the header block starting b names a
// WARC-Type before its blank line (within b).
func hasWARCType(b []byte) bool {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		end = bytes.Index(b, []byte("\n\n"))
	}
	if end < 0 {
		return false
	}
	return bytes.Contains(bytes.ToLower(b[:end]), []byte("\nwarc-type:"))
}
