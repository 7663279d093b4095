package ukvs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/wayside-archive/wayside/internal/excerpt"
)

// Error locates a problem in a UKVS input.
type Error struct {
	File string
	Line int64
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("ukvs: %s:%d: %v", e.File, e.Line, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// ErrUnsorted reports a key that is not greater than the one before it.
var ErrUnsorted = errors.New("keys out of byte order")

// ReaderOptions tunes a Reader.
type ReaderOptions struct {
	// SkipBad skips malformed and out-of-order lines instead of failing;
	// Skipped counts them and OnSkip (when set) sees each.
	SkipBad bool
	OnSkip  func(err *Error)
	// AllowUnsorted accepts data lines in any order (e.g. before sorting).
	AllowUnsorted bool
}

// Reader reads a UKVS file: headers first, then data records.
type Reader struct {
	br      *bufio.Reader
	name    string
	opts    ReaderOptions
	line    int64
	off     int64 // bytes consumed
	lstart  int64 // offset of the last line read
	dataOff int64 // offset of the first data line (after Headers)
	headers []Header
	pending []byte // first data line, read while collecting headers
	havePen bool
	long    []byte
	prev    []byte
	started bool
	skipped int64
}

// NewReader returns a reader of r; name is used in errors (a file name).
func NewReader(r io.Reader, name string, opts ReaderOptions) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 1<<16), name: name, opts: opts}
}

// Skipped returns how many bad lines were skipped (SkipBad).
func (r *Reader) Skipped() int64 { return r.skipped }

// Offset returns the byte offset of the start of the line last read.
func (r *Reader) Offset() int64 { return r.lstart }

// DataOffset returns the byte offset of the first data line (the input's
// size when there is none); valid after Headers.
func (r *Reader) DataOffset() int64 { return r.dataOff }

// SetLine sets the number of the line last read (when reading a section
// of a file that starts at a known line).
func (r *Reader) SetLine(n int64) { r.line = n }

// Line returns the number of the line last read.
func (r *Reader) Line() int64 { return r.line }

func (r *Reader) readLine() ([]byte, error) {
	b, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.long = append(r.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = r.br.ReadSlice('\n')
			r.long = append(r.long, b...)
		}
		b = r.long
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &Error{File: r.name, Line: r.line + 1, Err: err}
	}
	if len(b) == 0 && err != nil {
		return nil, io.EOF
	}
	r.line++
	r.lstart = r.off
	r.off += int64(len(b))
	return bytes.TrimSuffix(b, []byte{'\n'}), nil
}

func (r *Reader) fail(err error) error {
	e := &Error{File: r.name, Line: r.line, Err: err}
	if !r.opts.SkipBad {
		return e
	}
	r.skipped++
	if r.opts.OnSkip != nil {
		r.opts.OnSkip(e)
	}
	return nil
}

func isEmptyLine(b []byte) bool {
	if len(b) > 0 && b[0] > ' ' {
		return false // the common case, without scanning the line
	}
	return len(bytes.TrimSpace(b)) == 0
}

// Headers reads and returns the header lines (reading stops at the first
// data line, which Next returns first).
func (r *Reader) Headers() ([]Header, error) {
	if r.started {
		return r.headers, nil
	}
	r.started = true
	for {
		b, err := r.readLine()
		if err == io.EOF {
			r.dataOff = r.off
			return r.headers, nil
		}
		if err != nil {
			return nil, err
		}
		if isEmptyLine(b) {
			continue
		}
		if b[0] != '!' {
			r.dataOff = r.lstart
			r.pending = append(r.pending[:0], b...)
			r.havePen = true
			return r.headers, nil
		}
		h, err := ParseHeader(b)
		if err != nil {
			if err := r.fail(err); err != nil {
				return nil, err
			}
			continue
		}
		r.headers = append(r.headers, h)
	}
}

// Next returns the next data record, or io.EOF. The record's bytes are
// valid until the next call.
func (r *Reader) Next() (Record, error) {
	if !r.started {
		if _, err := r.Headers(); err != nil {
			return Record{}, err
		}
	}
	for {
		var b []byte
		if r.havePen {
			b, r.havePen = r.pending, false
		} else {
			var err error
			if b, err = r.readLine(); err != nil {
				return Record{}, err
			}
		}
		if isEmptyLine(b) {
			continue
		}
		if b[0] == '!' {
			if err := r.fail(errors.New("header line after data lines (headers must come first)")); err != nil {
				return Record{}, err
			}
			continue
		}
		rec, err := ParseRecord(b)
		if err != nil {
			if err := r.fail(err); err != nil {
				return Record{}, err
			}
			continue
		}
		if !r.opts.AllowUnsorted {
			if r.prev != nil && bytes.Compare(rec.Key, r.prev) <= 0 {
				err := fmt.Errorf("%w: %s after %s", ErrUnsorted, excerpt.Quote(rec.Key, 80), excerpt.Quote(r.prev, 80))
				if err := r.fail(err); err != nil {
					return Record{}, err
				}
				continue
			}
			r.prev = append(r.prev[:0], rec.Key...)
			if r.prev == nil {
				r.prev = []byte{}
			}
		}
		return rec, nil
	}
}
