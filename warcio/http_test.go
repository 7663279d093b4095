package warcio

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/digest"
)

func sha1of(s string) string { return digest.Of(digest.SHA1, []byte(s)).String() }

func TestParseHTTPResponseChunking(t *testing.T) {
	for _, tc := range []struct {
		name, wire, payload string
		chunked, fallback   bool
	}{
		{"plain", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "hello", false, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world", true, false},
		{"chunk extensions and trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n5;name=v\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n", "hello", true, false},
		{"LF-only framing", "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n5\nhello\n0\n\n", "hello", true, false},
		{"upper-case hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", "0123456789", true, false},
		{"truncated inside a chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort", "short", true, false},
		{"declared chunked but stored de-chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n<html>body</html>", "<html>body</html>", true, true},
		{"broken framing after one chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\nrest", "abczz\r\nrest", true, true},
		{"content encoding kept", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n\x1f\x8b\x08\x00rawgzipbytes", "\x1f\x8b\x08\x00rawgzipbytes", false, false},
		{"no body", "HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n", "", false, false},
		{"head without blank line", "HTTP/1.1 304 Not Modified\r\nETag: x\r\n", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ParseHTTPResponse(strings.NewReader(tc.wire))
			if err != nil {
				t.Fatal(err)
			}
			if info.PayloadDigest != sha1of(tc.payload) || info.PayloadLength != int64(len(tc.payload)) {
				t.Errorf("digest %s length %d, want %s %d", info.PayloadDigest, info.PayloadLength, sha1of(tc.payload), len(tc.payload))
			}
			if info.Chunked != tc.chunked || info.ChunkFallback != tc.fallback {
				t.Errorf("chunked %v fallback %v, want %v %v", info.Chunked, info.ChunkFallback, tc.chunked, tc.fallback)
			}
			var buf bytes.Buffer
			if _, err := ParseHTTP(strings.NewReader(tc.wire), &buf); err != nil || buf.String() != tc.payload {
				t.Errorf("ParseHTTP payload %q, %v; want %q", buf.String(), err, tc.payload)
			}
		})
	}
}

func TestParseHTTPHead(t *testing.T) {
	wire := "HTTP/1.0 404 Not  Found\r\nContent-Type: text/html;charset=x\r\nX-Folded: a\r\n\tb\r\nSet-Cookie: 1\r\nSet-Cookie: 2\r\n\r\nbody"
	info, err := ParseHTTPResponse(strings.NewReader(wire))
	if err != nil {
		t.Fatal(err)
	}
	if info.Proto != "HTTP/1.0" || info.Status != 404 || info.Reason != "Not  Found" {
		t.Errorf("start line %q %d %q", info.Proto, info.Status, info.Reason)
	}
	if info.Header.Get("x-folded") != "a b" || len(info.Header.Values("set-cookie")) != 2 || MediaType(info.Header.Get("content-type")) != "text/html" {
		t.Errorf("headers %+v", info.Header)
	}
	if want := int64(len(wire) - len("body")); info.HeadLength != want {
		t.Errorf("HeadLength %d, want %d", info.HeadLength, want)
	}
	req, err := ParseHTTP(strings.NewReader("POST /form?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\na=b"), nil)
	if err != nil || req.Method != "POST" || req.Target != "/form?x=1" || req.IsResponse() || req.PayloadDigest != sha1of("a=b") {
		t.Errorf("request %+v, %v", req, err)
	}
	for _, bad := range []string{"", "HTTP/1.1 abc\r\n\r\n", "not http at all"} {
		if _, err := ParseHTTPResponse(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseHTTPResponse(%q) succeeded", bad)
		}
	}
}

// TestParseHTTPResponseFromRealServer records the bytes a real net/http
// server sends (chunked, gzip content encoding) off a TCP connection and
// checks the payload digest is that of the gzip entity the handler wrote.
func TestParseHTTPResponseFromRealServer(t *testing.T) {
	var entity bytes.Buffer
	zw := gzip.NewWriter(&entity)
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(zw, "line %d of a page served chunked\n", i)
	}
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain")
		b := entity.Bytes()
		for len(b) > 0 { // several writes with flushes force chunking
			n := min(len(b), 1500)
			w.Write(b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
	}))
	defer srv.Close()
	conn, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n", srv.Listener.Addr())
	wire, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil {
		t.Fatal(err)
	}
	info, err := ParseHTTPResponse(bytes.NewReader(wire))
	if err != nil {
		t.Fatal(err)
	}
	if !info.Chunked || info.ChunkFallback {
		t.Fatalf("response not de-chunked (chunked=%v fallback=%v)", info.Chunked, info.ChunkFallback)
	}
	if want := digest.Of(digest.SHA1, entity.Bytes()).String(); info.PayloadDigest != want || info.PayloadLength != int64(entity.Len()) {
		t.Fatalf("digest %s length %d, want %s %d", info.PayloadDigest, info.PayloadLength, want, entity.Len())
	}
	if raw := digest.Of(digest.SHA1, wire[info.HeadLength:]).String(); raw == info.PayloadDigest {
		t.Fatal("raw chunked body digests like the entity: the test does not exercise de-chunking")
	}
}

// TestRequestLineMatchesFields compares the request line split without
// allocating with strings.Fields, which it stands for.
func TestRequestLineMatchesFields(t *testing.T) {
	for _, l := range []string{
		"GET / HTTP/1.1", "GET  /a?b=c   HTTP/1.0 ", "\tPOST\t/x\vHTTP/1.1\f", "GET /x", "GET", "", "   ",
		"GET /x y HTTP/1.1", "GET\u00a0/x HTTP/1.1 z", "GET /caf\u00e9 HTTP/1.1", "GET /x\u0085HTTP/1.1 q",
	} {
		m, tg, p, ok := requestLine(l)
		f := strings.Fields(l)
		if ok != (len(f) >= 3) {
			t.Errorf("requestLine(%q): ok %v, fields %q", l, ok, f)
			continue
		}
		if ok && (m != f[0] || tg != f[1] || p != f[len(f)-1]) {
			t.Errorf("requestLine(%q) = %q %q %q, fields %q", l, m, tg, p, f)
		}
	}
}
