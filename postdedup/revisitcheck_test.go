package postdedup

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/libdeflate"
	"github.com/wayside-archive/wayside/warcio"
)

// TestRevisitInflateFast: the one-call inflation validation reads
// revisits with gives the streaming reader's bytes for a member as
// Wayside's encoder writes it, and refuses (leaving the streaming reader
// to name the fault) a member with bytes after it, a damaged deflate
// stream or trailer, a lying ISIZE and a header with optional fields.
func TestRevisitInflateFast(t *testing.T) {
	mw, err := warcio.NewMemberWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("WARC/1.1\r\nWARC-Type: revisit\r\n" + strings.Repeat("Header: value\r\n", 40) + "\r\n")
	var good bytes.Buffer
	if _, err := mw.WriteMember(&good, plain); err != nil {
		t.Fatal(err)
	}
	var k revisitChecker
	got, ok := k.inflateFast(good.Bytes())
	if !libdeflate.Available() {
		// Without cgo every member is left to the streaming reader.
		if ok {
			t.Fatal("the fast path took a member without libdeflate")
		}
	} else if !ok || !bytes.Equal(got, plain) {
		t.Fatalf("fast path on a good member: ok %v, %d bytes (want %d)", ok, len(got), len(plain))
	}
	if msg := k.inflateStream(good.Bytes()); msg != "" || !bytes.Equal(k.plain.Bytes(), plain) {
		t.Fatalf("streaming reader on a good member: %q", msg)
	}
	g := good.Bytes()
	n := len(g)
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   string // what the streaming reader then says
	}{
		{"bytes after", func(b []byte) []byte { return append(b, 0x1f, 0x8b, 8, 0) }, "bytes after"},
		{"deflate byte", func(b []byte) []byte { b[n/2] ^= 0x10; return b }, "gzip"},
		{"crc", func(b []byte) []byte { b[n-8] ^= 1; return b }, "gzip"},
		{"isize", func(b []byte) []byte { b[n-4]++; return b }, "gzip"},
		{"cut", func(b []byte) []byte { return b[:n-1] }, "gzip"},
		{"header crc flag", func(b []byte) []byte { b[3] |= 0x02; return b }, "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.damage(bytes.Clone(g))
			if _, ok := k.inflateFast(b); ok {
				t.Fatal("the fast path took a member Wayside's encoder does not write")
			}
			if msg := k.inflateStream(b); !strings.Contains(msg, tc.want) {
				t.Fatalf("streaming reader: %q, want it to say %q", msg, tc.want)
			}
		})
	}
}
