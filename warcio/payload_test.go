package warcio

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// TestOnHeadAndPayload streams every payload of the corpus through
// Options.Payload and compares it with the bytes KeepPayload keeps; OnHead
// sees each record with its headers and HTTP head before any payload byte.
func TestOnHeadAndPayload(t *testing.T) {
	n := 0
	for _, path := range testenv.CorpusWARCs(t) {
		kept, err := Open(path, Options{KeepPayload: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		var seen *Record
		streamed, err := Open(path, Options{Payload: &buf, OnHead: func(rec *Record) {
			if rec.Type == "" || buf.Len() != 0 {
				t.Errorf("%s: OnHead before the headers were parsed or after payload bytes: %+v", path, rec)
			}
			seen = rec
		}})
		if err != nil {
			t.Fatal(err)
		}
		for {
			a, errA := kept.Next()
			b, errB := streamed.Next()
			if (errA == nil) != (errB == nil) {
				t.Fatalf("%s: %v vs %v", path, errA, errB)
			}
			if errA != nil {
				if errors.Is(errA, io.EOF) || errors.Is(errA, ErrTruncated) {
					break
				}
				continue
			}
			if seen != b {
				t.Fatalf("%s offset %d: callback not called for the record", path, b.Offset)
			}
			if !bytes.Equal(a.Payload, buf.Bytes()) || int64(buf.Len()) != b.PayloadLength {
				t.Fatalf("%s offset %d: streamed %d bytes, kept %d, payload length %d", path, b.Offset, buf.Len(), len(a.Payload), b.PayloadLength)
			}
			if b.HTTP == nil && a.HTTP != nil {
				t.Fatalf("%s offset %d: no HTTP head", path, b.Offset)
			}
			buf.Reset()
			n++
		}
		kept.Close()
		streamed.Close()
	}
	if n < 500 {
		t.Fatalf("only %d records compared", n)
	}
}
