package warcio

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/excerpt"
)

// maxHTTPHead bounds the bytes of an HTTP start line plus headers.
const maxHTTPHead = 1 << 20

// HTTPInfo is the parsed HTTP message in a WARC record block (or in bytes a
// crawler recorded off the wire).
type HTTPInfo struct {
	// Proto is "HTTP/1.1" etc. Status and Reason are set for responses;
	// Method and Target for requests.
	Proto  string
	Status int
	Reason string
	Method string
	Target string
	Header Header
	// HeadLength counts the bytes of the start line, the header lines and
	// the blank line ending them (the block of a revisit record).
	HeadLength int64
	// Head holds those bytes exactly, when the reader was asked to keep
	// them (Options.KeepHTTPHead).
	Head []byte
	// Chunked reports a "Transfer-Encoding: chunked" body that was
	// de-chunked; ChunkFallback that the framing broke off (or was never
	// there) and the remaining bytes were taken as they are, as warcio and
	// pywb do.
	Chunked       bool
	ChunkFallback bool
	// PayloadLength is the length of the entity body after de-chunking.
	PayloadLength int64
	// PayloadDigest is the canonical SHA-1 ("sha1:BASE32") of that body;
	// "" when digests were not asked for.
	PayloadDigest string
}

// IsResponse reports whether the message is an HTTP response.
func (h *HTTPInfo) IsResponse() bool { return h != nil && h.Status != 0 }

// ParseHTTPResponse parses an HTTP response as recorded on the wire — status
// line, headers, then the body, de-chunked when Transfer-Encoding says
// chunked, content encoding kept — and returns its status, headers, payload
// length and canonical SHA-1 payload digest. This is the function a crawler
// uses to compute the WARC-Payload-Digest of a response it records, and the
// one the WARC reader uses, so both always agree.
func ParseHTTPResponse(block io.Reader) (*HTTPInfo, error) {
	info, err := ParseHTTP(block, nil)
	if err != nil {
		return nil, err
	}
	if !info.IsResponse() {
		return nil, fmt.Errorf("warcio: not an HTTP response (start line %q)", info.Method+" "+info.Target)
	}
	return info, nil
}

// ParseHTTP parses an HTTP request or response message from block and
// digests its payload like ParseHTTPResponse. When payload is not nil the
// de-chunked entity body is also written to it.
func ParseHTTP(block io.Reader, payload io.Writer) (*HTTPInfo, error) {
	br := httpReaders.Get().(*bufio.Reader)
	br.Reset(block)
	defer func() {
		br.Reset(nil)
		httpReaders.Put(br)
	}()
	info, err := parseHTTPHead(br, false, false)
	if err != nil {
		return nil, err
	}
	h := sha1.New()
	var w io.Writer = h
	if payload != nil {
		w = io.MultiWriter(h, payload)
	}
	if err := copyPayload(info, br, w); err != nil {
		return info, err
	}
	info.PayloadDigest = digest.FromHash(digest.SHA1, h).String()
	return info, nil
}

// httpReaders recycles ParseHTTP's buffers: a crawler parses every
// response it records, and a 64 KiB buffer each is most of what that
// allocates.
var httpReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

var errNotHTTP = errors.New("warcio: block is not an HTTP message")

// looksLikeHTTP reports whether b (the first bytes of a block) starts an
// HTTP response or request line.
func looksLikeHTTP(b []byte) bool {
	if len(b) >= 5 && strings.EqualFold(string(b[:5]), "HTTP/") {
		return true
	}
	sp := bytes.IndexByte(b, ' ')
	if sp <= 0 || sp > 16 {
		return false
	}
	for _, c := range b[:sp] {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	line := b
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line = b[:i]
	}
	return bytes.Contains(line, []byte(" HTTP/"))
}

