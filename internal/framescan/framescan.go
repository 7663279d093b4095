package framescan

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/internal/mapfile"
)

// Record is a record header found by the scan.
type Record struct {
	// Member is the stored offset of the gzip member the header starts in
	// (its own offset in an uncompressed file); DataOffset the header's
	// offset in the uncompressed data (the member's data following each
	// other).
	Member     int64
	DataOffset int64
	// ARC is set for an ARC header line.
	ARC bool
	// Type is the WARC-Type (lower case); "filedesc" or "arc" for ARC.
	Type string
	// ID is the WARC-Record-ID ("" for ARC).
	ID string
	// URI is the WARC-Target-URI (without angle brackets) or the ARC URL.
	URI string
	// Date is the WARC-Date or the ARC Archive-date, as written.
	Date string
	// Length is the declared Content-Length or Archive-length.
	Length int64
	// Confirmed says that the declared length ends where a header, a gzip
	// member or the data ends.
	Confirmed bool

	end int64 // data offset of the declared end
}

// Key identifies a record across readings: the WARC-Record-ID, or for
// ARC records (and WARC records without one) the URI and date.
func (r Record) Key() string {
	if r.ID != "" {
		return "id " + r.ID
	}
	return "uri " + r.URI + " " + r.Date
}

// AppendKey appends Key to b (for a caller that hashes many keys into a
// reused buffer instead of making a string of each).
func (r Record) AppendKey(b []byte) []byte {
	if r.ID != "" {
		return append(append(b, "id "...), r.ID...)
	}
	return append(append(append(append(b, "uri "...), r.URI...), ' '), r.Date...)
}

// Gap is a stretch of stored bytes that is no gzip data.
type Gap struct {
	Offset, Length int64
	Reason         string
}

// Result is what a scan found.
type Result struct {
	Compressed bool
	Members    int
	DataBytes  int64
	// Records are the records found, in file order.
	Records []Record
	// Gaps are the stored stretches that are no (or broken) gzip data.
	Gaps []Gap
}

// maxHead bounds a WARC header block and an ARC header line.
const maxHead = 1 << 20

// File scans the file at path, mapped read-only: members are inflated
// straight from the mapping (no read copies), and the pages behind the
// scan are released as it moves on, so the resident size stays bounded
// whatever the file's size. A file truncated while it is scanned is an
// error, not a crash.
func File(path string) (res *Result, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("framescan: %w", err)
	}
	defer f.Close()
	m, err := mapfile.Map(f)
	if err != nil {
		// A file that cannot be mapped (some network and FUSE file
		// systems) is read instead.
		fi, serr := f.Stat()
		if serr != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("framescan: %w", err)
		}
		return Scan(f, fi.Size())
	}
	defer m.Close()
	defer func() {
		if err != nil {
			res, err = nil, fmt.Errorf("framescan: %w", err)
		}
	}()
	defer mapfile.Recover(&err, mapfile.Guard(), m)
	return scan(&mappedSource{data: m.Bytes(), release: m.Release})
}

// Scan scans size bytes read from ra.
func Scan(ra io.ReaderAt, size int64) (*Result, error) {
	return scan(&readerAtSource{ra: ra, n: size, base: -1})
}

// source is what a scan reads: a file's stored bytes, read as a
// flate.Reader (io.Reader and io.ByteReader: the inflater then reads no
// byte past a member's end, so where one member ends the next starts).
type source interface {
	// size is the file's size.
	size() int64
	// at returns a reader positioned at off (kept when reading already
	// stands there).
	at(off int64) flate.Reader
	// pos is the offset of the next byte the reader returned by at gives.
	pos() int64
	// next returns the offset of the next gzip header (1f 8b 08) at or
	// after off, or size.
	next(off int64) int64
	// done says the bytes before off will not be read again.
	done(off int64)
	// readAt reads the stored bytes at off into p (not moving the reader
	// at returns) and returns how many it read.
	readAt(p []byte, off int64) int
}

// mappedSource reads a mapped file: the inflater reads a *bytes.Reader,
// for which klauspost/compress has a decoding loop of its own (no
// interface call per byte).
type mappedSource struct {
	data    []byte
	release func(off int64)
	br      bytes.Reader
	base    int64
}

func (m *mappedSource) size() int64 { return int64(len(m.data)) }

func (m *mappedSource) done(off int64) { m.release(off) }

func (m *mappedSource) readAt(p []byte, off int64) int {
	if off < 0 || off >= int64(len(m.data)) {
		return 0
	}
	return copy(p, m.data[off:])
}

