package warcio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/digest"
)

// The strict reader verifies what Wayside itself wrote, where Reader
// forgives what others wrote: each gzip member must hold exactly one
// well-formed WARC record whose block has exactly Content-Length bytes,
// matches its WARC-Block-Digest and is followed by CRLF CRLF. Crash
// recovery (package warcfile) cuts a file after the last record that
// passes, and re-reading an original for a revisit checks it the same way;
// Reader would accept (and note as anomalies) records these must reject.

// ScanMembers calls fn for each complete, verified record of a .warc.gz
// stream in order (its offset and stored length, its header, the first
// bytes of its block: enough for HTTP headers) and returns why scanning
// stopped before the end (nil when every member is a complete record).
func ScanMembers(r io.Reader, fn func(off, length int64, hdr http.Header, head []byte)) error {
	cr := &strictCounter{r: bufio.NewReaderSize(r, 64<<10)}
	var zr *gzip.Reader
	for {
		off := cr.n
		if _, err := cr.r.Peek(1); err == io.EOF {
			return nil
		}
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(cr)
		} else {
			err = zr.Reset(cr)
		}
		if err != nil {
			return fmt.Errorf("offset %d: gzip header: %w", off, err)
		}
		zr.Multistream(false)
		hdr, head, _, err := readStrict(bufio.NewReaderSize(zr, 32<<10), false)
		if err != nil {
			return fmt.Errorf("offset %d: %w", off, err)
		}
		fn(off, cr.n-off, hdr, head)
	}
}

// ReadMember reads the one record of the gzip member r starts with,
// strictly (see ScanMembers), and returns its header and whole block.
func ReadMember(r io.Reader) (http.Header, []byte, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, nil, err
	}
	zr.Multistream(false)
	hdr, _, block, err := readStrict(bufio.NewReader(zr), true)
	return hdr, block, err
}

// strictCounter counts the compressed bytes consumed; it implements
// io.ByteReader so the gzip reader never reads past a member's end.
type strictCounter struct {
	r *bufio.Reader
	n int64
}

func (c *strictCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *strictCounter) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// readStrict reads one whole WARC record from a gzip member and verifies its
// framing and block digest; it requires the member to end right after it.
// With whole, the whole block is returned too.
func readStrict(br *bufio.Reader, whole bool) (http.Header, []byte, []byte, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, nil, nil, fmt.Errorf("record truncated in version line: %w", err)
	}
	if !strings.HasPrefix(line, "WARC/") || !strings.HasSuffix(line, "\r\n") {
		return nil, nil, nil, fmt.Errorf("not a WARC record: %q", strings.TrimSpace(line))
	}
	hdr := http.Header{}
	hdr.Set("X-Warc-Version", strings.TrimSpace(strings.TrimPrefix(line, "WARC/")))
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return nil, nil, nil, fmt.Errorf("record truncated in header: %w", err)
		}
		if l == "\r\n" {
			break
		}
		k, v, ok := strings.Cut(strings.TrimRight(l, "\r\n"), ":")
		if !ok {
			return nil, nil, nil, fmt.Errorf("malformed header line %q", strings.TrimSpace(l))
		}
		hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	cl, err := strconv.ParseInt(hdr.Get("Content-Length"), 10, 64)
	if err != nil || cl < 0 {
		return nil, nil, nil, fmt.Errorf("bad Content-Length %q", hdr.Get("Content-Length"))
	}
	want, err := digest.Parse(hdr.Get("Warc-Block-Digest"))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bad WARC-Block-Digest: %w", err)
	}
	h, err := digest.New(want.Alg)
	if err != nil {
		return nil, nil, nil, err
	}
	headN := int64(16 << 10)
	if cl < headN || whole {
		headN = cl
	}
	head := make([]byte, headN)
	if _, err := io.ReadFull(br, head); err != nil {
		return nil, nil, nil, fmt.Errorf("block truncated: %w", err)
	}
	h.Write(head)
	if n, err := io.CopyN(h, br, cl-headN); err != nil {
		return nil, nil, nil, fmt.Errorf("block truncated after %d of %d bytes: %w", headN+n, cl, err)
	}
	if !digest.FromHash(want.Alg, h).Equal(want) {
		return nil, nil, nil, errors.New("block digest mismatch")
	}
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil || string(tail[:]) != "\r\n\r\n" {
		return nil, nil, nil, errors.New("record not terminated by CRLF CRLF")
	}
	if n, err := br.Read(tail[:1]); n != 0 || err != io.EOF {
		if err != nil && err != io.EOF {
			return nil, nil, nil, fmt.Errorf("gzip member: %w", err)
		}
		return nil, nil, nil, errors.New("extra bytes after record in its gzip member")
	}
	return hdr, head[:min(len(head), 16<<10)], head, nil
}
