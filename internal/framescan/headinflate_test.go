package framescan

import (
	"bytes"
	stdflate "compress/flate"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/flate"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// reference inflates up to want bytes of the deflate stream in with
// klauspost/compress (the inflater File uses): the bytes it makes before
// the stream ends or fails, and whether it failed before want bytes.
func reference(in []byte, want int) ([]byte, bool) {
	got := make([]byte, want)
	n, err := io.ReadFull(flate.NewReader(bytes.NewReader(in)), got)
	failed := n < want && err != io.EOF && err != io.ErrUnexpectedEOF
	if err == io.ErrUnexpectedEOF {
		// A stream that ended before want bytes: complete only if it
		// reads to its end without error.
		_, err2 := io.Copy(io.Discard, flate.NewReader(bytes.NewReader(in)))
		failed = err2 != nil
	}
	return got[:n], failed
}

// deflateCases returns deflate streams made by two encoders
// (klauspost/compress and the standard library) at every level, stored
// and Huffman-only blocks among them, of text-like and random data,
// flushed mid-stream (empty stored blocks) or not.
func deflateCases(t testing.TB) [][]byte {
	rng := rand.New(rand.NewSource(1))
	words := []string{"WARC/1.1\r\n", "WARC-Type: response\r\n", "WARC-Record-ID: <urn:uuid:", "Content-Type: text/html\r\n",
		"<html>", "the ", "archive ", "\x00\x01", "HTTP/1.1 200 OK\r\n", "2026-11-27T12:00:00Z"}
	var cases [][]byte
	for it := 0; it < 300; it++ {
		var data []byte
		size := rng.Intn(3000)
		if it%7 == 0 {
			size = rng.Intn(40)
		}
		for len(data) < size {
			if rng.Intn(4) == 0 {
				data = append(data, byte(rng.Intn(256)))
			} else {
				data = append(data, words[rng.Intn(len(words))]...)
			}
		}
		if it%11 == 0 {
			// Long runs: matches of the longest length.
			data = append(bytes.Repeat([]byte{'a'}, rng.Intn(700)), data...)
		}
		if it%5 == 0 {
			data = data[:0]
			for len(data) < size {
				data = append(data, byte(rng.Intn(256)))
			}
		}
		level := rng.Intn(12) - 2 // -2 (Huffman only) to 9
		var b bytes.Buffer
		var w io.WriteCloser
		var err error
		if it%2 == 0 {
			w, err = flate.NewWriter(&b, level)
		} else {
			w, err = stdflate.NewWriter(&b, level)
		}
		if err != nil {
			t.Fatal(err)
		}
		if it%3 == 0 && len(data) > 10 {
			cut := rng.Intn(len(data))
			w.Write(data[:cut])
			w.(interface{ Flush() error }).Flush()
			w.Write(data[cut:])
		} else {
			w.Write(data)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, b.Bytes())
	}
	return cases
}

// TestHeadInflaterSameAsReference: on valid streams of two encoders the
// head inflater makes what klauspost/compress makes (the first want
// bytes, all of a shorter stream); given a cut stream it makes those
// bytes or says it cannot; on streams with bytes flipped, whatever it
// makes is what klauspost/compress makes of them (it never makes bytes
// the reference refuses to).
func TestHeadInflaterSameAsReference(t *testing.T) {
	var d headInflater
	buf := make([]byte, 0, 4096)
	rng := rand.New(rand.NewSource(2))
	valid, taken, flipped := 0, 0, 0
	for i, in := range deflateCases(t) {
		for _, want := range []int{1, 100, proveHead, 4000} {
			ref, failed := reference(in, want)
			if failed {
				t.Fatalf("case %d: the reference fails on a valid stream", i)
			}
			got, ok := d.inflate(in, buf, want)
			if !ok || !bytes.Equal(got, ref) {
				t.Fatalf("case %d want %d: head inflater made %d bytes (ok %v), reference %d", i, want, len(got), ok, len(ref))
			}
			valid++
			// Cut short.
			cut := in[:rng.Intn(len(in)+1)]
			if got, ok := d.inflate(cut, buf, want); ok && !bytes.Equal(got, ref) {
				t.Fatalf("case %d want %d cut at %d: made %d bytes that are not the stream's (ok %v)", i, want, len(cut), len(got), ok)
			}
		}
		// Bytes flipped.
		for k := 0; k < 60; k++ {
			bad := bytes.Clone(in)
			for j := 0; j < 1+rng.Intn(3); j++ {
				at := rng.Intn(len(bad))
				if k%2 == 0 {
					at = rng.Intn(min(len(bad), 40)) // where the block's codes are
				}
				bad[at] ^= byte(1 + rng.Intn(255))
			}
			got, ok := d.inflate(bad, buf, proveHead)
			if !ok {
				continue
			}
			taken++
			ref, failed := reference(bad, len(got))
			if failed || !bytes.Equal(got, ref) {
				t.Fatalf("case %d flipped: head inflater made %d bytes the reference does not (it made %d, failed %v)", i, len(got), len(ref), failed)
			}
			flipped++
		}
	}
	if taken == 0 {
		t.Fatal("no damaged stream was decoded: the check of damaged streams checked nothing")
	}
	t.Logf("%d valid heads, %d damaged streams decoded as the reference does", valid, flipped)
}

// bitWriter packs fields LSB first, as deflate does.
type bitWriter struct {
	b  []byte
	nb uint
}

func (w *bitWriter) put(v int, n uint) {
	for i := uint(0); i < n; i++ {
		if w.nb%8 == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>i&1) << (w.nb % 8)
		w.nb++
	}
}