func (m *mappedSource) at(off int64) flate.Reader {
	if m.br.Size() == 0 || m.pos() != off {
		m.br.Reset(m.data[off:])
		m.base = off
	}
	return &m.br
}

func (m *mappedSource) pos() int64 { return m.base + m.br.Size() - int64(m.br.Len()) }

func (m *mappedSource) next(off int64) int64 {
	if off >= int64(len(m.data)) {
		return int64(len(m.data))
	}
	if i := bytes.Index(m.data[off:], gzipMagic); i >= 0 {
		return off + int64(i)
	}
	return int64(len(m.data))
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// readerAtSource reads an io.ReaderAt through one buffer, in large reads:
// a member that ends cleanly leaves the buffer at the next one; after a
// gap reading starts afresh where the next member starts.
type readerAtSource struct {
	ra   io.ReaderAt
	n    int64
	cr   countReader
	br   *bufio.Reader
	base int64 // where cr's section of the file starts (-1: none yet)
}

func (r *readerAtSource) size() int64 { return r.n }

func (r *readerAtSource) at(off int64) flate.Reader {
	if r.br == nil {
		r.br = bufio.NewReaderSize(&r.cr, 256<<10)
	}
	if r.base < 0 || r.pos() != off {
		r.cr = countReader{r: io.NewSectionReader(r.ra, off, r.n-off)}
		r.base = off
		r.br.Reset(&r.cr)
	}
	return r.br
}

func (r *readerAtSource) pos() int64 { return r.base + r.cr.n - int64(r.br.Buffered()) }

func (r *readerAtSource) next(off int64) int64 { return nextMagic(r.ra, off, r.n) }

func (r *readerAtSource) done(int64) {}

func (r *readerAtSource) readAt(p []byte, off int64) int {
	n, _ := r.ra.ReadAt(p, off)
	return n
}

// scan frames the file src reads.
func scan(src source) (*Result, error) {
	res := &Result{}
	size := src.size()
	if size >= 2 {
		var magic [2]byte
		if n, _ := io.ReadFull(src.at(0), magic[:]); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			res.Compressed = true
		}
	}
	s := &scanner{res: res, done: func() { src.done(src.pos()) }}
	if !res.Compressed {
		if err := s.stream(src.at(0), 0); err != nil {
			return nil, fmt.Errorf("framescan: %w", err)
		}
		res.DataBytes = s.data
		s.ends = append(s.ends, s.data)
		s.resolve()
		return res, nil
	}
	w := &walker{src: src, s: s}
	for off := int64(0); off < size; {
		var stop bool
		if off, stop = w.step(off); stop {
			break
		}
	}
	res.DataBytes = s.data
	s.resolve()
	return res, nil
}

// walker is the scan's own member walk over a compressed file.
type walker struct {
	src source
	s   *scanner
	// One inflater for all members (Reset): a file of many small members
	// would otherwise allocate one for every record. The inflater is
	// klauspost/compress's, a well-kept library (see the package doc).
	zr gzip.Reader
}

