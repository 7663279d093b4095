package warcio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/excerpt"
	"github.com/wayside-archive/wayside/internal/mapfile"
)

// Options tune a Reader. The zero value computes payload digests and keeps
// no payload bytes.
type Options struct {
	// SkipPayloadDigest skips hashing payloads (Record.PayloadDigest stays
	// ""); records are still fully read to find their lengths.
	SkipPayloadDigest bool
	// PayloadDigestIfUndeclared hashes the payload only of records that
	// declare no WARC-Payload-Digest that parses (and of ARC records);
	// Record.PayloadDigest stays "" for the others, so Capture cannot
	// tell a declared digest the payload does not bear out
	// (DigestMismatch stays false). For readers that take the declared
	// digest as it is, as pywb's and OutbackCDX's indexers do: cdxj
	// without --verify.
	PayloadDigestIfUndeclared bool
	// KeepPayload keeps up to this many bytes of each record's payload in
	// Record.Payload (0 keeps none).
	KeepPayload int
	// PayloadBuffer, when set, returns an empty buffer with capacity for n
	// bytes for Record.Payload (callers that recycle payload buffers); by
	// default one is allocated per record.
	PayloadBuffer func(n int) []byte
	// BlockDigest computes Record.BlockDigest over each whole block, with
	// the algorithm of its WARC-Block-Digest header (SHA-1 when absent), so
	// callers can verify stored records.
	BlockDigest bool
	// BlockSink, when set, is called before each record's block is read
	// and the writer it returns receives the block's bytes as stored (for
	// ARC records, the bytes after the header line; HTTP messages
	// included). A record read twice (an ARC length correction) calls it
	// again: the writer must then start afresh.
	BlockSink func() io.Writer
	// Payload, when set, receives the payload bytes of every record as they
	// are read — the bytes PayloadDigest covers (the de-chunked HTTP entity,
	// or the whole block of a non-HTTP record) — so callers can digest them
	// with another algorithm or compare them without holding them in
	// memory. A write error stops the record with an error.
	Payload io.Writer
	// KeepHTTPHead keeps the exact bytes of each HTTP message head (start
	// line, header lines and the blank line) in HTTPInfo.Head.
	KeepHTTPHead bool
	// Map memory-maps a gzip-compressed file that Open reads instead of
	// reading it through a buffer: its gzip members are inflated straight
	// from the mapping, which costs about a tenth less CPU. The file must
	// be complete and not shrink while it is read (not a crawler's growing
	// ".open" file); if it is truncated anyway, Next returns an *Error
	// wrapping mapfile.ErrFault instead of the process crashing. Ignored
	// for uncompressed files, files that are not regular (pipes) and by
	// NewReader. Members are inflated whole by libdeflate where it is
	// built in (cgo), from a read-ahead window copied out of the mapping
	// into buffers outside the Go heap (about 9 MiB of address space,
	// resident as far as the window and members use them: about 2 MiB of
	// window, more only for larger members) that Close releases.
	Map bool
	// Mapping, with Map, is a mapping of the file Open opens that Open
	// reads through instead of mapping the file again (a handle of its
	// own, from mapfile's Share: the reader closes it on Close, or when
	// Open fails or the file is read through the buffer), so that other
	// readers of the file in the process share its pages.
	Mapping *mapfile.File
	// OnSpan, when set, is called for every stretch of the input the
	// reader did not turn into a record (see Span), in input order, once
	// its end is known. Together with the records Next returns the spans
	// account for every input byte; every span but zero padding at the end
	// also surfaces as an *Error from Next.
	OnSpan func(Span)
	// OnHead, when set, is called for each record once its WARC headers
	// and HTTP head (Record.HTTP) are parsed, before any payload byte is
	// read (and written to Payload): a reader that streams the payload
	// somewhere can first act on the headers, e.g. send an HTTP response's
	// status line.
	OnHead func(rec *Record)
	// Tap, when set, sees every gzip member the reader inflates (see
	// MemberTap); nil costs nothing.
	Tap MemberTap

	// slowInflate turns the fast path off (see fastinflate.go): tests
	// compare the two.
	slowInflate bool
	// fastWindow, when set, is the size of a mapped file's read-ahead
	// window for the fast path instead of fastWindow (tests).
	fastWindow int
}

