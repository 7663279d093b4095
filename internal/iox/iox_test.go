package iox_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wayside-archive/wayside/internal/iox"
)

// shortWriter accepts at most max bytes in all, then fails.
type shortWriter struct {
	buf bytes.Buffer
	max int
}

var errFull = errors.New("full")

func (s *shortWriter) Write(p []byte) (int, error) {
	if room := s.max - s.buf.Len(); len(p) > room {
		s.buf.Write(p[:room])
		return room, errFull
	}
	return s.buf.Write(p)
}

func TestCountWriter(t *testing.T) {
	sw := &shortWriter{max: 10}
	cw := &iox.CountWriter{W: sw}
	if _, err := io.WriteString(cw, "hello "); err != nil {
		t.Fatal(err)
	}
	// Only the bytes the underlying writer accepted are counted.
	if _, err := io.WriteString(cw, "world!"); !errors.Is(err, errFull) {
		t.Fatalf("second write = %v, want errFull", err)
	}
	if cw.N != 10 || sw.buf.String() != "hello worl" {
		t.Fatalf("N = %d, wrote %q; want 10, \"hello worl\"", cw.N, sw.buf.String())
	}
}

func TestCountReader(t *testing.T) {
	src := strings.Repeat("abc", 1000)
	cr := &iox.CountReader{R: iotest.OneByteReader(strings.NewReader(src))}
	b, err := io.ReadAll(cr)
	if err != nil || string(b) != src {
		t.Fatalf("ReadAll = %d bytes, %v", len(b), err)
	}
	if cr.N != int64(len(src)) {
		t.Fatalf("N = %d, want %d", cr.N, len(src))
	}
}
