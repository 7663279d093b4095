package ukvs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/wayside-archive/wayside/internal/excerpt"
)

// Writer writes a strict UKVS file: headers first, then data records in
// strictly increasing byte order of their keys.
type Writer struct {
	bw   *bufio.Writer
	buf  []byte
	prev []byte
	data bool
	n    int64
}

// NewWriter returns a writer to w. Call Flush at the end.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 1<<16)}
}

// WriteHeader writes a header line; it fails after the first data record.
func (w *Writer) WriteHeader(h Header) error {
	if w.data {
		return errors.New("ukvs: header after data records")
	}
	if h.Name == "" || bytes.ContainsAny([]byte(h.Name), " \t\r\n") {
		return fmt.Errorf("ukvs: invalid header name %q", h.Name)
	}
	if bytes.ContainsAny(h.Value, "\r\n") {
		return fmt.Errorf("ukvs: header !%s spans lines", h.Name)
	}
	w.buf = AppendHeader(w.buf[:0], h)
	_, err := w.bw.Write(w.buf)
	return err
}

// Write writes a data record. Keys must be valid and strictly increasing;
// the JSON block, when present, must be a strict single-line JSON object.
func (w *Writer) Write(r Record) error {
	if err := ValidKey(r.Key); err != nil {
		return fmt.Errorf("ukvs: write: %w", err)
	}
	if w.data && bytes.Compare(r.Key, w.prev) <= 0 {
		return fmt.Errorf("ukvs: write: %w: %s after %s", ErrUnsorted, excerpt.Quote(r.Key, 80), excerpt.Quote(w.prev, 80))
	}
	if len(r.JSON) > 0 && (r.JSON[0] != '{' || !json.Valid(r.JSON) || bytes.ContainsAny(r.JSON, "\r\n")) {
		return fmt.Errorf("ukvs: write %s: JSON block is not a single-line JSON object", excerpt.Quote(r.Key, 80))
	}
	w.data = true
	w.prev = append(w.prev[:0], r.Key...)
	w.buf = AppendRecord(w.buf[:0], r)
	w.n++
	_, err := w.bw.Write(w.buf)
	return err
}

// Records returns the number of data records written.
func (w *Writer) Records() int64 { return w.n }

// Flush writes buffered data to the underlying writer.
func (w *Writer) Flush() error { return w.bw.Flush() }