// TestHeadInflaterRefusesBadCodes: dynamic block headers the reference
// refuses — a repeat of the previous length with none before it, more
// literal/length codes than 286 — are refused, not decoded.
func TestHeadInflaterRefusesBadCodes(t *testing.T) {
	// A block header: final, dynamic, HLIT, HDIST, HCLEN, and the code
	// length code giving symbols a and b one bit each (a < b: a is 0).
	header := func(hlit, a, b int) *bitWriter {
		w := &bitWriter{}
		w.put(1, 1)
		w.put(2, 2)
		w.put(hlit, 5)
		w.put(0, 5) // one distance code
		last := 0
		for i, s := range clOrder {
			if int(s) == a || int(s) == b {
				last = i
			}
		}
		w.put(last+1-4, 4)
		for _, s := range clOrder[:last+1] {
			if int(s) == a || int(s) == b {
				w.put(1, 3)
			} else {
				w.put(0, 3)
			}
		}
		return w
	}
	cases := map[string][]byte{}
	// Repeat (16) first: 8 is code 0, 16 code 1.
	w := header(0, 8, 16)
	w.put(1, 1)
	w.put(0, 2)
	cases["repeat first"] = append(w.b, make([]byte, 64)...)
	// 287 literal/length codes.
	w = header(30, 0, 8)
	cases["287 codes"] = append(w.b, make([]byte, 64)...)
	var d headInflater
	for name, in := range cases {
		if _, failed := reference(in, 10); !failed {
			t.Fatalf("%s: the reference takes it (the case is not what it says)", name)
		}
		if got, ok := d.inflate(in, nil, 10); ok {
			t.Errorf("%s: decoded as %q", name, got)
		}
	}
}

// TestHeadInflaterTakesCorpusMembers: on every gzip member of the shared
// corpus (WARC and ARC, several writers) the head inflater makes the
// member's first proveHead bytes from its first proveInput stored bytes,
// as Tap's start proof asks of it — so the proof does not fall back to
// the general inflater, which costs twice as much.
func TestHeadInflaterTakesCorpusMembers(t *testing.T) {
	files := append(testenv.CorpusWARCs(t), testenv.CorpusARCs(t)...)
	var d headInflater
	members := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			continue
		}
		src := &mappedSource{data: data, release: func(int64) {}}
		for off := int64(0); off < int64(len(data)); {
			h, ok := gzipHeaderLen(src, off, int64(len(data)), new([10]byte))
			if !ok {
				t.Fatalf("%s: no gzip member at %d", filepath.Base(p), off)
			}
			br := bytes.NewReader(data[off+h:])
			var out bytes.Buffer
			if _, err := io.Copy(&out, flate.NewReader(br)); err != nil {
				t.Fatalf("%s offset %d: %v", filepath.Base(p), off, err)
			}
			n := int64(len(data)) - off - h - int64(br.Len())
			head := out.Bytes()[:min(out.Len(), proveHead)]
			in := data[off+h : off+h+min(n, proveInput)]
			if got, ok := d.inflate(in, nil, len(head)); !ok || !bytes.Equal(got, head) {
				t.Errorf("%s offset %d: the head inflater made %d bytes (ok %v), not the member's first %d", filepath.Base(p), off, len(got), ok, len(head))
			}
			members++
			off += h + n + 8
		}
	}
	if members < 100 {
		t.Fatalf("only %d corpus members", members)
	}
	t.Logf("%d members", members)
}

// FuzzHeadInflater: on any input the head inflater does not panic, and
// whatever it makes klauspost/compress makes of the same bytes. (go test
// runs the seeds; go test -fuzz=FuzzHeadInflater searches further.)
func FuzzHeadInflater(f *testing.F) {
	for i, in := range deflateCases(f) {
		if i%10 == 0 {
			f.Add(in)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var d headInflater
		got, ok := d.inflate(in, nil, proveHead)
		if !ok {
			return
		}
		if ref, failed := reference(in, len(got)); failed || !bytes.Equal(got, ref) {
			t.Fatalf("made %d bytes the reference does not (it made %d, failed %v)", len(got), len(ref), failed)
		}
	})
}
