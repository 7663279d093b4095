package warcio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/digest"
)

// Options tune a Reader. The zero value computes payload digests and keeps
// no payload bytes.
type Options struct {
	// SkipPayloadDigest skips hashing payloads (Record.PayloadDigest stays
	// ""); records are still fully read to find their lengths.
	SkipPayloadDigest bool
	// KeepPayload keeps up to this many bytes of each record's payload in
	// Record.Payload (0 keeps none).
	KeepPayload int
	// BlockDigest computes Record.BlockDigest over each whole block, with
	// the algorithm of its WARC-Block-Digest header (SHA-1 when absent), so
	// callers can verify stored records.
	BlockDigest bool
}

// Record is one WARC record, fully read: Next returns it after its block has
// been consumed, so every field, lengths and digests included, is final.
type Record struct {
	// Offset is where the record starts in the stored file: the start of
	// its gzip member for compressed files. Length is the stored size: the
	// gzip member's compressed length, or for uncompressed files the bytes
	// up to the next record (trailing CRLFs included). These are the CDX
	// offset and length. Length is 0 for a record sharing a gzip member
	// with another record (see Anomalies).
	Offset int64
	Length int64

	Version       string // "1.0", "1.1", "0.18", ...
	Type          string // WARC-Type as written (lower-cased)
	TargetURI     string // WARC-Target-URI without angle brackets
	Date          time.Time
	RecordID      string // WARC-Record-ID, angle brackets kept
	ContentType   string // WARC Content-Type
	ContentLength int64  // declared Content-Length of the block
	// Headers holds every WARC header as found.
	Headers Header

	// HTTP is the parsed HTTP message of response, revisit and request
	// records whose block holds one; nil otherwise.
	HTTP *HTTPInfo
	// MIME is the payload's media type without parameters: the HTTP
	// Content-Type for HTTP records, else the WARC Content-Type.
	MIME string
	// PayloadDigest is the canonical SHA-1 ("sha1:BASE32") computed over
	// the payload bytes present in this record: the de-chunked HTTP entity
	// for HTTP records, the whole block otherwise. For a revisit it is the
	// digest of whatever body the revisit holds (normally empty): the
	// original's digest is DeclaredPayloadDigest.
	PayloadDigest string
	// PayloadLength is the length of those payload bytes.
	PayloadLength int64
	// DeclaredPayloadDigest is the WARC-Payload-Digest header in canonical
	// form ("" when absent or unparsable).
	DeclaredPayloadDigest string
	// BlockDigest is the canonical digest of the block as read (only with
	// Options.BlockDigest); DeclaredBlockDigest the WARC-Block-Digest header
	// in canonical form. They differ for a damaged record.
	BlockDigest         string
	DeclaredBlockDigest string
	// Payload holds the first Options.KeepPayload payload bytes.
	Payload []byte
	// Anomalies lists what the lenient reader forgave in this record.
	Anomalies []string
}

// Header returns the first WARC header with the given name
// (case-insensitive), or "".
func (r *Record) Header(name string) string { return r.Headers.Get(name) }

// Status returns the HTTP status code, 0 when the record holds no HTTP
// response.
func (r *Record) Status() int {
	if r.HTTP == nil {
		return 0
	}
	return r.HTTP.Status
}

// End is Offset + Length.
func (r *Record) End() int64 { return r.Offset + r.Length }

func (r *Record) anomaly(format string, a ...any) {
	r.Anomalies = append(r.Anomalies, fmt.Sprintf(format, a...))
}

// Reader reads the records of one WARC file in order.
type Reader struct {
	name   string
	opts   Options
	closer io.Closer
	seeker io.Seeker
	base   int64 // seek position where reading started

	cnt        countingReader
	raw        *bufio.Reader
	gz         *gzip.Reader
	dcnt       countingReader
	br         *bufio.Reader // decompressed bytes; == raw for plain files
	compressed bool
	started    bool
	bufSize    int

	memberStart int64 // raw offset of the current gzip member
	memberOpen  bool  // the current member still has bytes to read
	shared      bool  // the open member already held a record
	// pendingLength: the last block ended with its gzip member and the
	// next member is already open (Content-Length overshot).
	pendingLength bool

	done       bool
	resync     bool
	resyncFrom int64

	blk  blockReader
	hbr  *bufio.Reader
	keep keepWriter
	hash hash.Hash
}

// sizedFile lets NewReader size its buffer to small files.
type sizedFile struct{ *os.File }