// step frames what lies at stored offset off — a gzip member, or the gap
// up to the next gzip header — and returns where the next step starts;
// stop says the walk cannot go on (nothing was consumed).
func (w *walker) step(off int64) (next int64, stop bool) {
	src, s, res, zr := w.src, w.s, w.s.res, &w.zr
	err := zr.Reset(src.at(off))
	if err != nil {
		next := src.next(off + 1)
		res.Gaps = append(res.Gaps, Gap{off, next - off, "no gzip member here: " + err.Error()})
		return next, false
	}
	zr.Multistream(false)
	member := off
	start := s.data
	s.flushable = true
	serr := s.stream(zr, member)
	s.flushable = false
	used := src.pos() - off
	if serr != nil {
		// Damaged gzip data: what inflated is scanned; the rest of the
		// member up to the next gzip header is a gap.
		next := src.next(off + 1)
		res.Gaps = append(res.Gaps, Gap{off, next - off, "gzip: " + serr.Error()})
		s.ends = append(s.ends, s.data)
		return next, false
	}
	res.Members++
	if s.data == start && used == 0 {
		return off, true
	}
	s.ends = append(s.ends, s.data)
	return off + used, false
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// nextMagic returns the offset of the next gzip header (1f 8b 08) at or
// after off, or size.
func nextMagic(ra io.ReaderAt, off, size int64) int64 {
	buf := make([]byte, 64<<10)
	for off < size {
		n, _ := ra.ReadAt(buf, off)
		if n < 3 {
			return size
		}
		if i := bytes.Index(buf[:n], gzipMagic); i >= 0 {
			return off + int64(i)
		}
		off += int64(n - 2)
	}
	return size
}

type scanner struct {
	res  *Result
	data int64   // data bytes scanned so far
	ends []int64 // data offsets where a member (or the data) ends
	arcV int     // ARC version from the filedesc, when known
	// expect is where the last ARC record's declared length ends.
	expect int64
	// head is 1 on the first line after an ARC header line, 2 inside its
	// HTTP head, 0 otherwise; headCL is the head's Content-Length and
	// httpEnd where the message ends by it (-1: unknown).
	head            int
	headCL, httpEnd int64
	// br reads the data of the stream being scanned (kept between
	// members); sl reads a member passed as slices (Tap).
	br *bufio.Reader
	sl sliceLines
	// done is called every doneStep data bytes (the source may release
	// what lies behind); nextDone is the data offset of the next call.
	done     func()
	nextDone int64
	// emit, when set, receives the records as flush and resolve decide
	// them (Result.Records is then left empty); unsorted says a record
	// was found before the one found last (flush then leaves all to
	// resolve).
	emit     func(Record)
	unsorted bool
	// flushable says nothing the stream being scanned finds is undone
	// (not a member taken from a tap before it is proved): records may be
	// flushed while it is scanned.
	flushable bool
}

// doneStep is how many data bytes the scan moves on between two calls of
// scanner.done.
const doneStep = 4 << 20

func (s *scanner) add(rec Record) {
	if rec.ARC {
		s.expect = rec.end
		s.head, s.headCL, s.httpEnd = 1, -1, -1
	}
	if n := len(s.res.Records); n > 0 && rec.DataOffset < s.res.Records[n-1].DataOffset {
		s.unsorted = true
	}
	s.res.Records = append(s.res.Records, rec)
}

// flush passes to s.emit, and drops from memory, the records whose fate
// resolve would decide no differently now: those whose declared end lies
// more than slack before the data scanned so far (no record header or
// member end found later can lie near it), in order, with the records
// inside a confirmed one dropped as resolve drops them. Called only where
// nothing scanned is undone any more (after a member is proved or a walk
// step), it leaves the pending records, and the member ends at or after
// the first of them, for the next flush or resolve. Records found out of
// order (never seen, but possible in principle) stop flushing: resolve
// then sorts and decides them all at the end.
func (s *scanner) flush() { s.flushTo(s.data) }

// flushTo is flush where no record found later starts before bound (the
// data scanned so far, or the start of the line being scanned).
func (s *scanner) flushTo(bound int64) {
	if s.emit == nil || s.unsorted {
		return
	}
	for i := 1; i < len(s.ends); i++ {
		if s.ends[i] < s.ends[i-1] {
			s.unsorted = true
			return
		}
	}
	c := s.res.Records
	i := 0
	for i < len(c) && c[i].end+slack < bound {
		r := c[i]
		// As resolve decides: a record header (any found, those inside
		// r included) or a member end near r's end confirms it.
		r.Confirmed = false
		for _, q := range c[i+1:] {
			if q.DataOffset >= r.end {
				r.Confirmed = q.DataOffset <= r.end+slack
				break
			}
		}
		if !r.Confirmed {
			k := sort.Search(len(s.ends), func(k int) bool { return s.ends[k] >= r.end })
			r.Confirmed = k < len(s.ends) && s.ends[k] <= r.end+slack
		}
		j := i + 1
		if r.Confirmed {
			// Every header inside r was found already (they lie before
			// the data scanned): dropped, as resolve drops them.
			for j < len(c) && c[j].DataOffset < r.end {
				j++
			}
		}
		s.emit(r)
		i = j
	}
	if i == 0 {
		return
	}
	s.res.Records = append(c[:0], c[i:]...)
	clear(c[len(s.res.Records):])
	// Member ends before the first pending record (or the bound) can
	// confirm no record still to come.
	if len(s.res.Records) > 0 {
		bound = s.res.Records[0].DataOffset
	}
	k := sort.Search(len(s.ends), func(k int) bool { return s.ends[k] >= bound })
	s.ends = append(s.ends[:0], s.ends[k:]...)
}

// http follows the HTTP head of the last ARC record (the line at data
// offset at is one of its lines) to learn where its message ends.
func (s *scanner) http(line []byte, at int64) {
	switch {
	case s.head == 0:
	case s.head == 1: // the record's first line
		s.head = 2
		if !bytes.HasPrefix(line, []byte("HTTP/")) {
			s.head = 0
		}
	case len(trimEOL(line)) == 0:
		if s.headCL >= 0 {
			s.httpEnd = at + int64(len(line)) + s.headCL
		}
		s.head = 0
	default:
		name, val, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(strings.TrimSpace(string(name)), "content-length") {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(val)), 10, 64); err == nil && n >= 0 {
				s.headCL = n
			}
		}
	}
}

