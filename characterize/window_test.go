package characterize

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// siegfried reads at most the first and the last reach bytes: never the
// middle of an object.
func TestSlicerReach(t *testing.T) {
	b := make([]byte, 100)
	for i := range b {
		b[i] = byte(i)
	}
	s := slicer{b: b, reach: 10}
	cases := []struct {
		name    string
		got     func() ([]byte, error)
		want    []byte
		wantEOF bool
	}{
		{"start", func() ([]byte, error) { return s.Slice(0, 4) }, b[0:4], false},
		{"up to the reach", func() ([]byte, error) { return s.Slice(6, 4) }, b[6:10], false},
		{"across the reach", func() ([]byte, error) { return s.Slice(8, 20) }, b[8:10], true},
		{"beyond the reach", func() ([]byte, error) { return s.Slice(50, 4) }, nil, true},
		{"end", func() ([]byte, error) { return s.EofSlice(0, 4) }, b[96:100], false},
		{"end, up to the reach", func() ([]byte, error) { return s.EofSlice(6, 4) }, b[90:94], false},
		{"end, across the reach", func() ([]byte, error) { return s.EofSlice(5, 20) }, b[90:95], true},
		{"end, beyond the reach", func() ([]byte, error) { return s.EofSlice(10, 4) }, nil, true},
	}
	for _, c := range cases {
		got, err := c.got()
		if !bytes.Equal(got, c.want) || errors.Is(err, io.EOF) != c.wantEOF {
			t.Errorf("%s: got %v, %v; want %v (EOF %v)", c.name, got, err, c.want, c.wantEOF)
		}
	}
	if s.Size() != 100 {
		t.Errorf("Size = %d, want the whole length", s.Size())
	}
	whole := slicer{b: b, reach: 100}
	if got, err := whole.Slice(90, 20); !bytes.Equal(got, b[90:]) || err != io.EOF {
		t.Errorf("whole: Slice(90, 20) = %v, %v", got, err)
	}
}

// Objects longer than two scan windows are identified from their two ends
// as when siegfried reads them whole: signatures anchored at the start
// and the end are within reach.
func TestScanWindowKeepsAnchoredSignatures(t *testing.T) {
	e := testEngine(t)
	middle := bytes.Repeat([]byte("0123456789abcdef\n"), 20000) // 340 KB
	for _, c := range []struct{ name, head, tail, want string }{
		{"a.pdf", "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "\ntrailer\n<< /Root 1 0 R >>\nstartxref\n9\n%%EOF\n", "fmt/18"},
		{"a.gif", "GIF89a\x01\x00\x01\x00\x80\x00\x00", "\x00;", "fmt/4"},
	} {
		b := append(append([]byte(c.head), middle...), c.tail...)
		windowed := e.identify(b, c.name, "", 64<<10)
		whole := e.identify(b, c.name, "", -1)
		if windowed.PUID != c.want || whole.PUID != c.want {
			t.Errorf("%s: windowed %s, whole %s; want %s", c.name, windowed.PUID, whole.PUID, c.want)
		}
	}
}