func (f sizedFile) Size() int64 {
	fi, err := f.Stat()
	if err != nil {
		return rawBufSize
	}
	return fi.Size()
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

const (
	rawBufSize   = 1 << 20
	dataBufSize  = 256 << 10
	maxWARCHead  = 1 << 20
	maxCLSlack   = 4 // Content-Length may overshoot by a CRLF pair
	headerPrefix = "WARC/"
)

// Open opens a WARC file, gzip-compressed (detected by its magic bytes, not
// its name) or not; ".open" files of running crawlers read the same way.
func Open(path string, opts ...Options) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("warcio: %w", err)
	}
	r := NewReader(sizedFile{f}, filepath.Base(path), opts...)
	r.closer = f
	return r, nil
}

// NewReader reads WARC records from rd; name is used in errors. Offsets
// count from where rd is positioned. When rd is an io.Seeker the reader
// seeks back to resynchronise after a corrupt record; otherwise it scans
// forward only.
func NewReader(rd io.Reader, name string, opts ...Options) *Reader {
	r := &Reader{name: name}
	if len(opts) > 0 {
		r.opts = opts[0]
	}
	if s, ok := rd.(io.Seeker); ok {
		if pos, err := s.Seek(0, io.SeekCurrent); err == nil {
			r.seeker, r.base = s, pos
		}
	}
	r.cnt.r = rd
	r.bufSize = rawBufSize
	if s, ok := rd.(interface{ Size() int64 }); ok && s.Size() < rawBufSize {
		r.bufSize = int(max(s.Size(), 4096))
	} else if s, ok := rd.(interface{ Len() int }); ok && s.Len() < rawBufSize {
		r.bufSize = max(s.Len(), 4096)
	}
	r.raw = bufio.NewReaderSize(&r.cnt, r.bufSize)
	r.hbr = bufio.NewReaderSize(&r.blk, min(64<<10, max(r.bufSize, 4096)))

	r.blk.r = r
	r.hash = newPayloadHash()
	return r
}

// Name returns the name given to NewReader (the base name for Open).
func (r *Reader) Name() string { return r.name }

// Close closes the file opened by Open.
func (r *Reader) Close() error {
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

// DataOffset returns how many uncompressed bytes have been read so far
// (the file offset for uncompressed files).
func (r *Reader) DataOffset() int64 {
	if !r.started {
		return 0
	}
	return r.dataPos()
}

// rawPos is the offset in the stored file of the next unread raw byte.
func (r *Reader) rawPos() int64 { return r.cnt.n - int64(r.raw.Buffered()) }

// dataPos is the offset in the decompressed stream (the file offset for
// plain files).
func (r *Reader) dataPos() int64 {
	if !r.compressed {
		return r.rawPos()
	}
	return r.dcnt.n - int64(r.br.Buffered())
}

func (r *Reader) errorf(off int64, kind error, format string, a ...any) error {
	return &Error{File: r.name, Offset: off, Err: fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, a...))}
}

func (r *Reader) start() {
	r.started = true
	if b, _ := r.raw.Peek(2); len(b) == 2 && b[0] == 0x1f && b[1] == 0x8b {
		r.compressed = true
		r.gz = new(gzip.Reader)
		r.dcnt.r = r.gz
		r.br = bufio.NewReaderSize(&r.dcnt, min(dataBufSize, 4*r.bufSize))
	} else {
		r.br = r.raw
	}
}

// Next returns the next record, io.EOF after the last one, or an *Error:
// wrapping ErrTruncated when the input ends inside a record (nothing
// follows), or ErrCorrupt when a record cannot be read (call Next again to
// continue with the records after it).
func (r *Reader) Next() (*Record, error) {
	if !r.started {
		r.start()
	}
	for {
		if r.done {
			return nil, io.EOF
		}
		if r.resync {
			r.resync = false
			if !r.resynchronise(r.resyncFrom) {
				r.done = true
				return nil, io.EOF
			}
		}
		rec, err := r.next()
		if err == errSkip {
			continue
		}
		return rec, err
	}
}

var errSkip = errors.New("skip")

// openMember starts the next gzip member at the current raw position.
// It returns io.EOF at a clean end of file.
func (r *Reader) openMember() error {
	start := r.rawPos()
	err := r.gz.Reset(r.raw)
	if err == nil {
		r.gz.Multistream(false)
		r.memberStart = start
		r.memberOpen = true
		r.shared = false
		r.br.Reset(&r.dcnt)
		return nil
	}
	if err == io.EOF {
		return io.EOF
	}
	if err == io.ErrUnexpectedEOF {
		r.done = true
		return r.errorf(start, ErrTruncated, "partial gzip header")
	}
	// Trailing zero padding (preallocated files) is not a record.
	if r.zeroTail() {
		return io.EOF
	}
	r.resync, r.resyncFrom = true, start+1
	return r.errorf(start, ErrCorrupt, "no gzip member here: %v", err)
}