// stream scans one member's (or a plain file's) data.
func (s *scanner) stream(rd io.Reader, member int64) error {
	if s.br == nil {
		s.br = bufio.NewReaderSize(rd, lineBuf)
	} else {
		s.br.Reset(rd)
	}
	return s.streamLines(s.br, member)
}

// streamSlices scans one member's data passed as slices (see sliceLines).
func (s *scanner) streamSlices(src sliceSource, member int64) error {
	s.sl.reset(src)
	return s.streamLines(&s.sl, member)
}

// streamLines scans the data br reads.
func (s *scanner) streamLines(br lineReader, member int64) error {
	atLineStart := true
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			s.data += int64(len(line))
			atLineStart = false
			continue
		}
		if len(line) > 0 {
			at := s.data
			s.data += int64(len(line))
			if s.data >= s.nextDone && s.done != nil {
				s.done()
				s.nextDone = s.data + doneStep
				if s.flushable {
					// No record found from here on starts before this
					// line: those decided are passed on.
					s.flushTo(at)
				}
			}
			s.http(line, at)
			if e := s.expect; err == nil && e > at && e < s.data {
				// An ARC record not followed by a line feed: the next
				// header line starts where its declared length ends —
				// unless the line itself is a header line and the HTTP
				// message before it ends at its start (the declared
				// length is then a few bytes long, and "ttp://…" still
				// reads as a header line).
				_, lineOK := s.arcLine(line)
				if rec, ok := s.arcLine(line[e-at:]); ok && !(atLineStart && lineOK && (s.httpEnd == at || s.httpEnd == at-1)) {
					rec.Member, rec.DataOffset = member, e
					rec.end = s.data + rec.Length
					s.add(rec)
					atLineStart = false
				}
			}
			if atLineStart && err == nil {
				s.header(line, at, member, br)
			}
			atLineStart = err == nil
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// header looks at a complete line at data offset at for a record header,
// reading the rest of a WARC header block from br.
func (s *scanner) header(line []byte, at, member int64, br lineReader) {
	// (The first byte is tested first: this runs on every line.)
	if len(line) >= 7 && line[0]|0x20 == 'w' && strings.EqualFold(string(line[:5]), "WARC/") && line[5] >= '0' && line[5] <= '9' && line[6] == '.' {
		rec := Record{Member: member, DataOffset: at, Length: -1}
		n := int64(len(line))
		for n < maxHead {
			l, err := br.ReadSlice('\n')
			if err != nil {
				s.data += int64(len(l))
				return // no complete header block: not a record header
			}
			n += int64(len(l))
			s.data += int64(len(l))
			t := trimEOL(l)
			if len(t) == 0 {
				break
			}
			name, val, ok := bytes.Cut(t, []byte(":"))
			if !ok {
				continue
			}
			f := fieldName(bytes.TrimSpace(name))
			if f == "" {
				continue // a field the framing does not keep: nothing allocated
			}
			v := strings.TrimSpace(string(val))
			switch f {
			case "warc-type":
				rec.Type = strings.ToLower(v)
			case "warc-record-id":
				rec.ID = v
			case "warc-target-uri":
				rec.URI = strings.Trim(v, "<>")
			case "warc-date":
				rec.Date = v
			case "content-length":
				if x, err := strconv.ParseInt(v, 10, 64); err == nil && x >= 0 {
					rec.Length = x
				}
			}
		}
		if rec.Type == "" || rec.Length < 0 {
			return
		}
		rec.end = at + n + rec.Length
		s.add(rec)
		return
	}
	if rec, ok := s.arcLine(line); ok {
		rec.Member, rec.DataOffset = member, at
		rec.end = at + int64(len(line)) + rec.Length
		if rec.Type == "filedesc" {
			if b, err := br.Peek(8); err == nil || len(b) > 0 {
				if f := strings.Fields(string(b)); len(f) > 0 && (f[0] == "1" || f[0] == "2") {
					s.arcV = int(f[0][0] - '0')
				}
			}
		}
		s.add(rec)
	}
}

// headerFields are the WARC header fields header keeps, lower case.
var headerFields = [...]string{"warc-type", "warc-record-id", "warc-target-uri", "warc-date", "content-length"}

// fieldName returns which of headerFields the (trimmed) field name is,
// as strings.ToLower would find it, or "". An ASCII name (every name
// seen in practice) is compared without a copy; any other is lowered as
// a string, so that the Unicode case mappings ToLower applies match as
// they did.
func fieldName(name []byte) string {
	for _, c := range name {
		if c >= 0x80 {
			low := strings.ToLower(string(name))
			for _, f := range headerFields {
				if low == f {
					return f
				}
			}
			return ""
		}
	}
	for _, f := range headerFields {
		if len(name) == len(f) && asciiEqualFold(name, f) {
			return f
		}
	}
	return ""
}

// asciiEqualFold reports whether the ASCII bytes b equal the lower-case
// ASCII string low, ignoring case.
func asciiEqualFold(b []byte, low string) bool {
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != low[i] {
			return false
		}
	}
	return true
}