// MemberTap sees the gzip members of a compressed input as the reader
// inflates them, so that a check can frame the same bytes without
// inflating the input again. Member is called when a member at stored
// offset off is opened; Write receives every decompressed byte of it, in
// order, as the inflater produces it (p is only valid during the call);
// End is called once the inflater stops on it: complete says it inflated
// to its end and its trailer was read (and matched), compressedLen is
// the stored length it consumed. A member the reader abandons (to
// resynchronise, or to read an ARC record again) gets End with complete
// false, or none at all when reading stops: a tap must take nothing on
// trust (a member opened again starts afresh). Uncompressed inputs call
// nothing.
type MemberTap interface {
	Member(off int64)
	Write(p []byte)
	End(off, compressedLen int64, complete bool)
}

// tapReader reads the open member's inflated bytes (from the fast path or
// the gzip reader) and passes them to Options.Tap when set.
type tapReader struct{ r *Reader }

func (t tapReader) Read(p []byte) (int, error) {
	r := t.r
	n, err := r.inflated(p)
	if n > 0 && r.tapOpen {
		r.opts.Tap.Write(p[:n])
	}
	if err != nil && r.tapOpen {
		r.tapOpen = false
		r.opts.Tap.End(r.tapStart, r.rawPos()-r.tapStart, err == io.EOF)
	}
	return n, err
}

// Reader reads the records of one WARC file in order.
type Reader struct {
	name   string
	opts   Options
	closer io.Closer
	seeker io.Seeker
	base   int64 // seek position where reading started
	size   int64 // bytes from base to the end of the input; -1 when unknown

	cnt        countingReader
	raw        rawReader     // the stored bytes: rawBuf, or mem for a mapped file
	rawBuf     *bufio.Reader // reads cnt
	mapping    *mapfile.File // Options.Map
	memData    []byte        // the whole input, when in memory (mapped)
	mem        *memRaw       // reads memData when it is compressed
	gz         *gzip.Reader
	dcnt       countingReader
	br         *bufio.Reader // decompressed bytes; == raw for plain files
	zbr        *bufio.Reader // the buffer of decompressed bytes (kept by Reset)
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
	// dataResync: the record that failed is inside a sound gzip member;
	// reading goes on at the next line of that member that starts a
	// record (a member may hold many records, or the whole file).
	dataResync bool
	// span is the unaccounted stretch being skipped (resync, dataResync);
	// spanFirst says it began at its member's first data byte.
	span      Span
	spanFirst bool
	quietGzip bool
	// lastEnd is the data offset where the last record returned ends.
	lastEnd int64
	// inShared: the record being read is not the first of its member.
	inShared bool
	// pendErr is returned by the next call to Next (junk found after a
	// record that was itself returned).
	pendErr error
	// memberData is the data offset where the open gzip member starts.
	memberData int64
	// spans and spanBytes count the spans reported (see Unaccounted).
	spans     int
	spanBytes int64

	// arcVersion is the ARC version the file's filedesc record declared
	// (0 before one is read); isARC is set once an ARC record was read.
	arcVersion int
	isARC      bool
	// arcFix asks the next read of the ARC record at arcFix.offset to take
	// arcFix.length as its block length (a wrong Archive-length).
	arcFix   arcFix
	arcFixed bool // the record being read has a corrected length

	blk  blockReader
	hbr  *bufio.Reader
	keep keepWriter
	hash hash.Hash
	// rawHash and teeBR digest chunked bodies with their framing.
	rawHash hash.Hash
	teeBR   *bufio.Reader
	sum     [64]byte // sha1String's buffer

	// tapOpen: Options.Tap saw Member(tapStart) and no End yet.
	tapOpen  bool
	tapStart int64

	// fast inflates whole members of an in-memory input (fastinflate.go);
	// useFast: this input takes that path.
	fast    *fastInflate
	useFast bool
	// fastTried: openFastFirst tried the member being opened and failed.
	fastTried bool
}