// zeroTail reports whether only zero bytes remain in the raw input,
// consuming them.
func (r *Reader) zeroTail() bool {
	if r.seeker == nil {
		return false
	}
	pos := r.rawPos()
	r.seekTo(pos)
	for {
		b, err := r.raw.Peek(4096)
		for _, c := range b {
			if c != 0 {
				r.seekTo(pos)
				return false
			}
		}
		r.raw.Discard(len(b))
		if err != nil {
			return true
		}
	}
}

func (r *Reader) seekTo(off int64) bool {
	if r.seeker == nil {
		return false
	}
	if _, err := r.seeker.Seek(r.base+off, io.SeekStart); err != nil {
		return false
	}
	r.cnt.n = off
	r.raw.Reset(&r.cnt)
	return true
}

// skipBlank consumes CR, LF, space and tab bytes; it reports io.EOF when the
// current member (or plain file) ends.
func (r *Reader) skipBlank() error {
	for {
		b, err := r.br.Peek(1)
		if len(b) == 0 {
			if err == nil {
				err = io.EOF
			}
			return err
		}
		i := 0
		buf, _ := r.br.Peek(r.br.Buffered())
		for i < len(buf) && (buf[i] == '\r' || buf[i] == '\n' || buf[i] == ' ' || buf[i] == '\t') {
			i++
		}
		r.br.Discard(i)
		if i < len(buf) {
			return nil
		}
	}
}

// endMember is called when the decompressed stream of the open member
// returned err at a record boundary.
func (r *Reader) endMember(err error) error {
	r.memberOpen = false
	if err == io.EOF {
		return nil
	}
	if err == io.ErrUnexpectedEOF {
		r.done = true
		return r.errorf(r.memberStart, ErrTruncated, "gzip member cut short")
	}
	r.resync, r.resyncFrom = true, r.memberStart+1
	return r.errorf(r.memberStart, ErrCorrupt, "gzip: %v", err)
}

