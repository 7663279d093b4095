package warcio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/internal/iox"
)

// MemberWriter writes WARC records as gzip members, one member per record,
// the layout every WARC file Wayside writes has (and the one CDX indexes
// need: a record's offset and stored length are its member's). It is the
// one place records are compressed: the crawler's writer, ARC conversion,
// post-crawl dedup's revisits and characterization metadata all use it.
//
// A MemberWriter keeps its compressor between records (a gzip.Writer is
// large to allocate); it is not safe for concurrent use: give each
// goroutine its own, or take them from a MemberPool. The bytes written are
// exactly those of a gzip.Writer at the same level compressing the same
// record in one go.
type MemberWriter struct {
	level int
	zw    *gzip.Writer
	fw    *flate.Writer // for WriteMemberStoring, made on first use
	cw    iox.CountWriter
	head  bytes.Buffer
}

// NewMemberWriter returns a MemberWriter compressing at level, 1 (fastest)
// to 9 (smallest); 0 means the default, 6.
func NewMemberWriter(level int) (*MemberWriter, error) {
	if level == 0 {
		level = 6
	}
	if level < gzip.BestSpeed || level > gzip.BestCompression {
		return nil, fmt.Errorf("warcio: gzip level %d out of range 1-9", level)
	}
	zw, err := gzip.NewWriterLevel(io.Discard, level)
	if err != nil {
		return nil, fmt.Errorf("warcio: gzip level %d: %w", level, err)
	}
	return &MemberWriter{level: level, zw: zw}, nil
}

// Level returns the compression level.
func (m *MemberWriter) Level() int { return m.level }

// WriteRecord writes the record h heads as one gzip member to w: h's header
// (see RecordHead.Write), the block read from block, which must hold
// exactly h.ContentLength bytes, and RecordEnd. It returns the member's
// stored length, the bytes w accepted. Errors of w and block are returned
// as they are; a block of the wrong length is an error naming the record,
// and the bytes already written to w are then no complete member.
func (m *MemberWriter) WriteRecord(w io.Writer, h *RecordHead, block io.Reader) (int64, error) {
	m.head.Reset()
	h.Write(&m.head)
	m.begin(w)
	if _, err := m.zw.Write(m.head.Bytes()); err != nil {
		return m.cw.N, err
	}
	if n, err := io.Copy(m.zw, block); err != nil {
		return m.cw.N, err
	} else if n != h.ContentLength {
		return m.cw.N, fmt.Errorf("record %s: wrote %d block bytes, Content-Length %d", h.ID, n, h.ContentLength)
	}
	if _, err := io.WriteString(m.zw, RecordEnd); err != nil {
		return m.cw.N, err
	}
	err := m.zw.Close()
	return m.cw.N, err
}

// WriteMember writes record, a whole serialised record (or any bytes), as
// one gzip member to w and returns the member's stored length.
func (m *MemberWriter) WriteMember(w io.Writer, record []byte) (int64, error) {
	m.begin(w)
	if _, err := m.zw.Write(record); err != nil {
		return m.cw.N, err
	}
	err := m.zw.Close()
	return m.cw.N, err
}

// WriteMemberStoring is WriteMember for a record whose bytes from
// record[from:] on are already compressed (a JPEG, a gzip-encoded HTTP
// body): they go into the member as stored deflate blocks instead of
// being deflated again, which would cost most of the time of writing the
// record to save a fraction of a percent; record[:from] (the WARC and
// HTTP headers) is deflated as WriteMember does. The member is an
// ordinary gzip member (RFC 1952 over RFC 1951 fixed, dynamic and stored
// blocks) that every gzip reader reads; its bytes are not those of
// gzip.Writer. from outside 1..len(record)-1 means WriteMember.
func (m *MemberWriter) WriteMemberStoring(w io.Writer, record []byte, from int) (int64, error) {
	if from <= 0 || from >= len(record) {
		return m.WriteMember(w, record)
	}
	if m.fw == nil {
		fw, err := flate.NewWriter(io.Discard, m.level)
		if err != nil {
			return 0, fmt.Errorf("warcio: deflate level %d: %w", m.level, err)
		}
		m.fw = fw
	}
	m.cw = iox.CountWriter{W: w}
	// RFC 1952 header: no name, no time, OS unknown.
	if _, err := m.cw.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}); err != nil {
		return m.cw.N, err
	}
	m.fw.Reset(&m.cw)
	if _, err := m.fw.Write(record[:from]); err != nil {
		return m.cw.N, err
	}
	// A sync flush ends the deflated part on a byte boundary (with an
	// empty stored block), where stored blocks may follow.
	if err := m.fw.Flush(); err != nil {
		return m.cw.N, err
	}
	var hdr [5]byte
	for rest := record[from:]; len(rest) > 0; {
		n := min(len(rest), 0xffff)
		hdr[0] = 0 // BFINAL 0, BTYPE 00 (stored), padded to the byte
		if n == len(rest) {
			hdr[0] = 1
		}
		binary.LittleEndian.PutUint16(hdr[1:], uint16(n))
		binary.LittleEndian.PutUint16(hdr[3:], ^uint16(n))
		if _, err := m.cw.Write(hdr[:]); err != nil {
			return m.cw.N, err
		}
		if _, err := m.cw.Write(rest[:n]); err != nil {
			return m.cw.N, err
		}
		rest = rest[n:]
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc32.ChecksumIEEE(record))
	binary.LittleEndian.PutUint32(trailer[4:], uint32(len(record)))
	_, err := m.cw.Write(trailer[:])
	return m.cw.N, err
}

// begin starts a member written to w.
func (m *MemberWriter) begin(w io.Writer) {
	m.cw = iox.CountWriter{W: w}
	m.zw.Reset(&m.cw)
}

// MemberPool holds MemberWriters of one level for callers that compress
// from many goroutines. The zero value is not usable: use NewMemberPool.
type MemberPool struct {
	level int
	pool  sync.Pool
}

// NewMemberPool returns a pool of MemberWriters compressing at level (as
// NewMemberWriter takes it).
func NewMemberPool(level int) (*MemberPool, error) {
	m, err := NewMemberWriter(level)
	if err != nil {
		return nil, err
	}
	p := &MemberPool{level: m.level}
	p.pool.New = func() any {
		m, _ := NewMemberWriter(p.level) // the level is checked above
		return m
	}
	p.pool.Put(m)
	return p, nil
}

// Get returns a MemberWriter from the pool (a new one when it is empty).
func (p *MemberPool) Get() *MemberWriter { return p.pool.Get().(*MemberWriter) }

// Put returns m to the pool. It must not be used afterwards.
func (p *MemberPool) Put(m *MemberWriter) {
	if m.head.Cap() > 1<<20 { // an outsized header's buffer is not kept
		m.head = bytes.Buffer{}
	}
	m.cw = iox.CountWriter{} // drop the reference to the last destination
	p.pool.Put(m)
}