// sizedFile lets NewReader size its buffer to small files.
type sizedFile struct{ *os.File }

func (f sizedFile) Size() int64 {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	return fi.Size()
}

// rawReader is what the reader needs of its stored bytes: a *bufio.Reader,
// or memRaw over a mapped file.
type rawReader interface {
	io.Reader
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
	Buffered() int
}

// memRaw reads a mapped file. Its bytes.Reader is handed to the gzip
// reader as it is: the inflater reads a *bytes.Reader faster than any
// other source.
type memRaw struct {
	data []byte
	r    bytes.Reader
}

func (m *memRaw) pos() int { return len(m.data) - m.r.Len() }

func (m *memRaw) Read(p []byte) (int, error) { return m.r.Read(p) }

func (m *memRaw) Peek(n int) ([]byte, error) {
	p := m.pos()
	if len(m.data)-p < n {
		return m.data[p:], io.EOF
	}
	return m.data[p : p+n], nil
}

func (m *memRaw) Discard(n int) (int, error) {
	n = min(n, m.r.Len())
	m.r.Seek(int64(n), io.SeekCurrent)
	return n, nil
}

func (m *memRaw) Buffered() int { return m.r.Len() }

type countingReader struct {
	r   io.Reader
	n   int64
	err error // first read error other than io.EOF: reading cannot go on
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

const (
	rawBufSize   = 1 << 20
	dataBufSize  = 256 << 10
	maxWARCHead  = 1 << 20
	maxCLSlack   = 4 // Content-Length may overshoot by a CRLF pair
	headerPrefix = "WARC/"
)

// Open opens a WARC or ARC file, gzip-compressed (detected by its magic
// bytes, not its name) or not; ".open" files of running crawlers read the
// same way. Whether a record is WARC or ARC is told by its first line.
// Errors name the file by path as given. A path JoinMember made reads
// the WARC file stored in a WACZ by range, in place.
func Open(path string, opts ...Options) (*Reader, error) {
	if isMember(path) {
		return openMemberReader(path, opts)
	}
	var given *mapfile.File
	if len(opts) > 0 {
		given = opts[0].Mapping
	}
	f, err := os.Open(path)
	if err != nil {
		if given != nil {
			given.Close()
		}
		return nil, fmt.Errorf("warcio: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		f.Close()
		if given != nil {
			given.Close()
		}
		return nil, fmt.Errorf("warcio: %s is a directory", path)
	}
	r := NewReader(sizedFile{f}, path, opts...) // errors name the path as given
	r.closer = f
	// Map is a way to read faster: a pipe or device (no size to map) is
	// read through the buffer instead.
	switch {
	case r.opts.Map && err == nil && fi.Mode().IsRegular() && given != nil && int64(len(given.Bytes())) == fi.Size():
		r.mapping = given
		r.memData = r.mapping.Bytes()
	case r.opts.Map && err == nil && fi.Mode().IsRegular():
		if given != nil {
			given.Close()
		}
		if r.mapping, err = mapfile.Map(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("warcio: %w", err)
		}
		r.memData = r.mapping.Bytes()
	case given != nil:
		given.Close()
	}
	return r, nil
}

// NewReader reads WARC (or ARC) records from rd; name is used in errors. Offsets
// count from where rd is positioned. When rd is an io.Seeker the reader
// seeks back to resynchronise after a corrupt record; otherwise it scans
// forward only.
func NewReader(rd io.Reader, name string, opts ...Options) *Reader {
	r := &Reader{}
	r.reset(rd, name, opts, nil)
	return r
}

// Reset makes r read rd from its start, as NewReader(rd, name, opts...)
// would, reusing r's buffers and decompressor: a caller that reads many
// small inputs one after the other (records held in memory, records read
// back one at a time) allocates them once. The records r returned before
// stay valid. Close is not called on a file r opened.
func (r *Reader) Reset(rd io.Reader, name string, opts ...Options) {
	old := *r
	*r = Reader{}
	r.reset(rd, name, opts, &old)
}

func (r *Reader) reset(rd io.Reader, name string, opts []Options, old *Reader) {
	r.name = name
	if len(opts) > 0 {
		r.opts = opts[0]
	}
	r.size = -1
	if s, ok := rd.(io.Seeker); ok {
		if pos, err := s.Seek(0, io.SeekCurrent); err == nil {
			r.seeker, r.base = s, pos
			if sz, ok := rd.(interface{ Size() int64 }); ok && sz.Size() >= pos {
				r.size = sz.Size() - pos
			}
		}
	}
	r.cnt.r = rd
	r.bufSize = rawBufSize
	if s, ok := rd.(interface{ Size() int64 }); ok && s.Size() >= 0 && s.Size() < rawBufSize {
		r.bufSize = int(max(s.Size(), 4096))
	} else if s, ok := rd.(interface{ Len() int }); ok && s.Len() < rawBufSize {
		r.bufSize = max(s.Len(), 4096)
	}
	r.blk.r = r
	hbrSize := min(64<<10, max(r.bufSize, 4096))
	if old != nil {
		// Buffers at least as large as this input would get are reused.
		if old.rawBuf != nil && old.rawBuf.Size() >= r.bufSize {
			r.rawBuf = old.rawBuf
			r.rawBuf.Reset(&r.cnt)
		}
		if old.hbr != nil && old.hbr.Size() >= hbrSize {
			r.hbr = old.hbr
			r.hbr.Reset(&r.blk)
		}
		r.hash, r.gz, r.zbr = old.hash, old.gz, old.zbr
		r.rawHash, r.teeBR = old.rawHash, old.teeBR
		r.fast = old.fast
		if r.fast != nil {
			r.fast.reset()
		}
	}
	// rawBuf is made by start, once it is known to be needed (a mapped
	// gzip file is read without it).
	if r.hbr == nil {
		r.hbr = bufio.NewReaderSize(&r.blk, hbrSize)
	}
	if r.hash == nil {
		r.hash = newPayloadHash()
	}
}

// Name returns the name given to NewReader (the base name for Open).
func (r *Reader) Name() string { return r.name }

// Close closes the file opened by Open, and releases the buffers of the
// fast path of an in-memory input (see Options.Map).
func (r *Reader) Close() error {
	if r.fast != nil {
		r.fast.free()
		r.fast, r.useFast = nil, false
		r.done = true
	}
	if r.mapping != nil {
		r.mapping.Close()
		r.mapping, r.mem = nil, nil
		r.done = true
	}
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

// Offset returns how many stored bytes the reader has consumed: after
// io.EOF from Next, the whole input, every gzip member of it complete.
// A caller that reads a growing file again later may go on from there.
func (r *Reader) Offset() int64 {
	if !r.started {
		return 0
	}
	return r.rawPos()
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
	if b := r.memData; b != nil && len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		r.mem = &memRaw{data: b}
		r.mem.r.Reset(b)
		r.raw = r.mem
		r.cnt.n = int64(len(b)) // so rawPos is the position in b
		r.memData = nil
	} else {
		// Read through the buffer (an uncompressed file is, even when
		// mapped).
		if r.rawBuf == nil {
			r.rawBuf = bufio.NewReaderSize(&r.cnt, r.bufSize)
		}
		r.raw = r.rawBuf
	}
	if r.memData != nil {
		if r.mapping != nil {
			r.mapping.Close() // uncompressed: read through the buffer
			r.mapping = nil
		}
		r.memData = nil
	}
	if b, _ := r.raw.Peek(2); len(b) == 2 && b[0] == 0x1f && b[1] == 0x8b {
		r.compressed = true
		if r.gz == nil {
			r.gz = new(gzip.Reader)
		}
		r.dcnt.r = r.gz
		if fastAvailable && !r.opts.slowInflate {
			if r.fast == nil && r.mem != nil {
				win := fastWindow
				if r.opts.fastWindow > 0 {
					win = r.opts.fastWindow
				}
				r.fast = newFastInflate(win)
			} else if r.fast == nil {
				r.fast = newHeapFastInflate()
			}
			r.useFast = r.fast != nil
		}
		if r.opts.Tap != nil || r.useFast {
			r.dcnt.r = tapReader{r}
		}
		if size := min(dataBufSize, 4*r.bufSize); r.zbr == nil || r.zbr.Size() < size {
			r.zbr = bufio.NewReaderSize(&r.dcnt, size)
		} else {
			r.zbr.Reset(&r.dcnt)
		}
		r.br = r.zbr
	} else {
		r.br = r.rawBuf
	}
}

// Next returns the next record, io.EOF after the last one, or an *Error:
// wrapping ErrTruncated when the input ends inside a record (nothing
// follows), or ErrCorrupt when a record cannot be read (call Next again to
// continue with the records after it).
func (r *Reader) Next() (rec *Record, err error) {
	if !r.started {
		r.start()
	}
	if r.mem != nil && r.mapping != nil {
		defer func() {
			if errors.Is(err, mapfile.ErrFault) {
				r.done = true
				// The *Error names the file and offset once; mapfile's
				// own detail (the faulting address) would repeat them.
				rec, err = nil, &Error{File: r.name, Offset: r.rawPos(), Err: mapfile.ErrFault}
			}
		}()
		defer mapfile.Recover(&err, mapfile.Guard(), r.mapping)
	}
	for {
		if r.done {
			return nil, io.EOF
		}
		if err := r.pendErr; err != nil {
			r.pendErr = nil
			return nil, err
		}
		if r.dataResync {
			r.dataResync = false
			if err := r.resyncInMember(); err != nil {
				return nil, err
			}
		}
		if r.resync {
			r.resync = false
			ok := r.resynchronise(r.resyncFrom)
			end := r.rawPos()
			if ok && r.compressed {
				end = r.memberStart
			} else if !ok && r.size >= 0 {
				end = r.size
			}
			r.emitRaw(end)
			if !ok {
				r.done = true
				return nil, io.EOF
			}
		}
		rec, err := r.next()
		if err == nil {
			r.lastEnd = max(r.lastEnd, rec.DataOffset+rec.DataLength)
		}
		if ioErr := r.cnt.err; ioErr != nil {
			// The input itself failed (EIO, EISDIR…): no resync can help.
			r.done = true
			return nil, &Error{File: r.name, Offset: r.cnt.n, Err: fmt.Errorf("read: %w", ioErr)}
		}
		return rec, err
	}
}

// openMember starts the next gzip member at the current raw position.
// It returns io.EOF at a clean end of file.
func (r *Reader) openMember() error {
	start := r.rawPos()
	var src io.Reader = r.raw
	if r.mem != nil {
		src = &r.mem.r
		if r.mapping != nil {
			r.mapping.Release(start)
		}
	}
	if r.tapOpen {
		r.tapOpen = false
		r.opts.Tap.End(r.tapStart, max(start-r.tapStart, 0), false)
	}
	if r.fast != nil {
		r.fast.on = false
	}
	pre := r.peekMember()
	// A member of a mapped input that the fast path inflates and verifies
	// whole has a sound header: the gzip reader need not parse it.
	fast := r.openFastFirst(start)
	var err error
	if !fast {
		err = r.gz.Reset(src)
	}
	if err == nil {
		if !fast {
			r.openFast(start, pre)
			r.gz.Multistream(false)
		}
		if r.opts.Tap != nil {
			r.tapOpen, r.tapStart = true, start
			r.opts.Tap.Member(start)
		}
		r.memberData, r.dcnt.err = r.dcnt.n, nil
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
		r.emitTail(start, -1, "partial gzip header")
		return r.errorf(start, ErrTruncated, "partial gzip header")
	}
	// Trailing zero padding (preallocated files) is not a record.
	if r.zeroTail() {
		r.emitSpan(Span{Offset: start, Length: r.rawPos() - start, DataOffset: -1, Reason: "zero padding at the end of the file", Padding: true})
		return io.EOF
	}
	r.resync, r.resyncFrom = true, start+1
	r.span = Span{Offset: start, DataOffset: -1, Reason: fmt.Sprintf("no gzip member here: %v", err)}
	return r.errorf(start, ErrCorrupt, "no gzip member here: %v", err)
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
		r.emitTail(r.memberStart, max(r.memberData, r.lastEnd), "gzip member cut short")
		return r.errorf(r.memberStart, ErrTruncated, "gzip member cut short")
	}
	r.resync, r.resyncFrom = true, r.memberStart+1
	r.span = Span{Offset: r.memberStart, DataOffset: -1, Reason: fmt.Sprintf("gzip: %v", err)}
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
		rec.DataOffset = r.dataPos()
		r.inShared = r.shared
		if r.shared {
			rec.anomaly("record shares the gzip member at offset %d with the previous record", r.memberStart)
		}
	} else {
		if err := r.skipBlank(); err != nil {
			if err == io.EOF {
				r.done = true
				return nil, io.EOF
			}
			r.done = true
			return nil, r.errorf(r.rawPos(), ErrCorrupt, "read: %v", err)
		}
		rec.Offset = r.rawPos()
		rec.DataOffset = rec.Offset
	}
	if !r.atWARCHead() {
		rec, err := r.readARC(rec)
		if err == nil && rec.DataLength == 0 {
			rec.DataLength = r.dataEnd(rec)
		}
		return rec, err
	}
	if err := r.readWARCHead(rec); err != nil {
		return nil, err
	}
	r.checkWARCLength(rec)
	if err := r.readBlock(rec); err != nil {
		return nil, err
	}
	if err := r.finishRecord(rec); err != nil {
		return nil, err
	}
	if rec.DataLength == 0 {
		rec.DataLength = r.dataEnd(rec)
	}
	return rec, nil
}

