package warcio

import (
	"bufio"
	"fmt"
	"hash"
	"io"

	"github.com/wayside-archive/wayside/digest"
)

// isHTTPType reports whether records of this type carry HTTP messages when
// their block looks like one.
func isHTTPType(t string) bool { return t == "response" || t == "revisit" || t == "request" }

func (r *Reader) readBlock(rec *Record) error {
	r.blk.start(rec)
	if r.opts.BlockSink != nil {
		r.blk.copy = r.opts.BlockSink()
	}
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
	skipPayload := r.opts.SkipPayloadDigest || r.opts.PayloadDigestIfUndeclared && rec.DeclaredPayloadDigest != ""
	if !skipPayload {
		r.hash.Reset()
		sink = r.hash
	}
	if r.opts.KeepPayload > 0 {
		// Sized once from the block length (an upper bound of the
		// payload), instead of growing by appends.
		n := int(min(int64(r.opts.KeepPayload), rec.ContentLength))
		var buf []byte
		if r.opts.PayloadBuffer != nil {
			buf = r.opts.PayloadBuffer(n)[:0]
		} else {
			buf = make([]byte, 0, n)
		}
		r.keep = keepWriter{w: sink, max: r.opts.KeepPayload, buf: buf}
		sink = &r.keep
	}
	if r.opts.Payload != nil {
		sink = io.MultiWriter(sink, r.opts.Payload)
	}
	isHTTP := false
	// An ARC record holds an HTTP message only under an http(s) URL (dns:
	// and other records are taken as they are, as pywb reads them).
	if isHTTPType(rec.Type) && (rec.ARC == nil || isHTTPScheme(rec.TargetURI)) {
		// The head is read through hbr in small steps, so that the
		// payload after it is not copied there but digested straight
		// from the data buffer (blockReader.WriteTo).
		r.blk.headStep = true
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
		info, err := parseHTTPHead(r.hbr, r.opts.KeepHTTPHead, true)
		r.blk.headStep = false
		if err == nil {
			rec.HTTP = info
		}
		r.onHead(rec)
		if err != nil {
			rec.anomaly("HTTP head: %v", err)
			rec.PayloadLength, perr = r.hbr.WriteTo(sink)
		} else {
			body := r.hbr
			if info.isChunked() && !skipPayload {
				// Some writers digested the body with its chunk framing:
				// hash those bytes too, so Capture can tell that known
				// writer bug from a damaged record.
				if r.rawHash == nil {
					r.rawHash = newPayloadHash()
					r.teeBR = bufio.NewReaderSize(nil, 16<<10)
				}
				r.rawHash.Reset()
				r.teeBR.Reset(io.TeeReader(r.hbr, r.rawHash))
				body = r.teeBR
			}
			perr = copyPayload(info, body, sink)
			if body != r.hbr && perr == nil {
				_, perr = body.WriteTo(io.Discard)
			}
			if body != r.hbr {
				rec.ChunkedPayloadDigest = r.sha1String(r.rawHash)
			}
			rec.PayloadLength = info.PayloadLength
			if info.ChunkFallback {
				rec.anomaly("Transfer-Encoding chunked but the body is not validly chunked; rest taken as is")
			}
			rec.MIME = MediaType(info.Header.Get("Content-Type"))
		}
	} else {
		var n int64
		r.blk.headStep = false
		r.onHead(rec)
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
	if !skipPayload {
		if rec.HTTP != nil {
			rec.HTTP.PayloadDigest = r.sha1String(r.hash)
			rec.PayloadDigest = rec.HTTP.PayloadDigest
		} else {
			rec.PayloadDigest = r.sha1String(r.hash)
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

// sha1String is the canonical form of h's SHA-1 (summed into the reader's
// buffer: one allocation, the string).
func (r *Reader) sha1String(h hash.Hash) string {
	return digest.Digest{Alg: digest.SHA1, Sum: h.Sum(r.sum[:0])}.String()
}

// onHead tells the caller (Options.OnHead) that rec's headers are parsed.
func (r *Reader) onHead(rec *Record) {
	if r.opts.OnHead != nil {
		r.opts.OnHead(rec)
	}
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
			if r.atRecordStart() {
				// Another record in the same member.
				r.shared = true
				rec.anomaly("gzip member at offset %d holds more than one record", r.memberStart)
				return nil
			}
			if err := r.junkAfter(rec, r.dataPos()); err != nil {
				return err
			}
			if r.memberOpen { // a record follows in this member
				r.shared = true
				return nil
			}
			err = io.EOF
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
	blockEnd := r.rawPos()
	r.skipBlank()
	rec.Length = r.rawPos() - rec.Offset
	rec.indexLength = blockEnd - rec.Offset
	return nil
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
	copy      io.Writer // Options.BlockSink's writer
	last      byte      // the last block byte read
	// headStep: Read returns at most headStepSize bytes (the HTTP head
	// is being read).
	headStep bool
}

// headStepSize bounds what one Read returns while an HTTP head is read.
const headStepSize = 4 << 10

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
		if b.headStep && len(p) > headStepSize {
			p = p[:headStepSize]
		}
		n, err := b.r.br.Read(p)
		b.remaining -= int64(n)
		if n > 0 {
			if b.hash != nil {
				b.hash.Write(p[:n])
			}
			if b.copy != nil {
				if _, err := b.copy.Write(p[:n]); err != nil {
					b.err = fmt.Errorf("warcio: %s offset %d: block sink: %w", b.r.name, b.rec.Offset, err)
					return n, nil
				}
			}
			b.last = p[n-1]
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

// WriteTo writes the rest of the block to w straight from the data
// buffer (one copy fewer than Read through another buffer): the payload
// of a record reaches Options.Payload and the digests this way. It reads
// exactly what Read would.
func (b *blockReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	br := b.r.br
	for {
		if b.remaining <= 0 {
			return total, nil
		}
		if b.err != nil {
			return total, io.ErrUnexpectedEOF
		}
		// With the data buffer empty, the bytes of a member the fast
		// path serves are taken straight from its output (not copied
		// into the data buffer first).
		p := b.r.fastAhead(b.remaining)
		direct := len(p) > 0
		if !direct {
			if br.Buffered() == 0 {
				if _, err := br.Peek(1); err != nil && br.Buffered() == 0 {
					if !b.atEnd(err) {
						return total, io.ErrUnexpectedEOF
					}
					continue
				}
			}
			p, _ = br.Peek(int(min(int64(br.Buffered()), b.remaining)))
		}
		b.remaining -= int64(len(p))
		if b.hash != nil {
			b.hash.Write(p)
		}
		if b.copy != nil {
			if _, err := b.copy.Write(p); err != nil {
				// As Read: these bytes still go to w, then reading stops.
				b.err = fmt.Errorf("warcio: %s offset %d: block sink: %w", b.r.name, b.rec.Offset, err)
			}
		}
		b.last = p[len(p)-1]
		nw, werr := w.Write(p)
		if direct {
			b.r.fastTake(len(p))
		} else {
			br.Discard(len(p))
		}
		total += int64(nw)
		if werr == nil && nw < len(p) {
			werr = io.ErrShortWrite
		}
		if werr != nil {
			return total, werr
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
		msg := fmt.Sprintf("block ends %d bytes short of its Content-Length %d", b.remaining, b.rec.ContentLength)
		r.emitTail(b.rec.Offset, b.rec.DataOffset, msg)
		b.err = r.errorf(b.rec.Offset, ErrTruncated, "%s", msg)
		return false
	}
	// A complete gzip member ended inside the block.
	r.memberOpen = false
	if b.rec.ARC != nil {
		// One record per member: the member's end is the record's end,
		// not the declared Archive-length.
		if r.seeker != nil && !r.arcFixed && !r.inShared {
			n := b.rec.ContentLength - b.remaining
			if b.last == '\n' && n > 0 {
				n-- // the line feed ending every ARC record
			}
			r.arcFix = arcFix{set: true, offset: b.rec.Offset, length: n}
			b.err = errReread
			return false
		}
		b.short, b.remaining = b.remaining, 0
		b.pendingEnd(r.rawPos())
		return true
	}
	if !r.moreInput() {
		if b.remaining <= maxCLSlack {
			b.short, b.remaining = b.remaining, 0
			return true
		}
		r.done = true
		msg := fmt.Sprintf("file ends %d bytes short of the record's Content-Length %d", b.remaining, b.rec.ContentLength)
		r.emitTail(b.rec.Offset, b.rec.DataOffset, msg)
		b.err = r.errorf(b.rec.Offset, ErrTruncated, "%s", msg)
		return false
	}
	memberEnd := r.rawPos()
	if oerr := r.openMember(); oerr != nil {
		b.err = oerr
		return false
	}
	if r.atRecordStart() {
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
	if !b.r.inShared {
		b.rec.Length = memberEnd - b.rec.Offset
	}
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