// arcLine parses an ARC header line: URL IP DATE TYPE LENGTH (v1) or URL
// IP DATE TYPE RESULT CHECKSUM LOCATION OFFSET FILENAME LENGTH (v2), the
// URL possibly holding spaces (fields are taken from the right).
func (s *scanner) arcLine(line []byte) (Record, bool) {
	b := trimEOL(line)
	// Cheap tests first (this runs on every line of every payload): a
	// letter first, a digit last, a colon early, at least four spaces.
	if len(b) < 16 || len(b) > maxHead || !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= 'A' && b[0] <= 'Z') ||
		b[len(b)-1] < '0' || b[len(b)-1] > '9' || bytes.IndexByte(b[:min(len(b), 33)], ':') < 0 || bytes.Count(b, []byte{' '}) < 4 {
		return Record{}, false
	}
	t := string(b)
	f := strings.Split(t, " ")
	for _, n := range s.arcCounts() {
		if len(f) < n {
			continue
		}
		tail := f[len(f)-n+1:]
		url := strings.Join(f[:len(f)-n+1], " ")
		length, date := tail[len(tail)-1], tail[1]
		if !scheme(url) || tail[0] == "" || !digits(date) || len(date) < 8 || len(date) > 28 || !digits(length) {
			continue
		}
		if n == 10 && !digits(tail[6]) {
			continue
		}
		l, err := strconv.ParseInt(length, 10, 64)
		if err != nil {
			continue
		}
		typ := "arc"
		if strings.HasPrefix(strings.ToLower(url), "filedesc:") {
			typ = "filedesc"
		}
		return Record{ARC: true, Type: typ, URI: url, Date: date, Length: l}, true
	}
	return Record{}, false
}

// trimEOL is bytes.TrimRight(b, "\r\n") without the cutset's set built
// on every call (arcLine looks at every line of every payload). warcio
// has its own; this package does not use warcio's code.
func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func (s *scanner) arcCounts() []int {
	switch s.arcV {
	case 1:
		return []int{5}
	case 2:
		return []int{10, 5}
	}
	return []int{5, 10}
}

func scheme(u string) bool {
	i := strings.IndexByte(u, ':')
	if i <= 0 || i > 32 {
		return false
	}
	for j := 0; j < i; j++ {
		c := u[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// slack is how far past a declared end the next header (or a member's
// end) may start and still confirm it: the CRLF CRLF closing a WARC
// record, the line feed after an ARC record.
const slack = 4

// resolve drops the headers found inside a record whose declared length is
// confirmed (they are its payload) and marks the confirmed records.
func (s *scanner) resolve() {
	c := s.res.Records
	sort.SliceStable(c, func(i, j int) bool { return c[i].DataOffset < c[j].DataOffset })
	ends := s.ends
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	starts := make([]int64, len(c))
	for i := range c {
		starts[i] = c[i].DataOffset
	}
	near := func(xs []int64, e int64) bool {
		k := sort.Search(len(xs), func(i int) bool { return xs[i] >= e })
		return k < len(xs) && xs[k] <= e+slack
	}
	var out []Record
	for i := 0; i < len(c); {
		r := c[i]
		r.Confirmed = near(starts, r.end) || near(ends, r.end)
		out = append(out, r)
		j := i + 1
		if r.Confirmed {
			for j < len(c) && c[j].DataOffset < r.end {
				j++
			}
		}
		i = j
	}
	s.res.Records = out
	if s.emit != nil {
		for _, r := range out {
			s.emit(r)
		}
		s.res.Records = nil
	}
}