func (r *Reader) next() (*Record, error) {
	rec := &Record{}
	// Find the record start.
	if r.compressed {
		for {
			if !r.memberOpen {
				if err := r.openMember(); err != nil {
					if err == io.EOF {
						r.done = true
					}
					return nil, err
				}
			}
			err := r.skipBlank()
			if err == nil {
				break
			}
			if e := r.endMember(err); e != nil {
				return nil, e
			}
		}
		rec.Offset = r.memberStart
		if r.shared {
			rec.anomaly("record shares the gzip member at offset %d with the previous record", r.memberStart)
		}
	} else {
		if err := r.skipBlank(); err != nil {
			if err == io.EOF {
				r.done = true
				return nil, io.EOF
			}
			return nil, r.errorf(r.rawPos(), ErrCorrupt, "read: %v", err)
		}
		rec.Offset = r.rawPos()
	}
	if err := r.readWARCHead(rec); err != nil {
		return nil, err
	}
	if err := r.readBlock(rec); err != nil {
		return nil, err
	}
	if err := r.finishRecord(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// fail turns a problem at the record starting at rec.Offset into an error,
// truncation when the input ends there, corruption otherwise.
func (r *Reader) fail(rec *Record, atEOF bool, format string, a ...any) error {
	if atEOF && (!r.compressed || !r.moreInput()) {
		r.done = true
		return r.errorf(rec.Offset, ErrTruncated, format, a...)
	}
	r.resync, r.resyncFrom = true, rec.Offset+1
	if r.compressed {
		r.memberOpen = false
	}
	return r.errorf(rec.Offset, ErrCorrupt, format, a...)
}

// moreInput reports whether raw bytes remain after the current position.
func (r *Reader) moreInput() bool {
	b, _ := r.raw.Peek(1)
	return len(b) > 0
}

func (r *Reader) readWARCHead(rec *Record) error {
	first, err := r.br.Peek(len(headerPrefix))
	if len(first) < len(headerPrefix) || !strings.EqualFold(string(first), headerPrefix) {
		if len(first) < len(headerPrefix) && (err == io.EOF || err == io.ErrUnexpectedEOF) {
			return r.fail(rec, true, "partial WARC header")
		}
		if err != nil && err != io.EOF {
			return r.fail(rec, err == io.ErrUnexpectedEOF, "read: %v", err)
		}
		return r.fail(rec, false, "no WARC record here (starts %q)", first)
	}
	total := 0
	line, err := r.readHeadLine(&total)
	if err != nil {
		return r.fail(rec, err == io.EOF || err == io.ErrUnexpectedEOF, "partial WARC header: %v", err)
	}
	rec.Version = strings.TrimSpace(string(trimEOL(line)))[len(headerPrefix):]
	if v, _, ok := strings.Cut(rec.Version, " "); ok { // WARC/0.9 puts fields on the version line
		rec.Version = v
	}
	for {
		line, err := r.readHeadLine(&total)
		if err != nil {
			return r.fail(rec, err == io.EOF || err == io.ErrUnexpectedEOF, "partial WARC header: %v", err)
		}
		t := trimEOL(line)
		if len(t) == 0 {
			break
		}
		if (t[0] == ' ' || t[0] == '\t') && len(rec.Headers) > 0 {
			last := &rec.Headers[len(rec.Headers)-1]
			last.Value += " " + strings.TrimSpace(string(t))
			continue
		}
		f, ok := parseField(t)
		if !ok {
			rec.anomaly("header line without a colon: %q", truncate(string(t), 60))
			continue
		}
		rec.Headers = append(rec.Headers, f)
	}
	h := rec.Headers
	rec.Type = strings.ToLower(h.Get("WARC-Type"))
	rec.TargetURI = strings.Trim(h.Get("WARC-Target-URI"), "<>")
	rec.RecordID = h.Get("WARC-Record-ID")
	rec.ContentType = h.Get("Content-Type")
	if ds := h.Get("WARC-Date"); ds != "" {
		if t, ok := ParseDate(ds); ok {
			rec.Date = t
		} else {
			rec.anomaly("unparsable WARC-Date %q", ds)
		}
	} else {
		rec.anomaly("no WARC-Date")
	}
	if bd := h.Get("WARC-Block-Digest"); bd != "" {
		if d, err := digest.Normalize(bd); err == nil {
			rec.DeclaredBlockDigest = d
		} else {
			rec.anomaly("unparsable WARC-Block-Digest %q", bd)
		}
	}
	if pd := h.Get("WARC-Payload-Digest"); pd != "" {
		if d, err := digest.Normalize(pd); err == nil {
			rec.DeclaredPayloadDigest = d
		} else {
			rec.anomaly("unparsable WARC-Payload-Digest %q", pd)
		}
	}
	cl := strings.TrimSpace(h.Get("Content-Length"))
	n, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || n < 0 {
		return r.fail(rec, false, "bad or missing Content-Length %q", cl)
	}
	rec.ContentLength = n
	return nil
}

// readHeadLine reads one line of the WARC header.
func (r *Reader) readHeadLine(total *int) ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull && len(buf) < maxWARCHead {
			line, err = r.br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	*total += len(line)
	if *total > maxWARCHead {
		return nil, fmt.Errorf("WARC header longer than %d bytes", maxWARCHead)
	}
	if err != nil {
		return nil, err
	}
	return line, nil
}

// isHTTPType reports whether records of this type carry HTTP messages when
// their block looks like one.
func isHTTPType(t string) bool { return t == "response" || t == "revisit" || t == "request" }

func (r *Reader) readBlock(rec *Record) error {
	r.blk.start(rec)
	if r.opts.BlockDigest {
		alg := digest.SHA1
		if d, err := digest.Parse(rec.DeclaredBlockDigest); err == nil {
			alg = d.Alg
		}
		r.blk.alg = alg
		r.blk.hash, _ = digest.New(alg)
	}
	r.hbr.Reset(&r.blk)
	var sink io.Writer = io.Discard
	if !r.opts.SkipPayloadDigest {
		r.hash.Reset()
		sink = r.hash
	}
	if r.opts.KeepPayload > 0 {
		r.keep = keepWriter{w: sink, max: r.opts.KeepPayload}
		sink = &r.keep
	}
	isHTTP := false
	if isHTTPType(rec.Type) {
		if b, _ := r.hbr.Peek(16); looksLikeHTTP(b) {
			isHTTP = true
		} else if b, _ := r.hbr.Peek(8192); looksLikeHTTP(b) {
			isHTTP = true
		} else if len(b) > 0 && rec.Type != "revisit" {
			rec.anomaly("%s record block is not an HTTP message", rec.Type)
		}
	}
	var perr error
	if isHTTP {
		info, err := parseHTTPHead(r.hbr)
		if err != nil {
			rec.anomaly("HTTP head: %v", err)
			rec.PayloadLength, perr = r.hbr.WriteTo(sink)
		} else {
			rec.HTTP = info
			perr = copyPayload(info, r.hbr, sink)
			rec.PayloadLength = info.PayloadLength
			if info.ChunkFallback {
				rec.anomaly("Transfer-Encoding chunked but the body is not validly chunked; rest taken as is")
			}
			rec.MIME = MediaType(info.Header.Get("Content-Type"))
		}
	} else {
		var n int64
		n, perr = r.hbr.WriteTo(sink)
		rec.PayloadLength = n
	}
	if rec.HTTP == nil {
		rec.MIME = MediaType(rec.ContentType)
	}
	// Whatever the payload parser left (it stops at the last chunk).
	if perr == nil {
		_, perr = r.hbr.WriteTo(io.Discard)
	}
	if r.blk.err != nil {
		return r.blk.err
	}
	if perr != nil && perr != io.EOF {
		return r.fail(rec, false, "read block: %v", perr)
	}
	if !r.opts.SkipPayloadDigest {
		if rec.HTTP != nil {
			rec.HTTP.PayloadDigest = digest.FromHash(digest.SHA1, r.hash).String()
			rec.PayloadDigest = rec.HTTP.PayloadDigest
		} else {
			rec.PayloadDigest = digest.FromHash(digest.SHA1, r.hash).String()
		}
	}
	if r.opts.KeepPayload > 0 {
		rec.Payload = r.keep.buf
		r.keep = keepWriter{}
	}
	if r.blk.hash != nil {
		rec.BlockDigest = digest.FromHash(r.blk.alg, r.blk.hash).String()
	}
	if r.blk.short > 0 {
		rec.anomaly("Content-Length %d overstates the block by %d bytes", rec.ContentLength, r.blk.short)
	}
	if r.blk.spanned {
		rec.anomaly("record continues across gzip members")
	}
	return nil
}

// finishRecord consumes the record trailer and sets Length.
func (r *Reader) finishRecord(rec *Record) error {
	if r.pendingLength {
		r.pendingLength = false
		return nil
	}
	if r.compressed {
		err := r.skipBlank()
		if err == nil {
			if b, _ := r.br.Peek(len(headerPrefix)); strings.EqualFold(string(b), headerPrefix) {
				// Another record in the same member.
				r.shared = true
				rec.anomaly("gzip member at offset %d holds more than one record", r.memberStart)
				return nil
			}
			n, derr := io.Copy(io.Discard, r.br)
			rec.anomaly("%d bytes of junk after the record in its gzip member", n)
			if derr == nil {
				derr = io.EOF
			}
			err = derr
		}
		if e := r.endMember(err); e != nil {
			return e
		}
		if !r.shared {
			rec.Length = r.rawPos() - rec.Offset
		} else {
			rec.anomaly("record shares a gzip member: no CDX length")
		}
		return nil
	}
	// Whatever follows that is not a record is reported by the next call
	// to Next as ErrCorrupt: in a plain file it may be a damaged record.
	r.skipBlank()
	rec.Length = r.rawPos() - rec.Offset
	return nil
}

// skipToWARCLine advances a plain reader to the next line starting with
// "WARC/", or to the end; it returns the bytes skipped.
func (r *Reader) skipToWARCLine() int64 {
	var n int64
	for {
		line, err := r.br.ReadSlice('\n')
		n += int64(len(line))
		if err != nil && err != bufio.ErrBufferFull {
			return n
		}
		if err == nil {
			if b, _ := r.br.Peek(len(headerPrefix)); strings.EqualFold(string(b), headerPrefix) {
				return n
			}
		}
	}
}

// resynchronise positions the reader on the next plausible record at or
// after off: a gzip member whose data starts with "WARC/", or a line
// starting with "WARC/" in a plain file. It reports false at end of input.
func (r *Reader) resynchronise(off int64) bool {
	if !r.seekTo(off) {
		// Cannot go back: scan from where we are.
		if pos := r.rawPos(); pos < off {
			r.raw.Discard(int(off - pos))
		}
	}
	if !r.compressed {
		r.skipToWARCLine()
		return r.moreInput()
	}
	for {
		if !r.scanGzipMagic() {
			return false
		}
		cand := r.rawPos()
		if err := r.openMember(); err == nil {
			if r.skipBlank() == nil {
				if b, _ := r.br.Peek(len(headerPrefix)); strings.EqualFold(string(b), headerPrefix) {
					return true
				}
			}
		}
		r.resync = false
		r.memberOpen = false
		if !r.seekTo(cand + 1) {
			if r.rawPos() <= cand {
				r.raw.Discard(1)
			}
		}
	}
}

// scanGzipMagic advances the raw reader to the next "1f 8b 08".
func (r *Reader) scanGzipMagic() bool {
	for {
		b, _ := r.raw.Peek(3)
		if len(b) < 3 {
			r.raw.Discard(len(b))
			return false
		}
		if b[0] == 0x1f && b[1] == 0x8b && b[2] == 0x08 {
			return true
		}
		buf, _ := r.raw.Peek(r.raw.Buffered())
		i := bytes.IndexByte(buf[1:], 0x1f)
		if i < 0 {
			r.raw.Discard(len(buf) - 2)
		} else {
			r.raw.Discard(i + 1)
		}
	}
}

// blockReader reads a record block from the decompressed stream, crossing
// gzip member boundaries and forgiving a Content-Length that overshoots.
type blockReader struct {
	r         *Reader
	rec       *Record
	remaining int64
	short     int64
	spanned   bool
	err       error
	hash      hash.Hash // block digest, when asked for
	alg       string
}

func (b *blockReader) start(rec *Record) {
	*b = blockReader{r: b.r, rec: rec, remaining: rec.ContentLength}
}

func (b *blockReader) Read(p []byte) (int, error) {
	for {
		if b.remaining <= 0 {
			return 0, io.EOF
		}
		if b.err != nil {
			return 0, io.ErrUnexpectedEOF
		}
		if int64(len(p)) > b.remaining {
			p = p[:b.remaining]
		}
		n, err := b.r.br.Read(p)
		b.remaining -= int64(n)
		if n > 0 {
			if b.hash != nil {
				b.hash.Write(p[:n])
			}
			return n, nil
		}
		if err == nil {
			continue
		}
		if !b.atEnd(err) {
			return 0, io.ErrUnexpectedEOF
		}
	}
}

// atEnd handles the end of the data stream inside a block. It returns true
// when reading may go on (the block now ends early, or continues in the next
// gzip member).
func (b *blockReader) atEnd(err error) bool {
	r := b.r
	if err != io.EOF {
		if r.compressed {
			b.err = r.endMember(err)
		} else {
			b.err = r.fail(b.rec, false, "read: %v", err)
		}
		return false
	}
	if !r.compressed {
		// No slack here: an overshooting Content-Length in a plain file
		// eats the record trailer and never reaches the end of input, so
		// a short block at the end is a cut file.
		r.done = true
		b.err = r.errorf(b.rec.Offset, ErrTruncated, "block ends %d bytes short of its Content-Length %d", b.remaining, b.rec.ContentLength)
		return false
	}
	// A complete gzip member ended inside the block.
	r.memberOpen = false
	if !r.moreInput() {
		if b.remaining <= maxCLSlack {
			b.short, b.remaining = b.remaining, 0
			return true
		}
		r.done = true
		b.err = r.errorf(b.rec.Offset, ErrTruncated, "file ends %d bytes short of the record's Content-Length %d", b.remaining, b.rec.ContentLength)
		return false
	}
	memberEnd := r.rawPos()
	if oerr := r.openMember(); oerr != nil {
		b.err = oerr
		return false
	}
	if p, _ := r.br.Peek(len(headerPrefix)); strings.EqualFold(string(p), headerPrefix) {
		// The writer moved on to the next record: Content-Length was wrong.
		b.short, b.remaining = b.remaining, 0
		b.pendingEnd(memberEnd)
		return true
	}
	b.spanned = true
	return true
}

// pendingEnd records that the block's record ended at memberEnd while the
// next member is already open.
func (b *blockReader) pendingEnd(memberEnd int64) {
	b.rec.Length = memberEnd - b.rec.Offset
	b.r.pendingLength = true
}

// keepWriter passes writes on and keeps the first max bytes.
type keepWriter struct {
	w   io.Writer
	max int
	buf []byte
}

func (k *keepWriter) Write(p []byte) (int, error) {
	if room := k.max - len(k.buf); room > 0 {
		if room > len(p) {
			room = len(p)
		}
		k.buf = append(k.buf, p[:room]...)
	}
	return k.w.Write(p)
}