// parseHTTPHead reads the start line and headers; keep keeps their bytes
// in Head. looked says the caller found that br starts with what
// looksLikeHTTP takes for an HTTP message (it is not looked at again).
func parseHTTPHead(br *bufio.Reader, keep, looked bool) (*HTTPInfo, error) {
	first, err := br.Peek(16)
	if len(first) == 0 {
		if err == nil || err == io.EOF {
			return nil, fmt.Errorf("%w: empty", errNotHTTP)
		}
		return nil, err
	}
	if !looked && !looksLikeHTTP(first) {
		// A request line may be longer than 16 bytes before " HTTP/".
		more, _ := br.Peek(8192)
		if !looksLikeHTTP(more) {
			return nil, errNotHTTP
		}
	}
	info := &HTTPInfo{}
	if head := bufferedHead(br, httpHeadAhead, maxHTTPHead); head != nil {
		// The whole head is buffered: one string holds its fields.
		hs := string(head)
		line, rest := nextLine(hs)
		if err := info.parseStartLine(trimEOLString(line)); err != nil {
			br.Discard(len(line)) // as read line by line: the rest is payload
			return nil, err
		}
		br.Discard(len(head))
		info.HeadLength = int64(len(head))
		if keep {
			info.Head = append([]byte(nil), head...)
		}
		info.Header = headerFor(hs)
		for rest != "" {
			line, rest = nextLine(rest)
			if t := trimEOLString(line); t != "" {
				info.Header.addLine(t)
			}
		}
		return info, nil
	}
	line, n, err := readLine(br)
	if err != nil && err != io.EOF {
		return nil, err
	}
	info.HeadLength += n
	if keep {
		info.Head = append(info.Head, line...)
	}
	if err := info.parseStartLine(string(trimEOL(line))); err != nil {
		return nil, err
	}
	for {
		line, n, err := readLine(br)
		info.HeadLength += n
		if keep {
			info.Head = append(info.Head, line...)
		}
		if info.HeadLength > maxHTTPHead {
			return nil, fmt.Errorf("warcio: HTTP head longer than %d bytes", maxHTTPHead)
		}
		t := trimEOL(line)
		if len(t) == 0 {
			// Blank line, or end of block (a revisit whose block lacks
			// the blank line).
			return info, nil
		}
		info.Header.addLine(string(t))
		if err == io.EOF {
			return info, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// httpHeadAhead is how far parseHTTPHead looks ahead for the end of a head
// it reads as one string.
const httpHeadAhead = 8 << 10

func (info *HTTPInfo) parseStartLine(l string) error {
	if len(l) >= 5 && strings.EqualFold(l[:5], "HTTP/") {
		proto, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimLeft(rest, " ")
		code, reason, _ := strings.Cut(rest, " ")
		st, err := strconv.Atoi(code)
		if err != nil || st < 100 || st > 999 {
			return fmt.Errorf("warcio: bad HTTP status line %s", excerpt.Quote(l, 80))
		}
		info.Proto, info.Status, info.Reason = proto, st, strings.TrimSpace(reason)
		return nil
	}
	method, target, proto, ok := requestLine(l)
	if !ok {
		return fmt.Errorf("warcio: bad HTTP request line %s", excerpt.Quote(l, 80))
	}
	info.Method, info.Target, info.Proto = method, target, proto
	return nil
}

// requestLine returns the first, second and last of the fields of l
// (split as strings.Fields splits), and whether it has at least three. An
// ASCII line, the usual one, is split without allocating.
func requestLine(l string) (method, target, proto string, ok bool) {
	if !isASCII(l) {
		f := strings.Fields(l)
		if len(f) < 3 {
			return "", "", "", false
		}
		return f[0], f[1], f[len(f)-1], true
	}
	n := 0
	for i := 0; i < len(l); {
		for i < len(l) && asciiSpace(l[i]) {
			i++
		}
		if i == len(l) {
			break
		}
		j := i
		for j < len(l) && !asciiSpace(l[j]) {
			j++
		}
		switch n {
		case 0:
			method = l[i:j]
		case 1:
			target = l[i:j]
		}
		proto = l[i:j]
		n++
		i = j
	}
	return method, target, proto, n >= 3
}

// asciiSpace reports the ASCII bytes unicode.IsSpace (and so
// strings.Fields) takes as white space.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// readLine reads up to and including '\n', however long (bounded by the
// caller through HeadLength); it returns io.EOF with the last partial line.
func readLine(br *bufio.Reader) ([]byte, int64, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull && len(buf) <= maxHTTPHead {
			line, err = br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	return line, int64(len(line)), err
}

// isChunked reports whether the headers declare chunked transfer coding.
func (info *HTTPInfo) isChunked() bool {
	for _, v := range info.Header.Values("Transfer-Encoding") {
		if strings.Contains(strings.ToLower(v), "chunked") {
			return true
		}
	}
	return false
}

// copyPayload writes the entity body that follows the head in br to w,
// de-chunking it when the headers say so, and sets PayloadLength.
func copyPayload(info *HTTPInfo, br *bufio.Reader, w io.Writer) error {
	if info.isChunked() {
		info.Chunked = true
		return dechunk(info, br, w)
	}
	n, err := br.WriteTo(w)
	info.PayloadLength += n
	return err
}

// dechunk removes chunked transfer coding. Leniency as warcio's
// ChunkedDataReader: when the framing is invalid the rest is copied as is.
// A body that ends inside a chunk (truncated captures) simply ends.
func dechunk(info *HTTPInfo, br *bufio.Reader, w io.Writer) error {
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 {
			return nil
		}
		size, ok := parseChunkSize(line, err)
		if !ok {
			info.ChunkFallback = true
			nw, werr := w.Write(line)
			info.PayloadLength += int64(nw)
			if werr != nil {
				return werr
			}
			n, err := br.WriteTo(w)
			info.PayloadLength += n
			return err
		}
		if size == 0 {
			// Trailers and anything after the last chunk are not payload.
			_, err := io.Copy(io.Discard, br)
			return err
		}
		n, err := io.CopyN(w, br, size)
		info.PayloadLength += n
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		// CRLF (or LF) after the chunk data.
		if b, _ := br.Peek(2); len(b) >= 1 {
			switch {
			case len(b) == 2 && b[0] == '\r' && b[1] == '\n':
				br.Discard(2)
			case b[0] == '\n':
				br.Discard(1)
			}
		}
	}
}

// parseChunkSize parses "1a2b[;ext]\r\n".
func parseChunkSize(line []byte, err error) (int64, bool) {
	if err != nil && err != io.EOF {
		return 0, false
	}
	t := trimEOL(line)
	if i := indexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	t = bytes.TrimSpace(t)
	if len(t) == 0 || len(t) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range t {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}

// newPayloadHash returns the hash payload digests are computed with.
func newPayloadHash() hash.Hash { return sha1.New() }
