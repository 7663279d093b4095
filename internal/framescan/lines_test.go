package framescan

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// slicesOf passes data as the given slices.
type slicesOf struct{ parts [][]byte }

func (s *slicesOf) next() ([]byte, bool) {
	if len(s.parts) == 0 {
		return nil, false
	}
	p := s.parts[0]
	s.parts = s.parts[1:]
	return p, true
}

// TestSliceLinesSameAsBufio: sliceLines returns, call for call, what a
// bufio.Reader of lineBuf bytes returns from the same bytes — lines,
// pieces of lines longer than lineBuf, Peek near and across slice ends,
// the end — however the bytes are cut into slices (empty, one byte, cut
// inside a CRLF, longer than lineBuf).
func TestSliceLinesSameAsBufio(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		// Lines of lengths from 0 to three buffers, some ending the data
		// without a line feed.
		var data []byte
		for range rng.IntN(40) {
			n := rng.IntN(64)
			switch rng.IntN(8) {
			case 0:
				n = rng.IntN(3 * lineBuf)
			case 1:
				n = lineBuf - 2 + rng.IntN(4)
			}
			for range n {
				data = append(data, "ab \r0:"[rng.IntN(6)])
			}
			if rng.IntN(10) > 0 {
				data = append(data, '\n')
			}
		}
		var parts [][]byte
		for rest := data; len(rest) > 0 || rng.IntN(4) == 0; {
			n := 0
			switch rng.IntN(5) {
			case 0:
				n = rng.IntN(2)
			case 1:
				n = rng.IntN(2 * lineBuf)
			default:
				n = rng.IntN(300)
			}
			n = min(n, len(rest))
			parts = append(parts, rest[:n])
			rest = rest[n:]
			if len(rest) == 0 && rng.IntN(2) == 0 {
				break
			}
		}
		var sl sliceLines
		sl.reset(&slicesOf{parts: parts})
		br := bufio.NewReaderSize(bytes.NewReader(data), lineBuf)
		for step := 0; ; step++ {
			where := fmt.Sprintf("round %d step %d", round, step)
			if rng.IntN(6) == 0 {
				n := 1 + rng.IntN(16)
				got, gerr := sl.Peek(n)
				want, werr := br.Peek(n)
				if !bytes.Equal(got, want) || gerr != werr {
					t.Fatalf("%s: Peek(%d) = %q, %v; bufio %q, %v", where, n, got, gerr, want, werr)
				}
			}
			got, gerr := sl.ReadSlice('\n')
			want, werr := br.ReadSlice('\n')
			if !bytes.Equal(got, want) || gerr != werr {
				t.Fatalf("%s: ReadSlice = %d bytes %q..., %v; bufio %d bytes %q..., %v", where, len(got), got[:min(len(got), 20)], gerr, len(want), want[:min(len(want), 20)], werr)
			}
			if werr != nil && werr != bufio.ErrBufferFull {
				break
			}
		}
	}
}

// TestAppendKey: AppendKey appends what Key returns, for a record with an
// ID and for one without (URI and date).
func TestAppendKey(t *testing.T) {
	for _, r := range []Record{
		{ID: "<urn:uuid:1>", URI: "http://x/", Date: "2024"},
		{URI: "http://x/ y", Date: "20240301080000"},
		{},
	} {
		if got := string(r.AppendKey([]byte("prefix"))); got != "prefix"+r.Key() {
			t.Errorf("%+v: AppendKey gives %q, Key %q", r, got, r.Key())
		}
	}
}
