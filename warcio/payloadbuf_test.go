package warcio

import (
	"bytes"
	"io"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestPayloadBuffer: with Options.PayloadBuffer the payload is kept in the
// buffers it returns, and equals what the default allocation keeps.
func TestPayloadBuffer(t *testing.T) {
	path := testenv.CorpusWARCs(t)[0]
	for _, p := range testenv.CorpusWARCs(t) {
		if bytes.Contains([]byte(p), []byte("pywb-iana")) {
			path = p
		}
	}
	read := func(opts Options) [][]byte {
		r, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out [][]byte
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec.Payload)
		}
	}
	want := read(Options{KeepPayload: 1 << 20})
	var given [][]byte
	got := read(Options{KeepPayload: 1 << 20, PayloadBuffer: func(n int) []byte {
		b := make([]byte, 0, n+7)
		given = append(given, b)
		return b
	}})
	if len(got) != len(want) || len(given) != len(want) {
		t.Fatalf("%d records, %d buffers asked for, want %d", len(got), len(given), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: payload differs with a supplied buffer", i)
		}
		if len(got[i]) > 0 && &got[i][0] != &given[i][:1][0] {
			t.Errorf("record %d: payload not kept in the supplied buffer", i)
		}
	}
}
