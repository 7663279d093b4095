//go:build cgo

package libdeflate

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"golang.org/x/sys/cpu"
)

// payload returns n bytes: text-like (compressible) or random.
func payload(rng *rand.Rand, n int, random bool) []byte {
	b := make([]byte, n)
	if random {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	words := []string{"WARC/1.1\r\n", "Content-Length: ", "<div class=\"x\">", "http://example.com/", "\r\n\r\n", "the ", "archive "}
	for i := 0; i < n; {
		w := words[rng.IntN(len(words))]
		i += copy(b[i:], w)
		if rng.IntN(5) == 0 && i < n {
			b[i] = byte('a' + rng.IntN(26))
			i++
		}
	}
	return b
}

// member gzips data with the stdlib (std) or klauspost writer at level.
func member(t *testing.T, data []byte, std bool, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	if std {
		w, err = stdgzip.NewWriterLevel(&buf, level)
	} else {
		w, err = kgzip.NewWriterLevel(&buf, level)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// klauspost inflates the first member of b as the pure-Go path does,
// returning what it inflated and the stored length it used.
func klauspost(b []byte) ([]byte, int, error) {
	br := bytes.NewReader(b)
	zr, err := kgzip.NewReader(br)
	if err != nil {
		return nil, 0, err
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	return out, len(b) - br.Len(), err
}

// TestGzipMembers: members written by two other encoders, of many sizes
// and every level, inflate to their data; the stored length reported is
// the member's exactly, whatever follows it; a buffer one byte short is
// ErrInsufficientSpace, an exact one is enough.
func TestGzipMembers(t *testing.T) {
	if !Available() {
		t.Fatal("libdeflate not built in: this test needs cgo")
	}
	rng := rand.New(rand.NewPCG(27, 1))
	d := New()
	sizes := []int{0, 1, 2, 100, 4095, 65535, 65536, 65537, 300_000, 1 << 20}
	levels := []int{kgzip.HuffmanOnly, kgzip.NoCompression, kgzip.BestSpeed, 2, 5, kgzip.DefaultCompression, kgzip.BestCompression}
	next := []byte{0x1f, 0x8b, 0x08, 0, 'j', 'u', 'n', 'k'}
	n := 0
	for _, size := range sizes {
		for _, random := range []bool{false, true} {
			data := payload(rng, size, random)
			for _, level := range levels {
				for _, std := range []bool{false, true} {
					if size > 300_000 && (std || level != kgzip.DefaultCompression) {
						continue // one large member is enough (the race detector makes encoding slow)
					}
					m := member(t, data, std, level)
					in := append(append([]byte(nil), m...), next...)
					out := make([]byte, size+int(rng.IntN(100)))
					inLen, outLen, err := d.Gzip(in, out)
					if err != nil || inLen != len(m) || !bytes.Equal(out[:outLen], data) {
						t.Fatalf("size %d random %v level %d std %v: in %d (member %d) out %d, %v", size, random, level, std, inLen, len(m), outLen, err)
					}
					kout, kin, kerr := klauspost(in)
					if kerr != nil || kin != inLen || !bytes.Equal(kout, data) {
						t.Fatalf("klauspost disagrees: in %d, %v", kin, kerr)
					}
					if _, _, err := d.Gzip(m, out[:size]); err != nil {
						t.Fatalf("exact buffer: %v", err)
					}
					if size > 0 {
						if _, _, err := d.Gzip(m, out[:size-1]); !errors.Is(err, ErrInsufficientSpace) {
							t.Fatalf("size %d into %d bytes: %v, want ErrInsufficientSpace", size, size-1, err)
						}
					}
					n++
				}
			}
		}
	}
	t.Logf("%d members, impl %s", n, Impl())
}

// TestDamage: garbage, every truncation of a member and flipped bytes give
// an error, never a crash; whenever libdeflate does accept a damaged
// member (a flip in the header's time stamp, or in padding bits), the
// pure-Go inflater accepts it too, with the same bytes and stored length.
func TestDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	d := New()
	out := make([]byte, 1<<20)
	for i := range 2000 {
		g := payload(rng, rng.IntN(4096), true)
		if i%2 == 0 && len(g) >= 3 {
			g[0], g[1], g[2] = 0x1f, 0x8b, 0x08 // a plausible header, then garbage
		}
		if _, _, err := d.Gzip(g, out); !errors.Is(err, ErrBadData) {
			t.Fatalf("garbage %d (%d bytes): %v", i, len(g), err)
		}
	}
	data := payload(rng, 20_000, false)
	m := member(t, data, false, 6)
	for n := range len(m) {
		if _, _, err := d.Gzip(m[:n], out); !errors.Is(err, ErrBadData) {
			t.Fatalf("member cut to %d of %d bytes: %v", n, len(m), err)
		}
	}
	accepted := 0
	for i := range 3000 {
		b := append([]byte(nil), m...)
		at := rng.IntN(len(b))
		b[at] ^= byte(1 + rng.IntN(255))
		inLen, outLen, err := d.Gzip(b, out)
		kout, kin, kerr := klauspost(b)
		if err != nil {
			continue
		}
		accepted++
		if kerr != nil || kin != inLen || !bytes.Equal(kout, out[:outLen]) {
			t.Fatalf("flip %d at %d: libdeflate accepted (in %d) what klauspost did not or read differently (in %d, %v)", i, at, inLen, kin, kerr)
		}
	}
	t.Logf("%d of 3000 flipped members still valid (header fields, padding)", accepted)
}

// TestImpl: on an x86-64 CPU with BMI2 the run-time dispatch picks the
// BMI2 decompressor.
func TestImpl(t *testing.T) {
	want := "generic"
	if (runtime.GOARCH == "amd64" || runtime.GOARCH == "386") && cpu.X86.HasBMI2 {
		want = "bmi2"
	}
	if got := Impl(); got != want {
		t.Fatalf("Impl() = %q, want %q", got, want)
	}
}