// dataEnd is the data length of rec just read: up to the current data
// position, or for a record whose gzip member ended early (the next
// member is open already) up to that member's first byte.
func (r *Reader) dataEnd(rec *Record) int64 {
	end := r.dataPos()
	if r.compressed && r.memberOpen && r.memberData > rec.DataOffset && r.memberData < end && !r.shared {
		end = r.memberData
	}
	return end - rec.DataOffset
}

// fail turns a problem at the record starting at rec.Offset into an error,
// truncation when the input ends there, corruption otherwise.
func (r *Reader) fail(rec *Record, atEOF bool, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if atEOF && (!r.compressed || !r.moreInput()) {
		r.done = true
		r.emitTail(rec.Offset, rec.DataOffset, msg)
		return r.errorf(rec.Offset, ErrTruncated, "%s", msg)
	}
	if r.compressed && r.memberOpen {
		// The gzip stream is sound: only the record's framing is not.
		// Reading goes on inside the member (it may hold more records,
		// or the whole file).
		r.dataResync = true
		// A record cut by damaged gzip data: the member's error is this
		// record's, not another one.
		r.quietGzip = r.dcnt.err != nil && r.dcnt.err != io.ErrUnexpectedEOF
		r.span = Span{Offset: r.memberStart, DataOffset: rec.DataOffset, Reason: msg}
		r.spanFirst = rec.DataOffset == r.memberData
		return r.errorf(rec.Offset, ErrCorrupt, "%s", msg)
	}
	r.resync, r.resyncFrom = true, rec.Offset+1
	r.span = Span{Offset: rec.Offset, DataOffset: -1, Reason: msg}
	if r.compressed {
		r.memberOpen = false
	}
	return r.errorf(rec.Offset, ErrCorrupt, "%s", msg)
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
		return r.fail(rec, false, "no WARC record here (starts %s)", excerpt.Quote(first, 40))
	}
	if head := bufferedHead(r.br, warcHeadAhead, maxWARCHead); head != nil {
		// The whole head is buffered: one string holds its fields.
		hs := string(head)
		r.br.Discard(len(head))
		line, rest := nextLine(hs)
		r.setVersion(rec, line)
		rec.Headers = headerFor(hs)
		for rest != "" {
			line, rest = nextLine(rest)
			if t := trimEOLString(line); t != "" {
				r.addWARCHeadLine(rec, t)
			}
		}
	} else {
		total := 0
		line, err := r.readHeadLine(&total)
		if err != nil {
			return r.fail(rec, err == io.EOF || err == io.ErrUnexpectedEOF, "partial WARC header: %v", err)
		}
		r.setVersion(rec, string(line))
		for {
			line, err := r.readHeadLine(&total)
			if err != nil {
				return r.fail(rec, err == io.EOF || err == io.ErrUnexpectedEOF, "partial WARC header: %v", err)
			}
			t := trimEOL(line)
			if len(t) == 0 {
				break
			}
			r.addWARCHeadLine(rec, string(t))
		}
	}
	var v [len(warcHeadNames)]string
	rec.Headers.getEach(warcHeadSet, v[:])
	rec.Type = strings.ToLower(v[0])
	rec.TargetURI = strings.Trim(v[1], "<>")
	rec.RecordID = v[2]
	rec.ContentType = v[3]
	if ds := v[4]; ds != "" {
		if t, ok := ParseDate(ds); ok {
			rec.Date = t
		} else {
			rec.anomaly("unparsable WARC-Date %q", ds)
		}
	} else {
		rec.anomaly("no WARC-Date")
	}
	if bd := v[5]; bd != "" {
		if d, err := digest.Normalize(bd); err == nil {
			rec.DeclaredBlockDigest = d
		} else {
			rec.anomaly("unparsable WARC-Block-Digest %q", bd)
		}
	}
	if pd := v[6]; pd != "" {
		if d, err := digest.Normalize(pd); err == nil {
			rec.DeclaredPayloadDigest = d
		} else {
			rec.anomaly("unparsable WARC-Payload-Digest %q", pd)
		}
	}
	cl := strings.TrimSpace(v[7])
	n, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || n < 0 {
		return r.fail(rec, false, "bad or missing Content-Length %q", cl)
	}
	rec.ContentLength = n
	return nil
}

// warcHeadNames are the fields readWARCHead takes from every head, in the
// order it uses them.
var warcHeadNames = [...]string{"WARC-Type", "WARC-Target-URI", "WARC-Record-ID", "Content-Type",
	"WARC-Date", "WARC-Block-Digest", "WARC-Payload-Digest", "Content-Length"}

var warcHeadSet = newFieldSet(warcHeadNames[:]...)

// warcHeadAhead is how far readWARCHead looks ahead for the end of a head
// it reads as one string.
const warcHeadAhead = 16 << 10

// setVersion sets rec.Version from the WARC version line.
func (r *Reader) setVersion(rec *Record, line string) {
	rec.Version = strings.TrimSpace(trimEOLString(line))[len(headerPrefix):]
	if v, _, ok := strings.Cut(rec.Version, " "); ok { // WARC/0.9 puts fields on the version line
		rec.Version = v
	}
}

// addWARCHeadLine adds a header line (not blank, line end removed).
func (r *Reader) addWARCHeadLine(rec *Record, t string) {
	if !rec.Headers.addLine(t) {
		rec.anomaly("header line without a colon: %s", excerpt.Quote(t, 60))
	}
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
