package warcio

import (
	"bytes"
	"fmt"
	"io"
	"sync"

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
