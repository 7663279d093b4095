package warcio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func addReaderSeeds(f *testing.F) {
	data, _ := build(false,
		rec{typ: "response", uri: "http://a/", block: httpResp("hello")},
		rec{typ: "resource", uri: "http://b/", block: "x", eol: "\n", trailer: "\n\n"})
	f.Add(data)
	gzData, _ := build(true,
		rec{typ: "response", uri: "http://a/", block: httpResp("5\r\nhello\r\n0\r\n\r\n", "Transfer-Encoding: chunked")},
		rec{typ: "revisit", uri: "http://a/", block: "HTTP/1.1 304 Not Modified\r\n\r\n", version: "1.1"})
	f.Add(gzData)
	f.Add(gzData[:len(gzData)/2])
	f.Add([]byte("WARC/1.0\r\nContent-Length: 99999999999\r\n\r\n"))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"))
	// Snippets of the real corpus when it is there.
	dir := filepath.Join("..", "..", "shared", "corpus", "warc")
	for _, name := range []string{"warcio-example.warc.gz", "npmwarc-CC-MAIN-20140820021334-00006.warc", "20141124-heritrix-server-not-modified.warc.gz"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			f.Add(b[:min(len(b), 4096)])
		}
	}
}

// FuzzReader: any input reads to an end without panicking, every error is
// an *Error of a known kind, and records lie inside the input in order.
func FuzzReader(f *testing.F) {
	addReaderSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "fuzz.warc", Options{KeepPayload: 64})
		last := int64(-1)
		for i := 0; ; i++ {
			if i > len(data)+10 {
				t.Fatalf("no end after %d calls", i)
			}
			rec, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || !(errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt)) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				if !strings.HasPrefix(err.Error(), "warcio: fuzz.warc offset ") {
					t.Fatalf("message %q", err)
				}
				continue
			}
			if rec.Offset < last || rec.Length < 0 || rec.End() > int64(len(data)) {
				t.Fatalf("record at %d length %d (previous at %d, input %d bytes)", rec.Offset, rec.Length, last, len(data))
			}
			if rec.PayloadLength < int64(len(rec.Payload)) {
				t.Fatalf("payload length %d < kept %d", rec.PayloadLength, len(rec.Payload))
			}
			last = rec.Offset
		}
	})
}

// FuzzParseHTTP: no panic, and the payload is never longer than the input.
func FuzzParseHTTP(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\nfffffff\nab"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var buf bytes.Buffer
		info, err := ParseHTTP(bytes.NewReader(data), &buf)
		if err != nil {
			return
		}
		if info.PayloadLength != int64(buf.Len()) || info.PayloadLength > int64(len(data)) || info.HeadLength > int64(len(data)) {
			t.Fatalf("payload %d (written %d) head %d of %d input bytes", info.PayloadLength, buf.Len(), info.HeadLength, len(data))
		}
	})
}
