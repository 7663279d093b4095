package warcio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/internal/excerpt"
)

// ARCHeader is the header line of a record read from an ARC file (ARC v1:
// "URL IP-address Archive-date Content-type Archive-length"; ARC v2 adds
// "Result-code Checksum Location Offset Filename" before the length).
type ARCHeader struct {
	// Line is the header line as stored, without its line feed.
	Line string
	// Version is the ARC format version the line was read as: 1 or 2.
	Version int
	// URL is the record's URL as written, spaces included ("filedesc://NAME"
	// for the file's first record).
	URL string
	// IP is the IP-address field as written; Date the Archive-date field
	// (usually 14 digits, YYYYMMDDhhmmss in UTC); ContentType the
	// Content-type field ("no-type" and the like kept as written).
	IP, Date, ContentType string
	// Length is the declared Archive-length: the bytes after the header
	// line. Record.ContentLength is the length of the block as read, which
	// differs when the declared one was wrong (see Record.Anomalies).
	Length int64
	// ResultCode, Checksum, Location, Offset and Filename are the ARC v2
	// fields ("" for v1 lines).
	ResultCode, Checksum, Location, Offset, Filename string
}

// IsFiledesc reports whether the header opens an ARC file (its version
// block).
func (h *ARCHeader) IsFiledesc() bool {
	return strings.HasPrefix(strings.ToLower(h.URL), "filedesc:")
}

// maxARCLine bounds an ARC header line (long URLs included).
const maxARCLine = 64 << 10

// arcFields are the field names of the two ARC header line versions.
var arcFields = map[int]string{
	1: "URL IP-address Archive-date Content-type Archive-length",
	2: "URL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length",
}

// parseARCLine parses an ARC header line (without its line feed). version
// is the file's ARC version when known (0 otherwise): a v1 file's lines are
// read as v1, a v2 file's as v2, and an unknown file's as whichever fits.
// Fields are split on single spaces from the right, so a URL with spaces in
// it (which real crawlers wrote) is kept whole.
func parseARCLine(line []byte, version int) (ARCHeader, error) {
	s := strings.TrimRight(string(line), "\r")
	fields := strings.Split(s, " ")
	try := []int{1, 2}
	switch version {
	case 2:
		try = []int{2, 1}
	case 1:
		try = []int{1}
	}
	var firstErr error
	for _, v := range try {
		h, err := arcLineAs(s, fields, v)
		if err == nil {
			return h, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return ARCHeader{}, firstErr
}

func arcLineAs(s string, fields []string, version int) (ARCHeader, error) {
	n := 5
	if version == 2 {
		n = 10
	}
	if len(fields) < n {
		return ARCHeader{}, fmt.Errorf("ARC header line has %d fields, want %d (%s): %s", len(fields), n, arcFields[version], excerpt.Quote(s, 200))
	}
	tail := fields[len(fields)-(n-1):]
	h := ARCHeader{Line: s, Version: version, URL: strings.Join(fields[:len(fields)-(n-1)], " ")}
	h.IP, h.Date, h.ContentType = tail[0], tail[1], tail[2]
	if version == 2 {
		h.ResultCode, h.Checksum, h.Location, h.Offset, h.Filename = tail[3], tail[4], tail[5], tail[6], tail[7]
	}
	if !isScheme(h.URL) {
		return ARCHeader{}, fmt.Errorf("ARC header line does not start with a URL: %s", excerpt.Quote(s, 200))
	}
	if !allDigits(h.Date) || len(h.Date) < 8 || len(h.Date) > 28 {
		return ARCHeader{}, fmt.Errorf("ARC header line: Archive-date %s is not a date (%s): %s", excerpt.Quote(h.Date, 40), arcFields[version], excerpt.Quote(s, 200))
	}
	if version == 2 && (!allDigits(h.Offset) || h.ResultCode == "" || h.Filename == "") {
		return ARCHeader{}, fmt.Errorf("ARC header line is not an ARC v2 line (%s): %s", arcFields[version], excerpt.Quote(s, 200))
	}
	length := tail[len(tail)-1]
	l, err := strconv.ParseInt(length, 10, 64)
	if err != nil || l < 0 || !allDigits(length) {
		return ARCHeader{}, fmt.Errorf("ARC header line: Archive-length %s is not a length: %s", excerpt.Quote(length, 40), excerpt.Quote(s, 200))
	}
	h.Length = l
	if h.IP == "" {
		return ARCHeader{}, fmt.Errorf("ARC header line: empty IP-address field: %s", excerpt.Quote(s, 200))
	}
	return h, nil
}

// isScheme reports whether u starts with a URI scheme and a colon.
func isScheme(u string) bool {
	i := strings.IndexByte(u, ':')
	if i <= 0 || i > 32 {
		return false
	}
	for j := 0; j < i; j++ {
		c := u[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
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

// ARCDate parses an ARC Archive-date: YYYYMMDDhhmmss in UTC. Shorter dates
// are completed with zeros and longer ones cut to 14 digits, as pywb and
// jwarc read them.
func ARCDate(s string) (time.Time, bool) {
	if !allDigits(s) {
		return time.Time{}, false
	}
	if len(s) < 14 {
		s += "00000000000000"[len(s):]
	}
	t, err := time.Parse("20060102150405", s[:14])
	if err != nil {
		// Days or months written as 00 in short dates.
		if s[4:6] == "00" || s[6:8] == "00" {
			b := []byte(s[:14])
			if s[4:6] == "00" {
				b[5] = '1'
			}
			if s[6:8] == "00" {
				b[7] = '1'
			}
			t, err = time.Parse("20060102150405", string(b))
		}
		if err != nil {
			return time.Time{}, false
		}
	}
	return t.UTC(), true
}

// arcURL is the URL an ARC record is indexed under: the header's URL with
// the control characters pywb escapes percent-encoded.
func arcURL(u string) string {
	if strings.ContainsAny(u, "\r\n\x0c\x00") {
		u = strings.NewReplacer("\r", "%0D", "\n", "%0A", "\x0c", "%0C", "\x00", "%00").Replace(u)
	}
	return u
}

// isHTTPScheme reports whether a URI is http: or https: (only their ARC
// records hold HTTP messages, as pywb reads them).
func isHTTPScheme(u string) bool {
	l := len(u)
	return l >= 5 && strings.EqualFold(u[:5], "http:") || l >= 6 && strings.EqualFold(u[:6], "https:")
}

// StartsRecord reports whether head, the first bytes of a file (gzip
// removed), begins with a WARC record or a well-formed ARC header line: a
// file Open reads.
func StartsRecord(head []byte) bool { return startsRecord(head, 0) }

// startsRecord reports whether b, the start of a line, begins a WARC record
// ("WARC/") or holds a complete, well-formed ARC header line.
func startsRecord(b []byte, arcVersion int) bool {
	if len(b) >= len(headerPrefix) && strings.EqualFold(string(b[:len(headerPrefix)]), headerPrefix) {
		return true
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return false
	}
	_, err := parseARCLine(b[:i], arcVersion)
	return err == nil
}

// looksLikeARCAttempt reports whether the line at the start of b was meant
// as an ARC header line (a URL first, a length last) even if it does not
// parse as one.
func looksLikeARCAttempt(b []byte) bool {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[:i]))
	if len(f) < 2 || !allDigits(f[len(f)-1]) || !isScheme(f[0]) {
		return false
	}
	scheme := strings.ToLower(f[0][:strings.IndexByte(f[0], ':')])
	return strings.Contains(f[0], "://") || scheme == "dns" || scheme == "filedesc" || scheme == "whois"
}

// arcFileVersion reads the ARC version from the first line of a filedesc
// block ("1 1 InternetArchive": version 1.1); 0 when it does not say.
func arcFileVersion(block []byte) (major int, line string) {
	if i := bytes.IndexByte(block, '\n'); i >= 0 {
		block = block[:i]
	}
	line = strings.TrimSpace(string(block))
	f := strings.Fields(line)
	if len(f) == 0 {
		return 0, line
	}
	if v, err := strconv.Atoi(f[0]); err == nil && (v == 1 || v == 2) {
		return v, line
	}
	return 0, line
}

// arcFix is a corrected block length for the ARC record at offset.
type arcFix struct {
	set            bool
	offset, length int64
}

// errReread asks readARC to read the record again with r.arcFix.
var errReread = errors.New("warcio: re-read record with corrected length")

// atWARCHead reports whether the record at the current position starts
// with "WARC/".
func (r *Reader) atWARCHead() bool {
	b, _ := r.br.Peek(len(headerPrefix))
	return len(b) == len(headerPrefix) && strings.EqualFold(string(b), headerPrefix)
}

// atRecordStart reports whether a WARC record or a well-formed ARC header
// line starts at the current position of the data stream.
func (r *Reader) atRecordStart() bool {
	if r.atWARCHead() {
		return true
	}
	b, _ := r.br.Peek(min(maxARCLine, r.br.Size()))
	return startsRecord(b, r.arcVersion)
}

// readARC reads the ARC record whose header line starts at the current
// position. A record whose Archive-length proves wrong is read a second
// time with the length the file's structure gives (see arcFix).
func (r *Reader) readARC(rec *Record) (*Record, error) {
	start := *rec
	got, err := r.readARCOnce(rec)
	if err != errReread {
		return got, err
	}
	// Seek back and read the record again with the corrected length.
	*rec = start
	if !r.seekTo(rec.Offset) {
		r.arcFix = arcFix{}
		return nil, r.fail(rec, false, "cannot seek back to re-read the record")
	}
	if r.compressed {
		r.memberOpen = false
		if err := r.openMember(); err != nil {
			return nil, err
		}
		r.dcnt.n, r.memberData = rec.DataOffset, rec.DataOffset
		if err := r.skipBlank(); err != nil {
			return nil, r.fail(rec, true, "gzip member vanished on re-read")
		}
	}
	got, err = r.readARCOnce(rec)
	if err == errReread { // cannot happen: a fixed read is never corrected again
		err = r.fail(rec, false, "Archive-length cannot be corrected")
	}
	return got, err
}

func (r *Reader) readARCOnce(rec *Record) (*Record, error) {
	fix := int64(-1)
	if r.arcFix.set && r.arcFix.offset == rec.Offset {
		fix = r.arcFix.length
	}
	r.arcFix = arcFix{}
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			if !r.isARC {
				return nil, r.fail(rec, false, "no WARC or ARC record here (starts %s)", excerpt.Quote(line, 40))
			}
			return nil, r.fail(rec, false, "ARC header line longer than %d bytes", len(line))
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if !r.isARC && !isScheme(string(line)) {
				return nil, r.fail(rec, true, "no WARC or ARC record here (starts %s)", excerpt.Quote(line, 40))
			}
			return nil, r.fail(rec, true, "partial ARC header line %s", excerpt.Quote(line, 80))
		}
		return nil, r.fail(rec, false, "read: %v", err)
	}
	headLen := int64(len(line))
	h, perr := parseARCLine(trimEOL(line), r.arcVersion)
	if perr != nil {
		// Before the first ARC record, a line that is not even a URL
		// followed by fields is not an ARC file (e.g. "root:x:0:0:…",
		// whose "root:" reads as a scheme).
		if !r.isARC && (!isScheme(string(line)) || len(bytes.Fields(line)) < 3) {
			return nil, r.fail(rec, false, "no WARC or ARC record here (starts %s)", excerpt.Quote(line, 40))
		}
		return nil, r.fail(rec, false, "%v", perr)
	}
	r.isARC = true
	rec.ARC = &h
	rec.ContentLength = h.Length
	if fix < 0 {
		if n, ok := r.arcLengthFromData(h.Length); ok && n != h.Length {
			fix = n
		}
	}
	if fix >= 0 {
		rec.ContentLength = fix
		rec.anomaly("Archive-length %d is wrong: the record holds %d bytes", h.Length, fix)
		if fix < h.Length {
			rec.Truncated = "length"
		}
	}
	rec.ContentType = h.ContentType
	if t, ok := ARCDate(h.Date); ok {
		rec.Date = t
		if len(h.Date) != 14 {
			rec.anomaly("Archive-date %q has %d digits, not 14", h.Date, len(h.Date))
		}
	} else {
		rec.anomaly("unparsable Archive-date %q", h.Date)
	}
	if h.IsFiledesc() {
		rec.Type = "warcinfo"
		name := h.URL[len("filedesc:"):]
		name = strings.TrimLeft(name, "/")
		rec.Headers = Header{{"WARC-Type", "warcinfo"}, {"WARC-Filename", name}}
		if b, _ := r.br.Peek(int(min(256, rec.ContentLength))); len(b) > 0 {
			if v, _ := arcFileVersion(b); v != 0 {
				r.arcVersion = v
			}
		}
	} else {
		rec.Type = "response"
		rec.TargetURI = arcURL(h.URL)
		rec.Headers = Header{{"WARC-Type", "response"}, {"WARC-Target-URI", rec.TargetURI}}
	}
	rec.Headers = append(rec.Headers, Field{"WARC-IP-Address", h.IP})
	if !rec.Date.IsZero() {
		rec.Headers = append(rec.Headers, Field{"WARC-Date", rec.Date.Format(time.RFC3339)})
	}
	rec.Headers = append(rec.Headers, Field{"Content-Type", h.ContentType}, Field{"Content-Length", strconv.FormatInt(rec.ContentLength, 10)})

	if !r.compressed && fix < 0 && r.size >= 0 {
		blockStart := rec.Offset + headLen
		if left := r.size - blockStart; rec.ContentLength > left {
			return nil, r.arcOverrun(rec, left)
		}
	}
	r.arcFixed = fix >= 0
	if err := r.readBlock(rec); err != nil {
		return nil, err
	}
	if err := r.finishARC(rec, headLen, fix >= 0); err != nil {
		return nil, err
	}
	return rec, nil
}

// arcOverrun reports an Archive-length running past the end of a plain
// file: ErrCorrupt when a record follows (the reader is left on it), else
// ErrTruncated.
func (r *Reader) arcOverrun(rec *Record, left int64) error {
	msg := fmt.Sprintf("Archive-length %d overruns the file (%d bytes left after the header line)", rec.ARC.Length, left)
	if r.seekTo(rec.Offset+1) && r.skipToRecordLine() >= 0 && r.moreInput() {
		r.emitSpan(Span{Offset: rec.Offset, Length: r.rawPos() - rec.Offset, DataOffset: rec.Offset, DataLength: r.rawPos() - rec.Offset, Reason: msg})
		return r.errorf(rec.Offset, ErrCorrupt, "%s; reading goes on at offset %d", msg, r.rawPos())
	}
	r.done = true
	r.emitTail(rec.Offset, rec.DataOffset, msg)
	return r.errorf(rec.Offset, ErrTruncated, "%s", msg)
}

// finishARC checks what follows an ARC record's block and sets its Length.
// A block that does not end where the declared length says (junk before
// the next record, or the gzip member ending elsewhere) asks for a re-read
// with the length the file's structure gives, when the input can seek.
func (r *Reader) finishARC(rec *Record, headLen int64, fixed bool) error {
	if r.compressed {
		if r.pendingLength { // the member ended inside the block
			r.pendingLength = false
			return nil
		}
		dp0 := r.dataPos()
		err := r.skipBlank()
		if err == nil {
			if r.atRecordStart() {
				r.shared = true
				rec.anomaly("gzip member at offset %d holds more than one record", r.memberStart)
				return nil
			}
			first := rec.DataOffset == r.memberData && !r.shared
			// A damaged header line of the next record (as in a plain
			// file): the record keeps its Archive-length, the damaged
			// record is a span of its own.
			if b, _ := r.br.Peek(min(maxARCLine, r.br.Size())); looksLikeARCAttempt(b) {
				first = false
			}
			r.span = Span{Offset: r.memberStart, DataOffset: dp0, Reason: "bytes that start no record follow the record's Archive-length"}
			r.spanFirst = false
			s, last, serr := r.skipInMember()
			if serr != nil {
				return serr
			}
			if !r.memberOpen && first && !fixed && r.seeker != nil {
				// The member holds this record alone: its end is the
				// record's end, not the declared Archive-length.
				extra := r.dataPos() - dp0
				if last == '\n' {
					extra--
				}
				r.arcFix = arcFix{set: true, offset: rec.Offset, length: rec.ContentLength + extra}
				return errReread
			}
			rec.DataLength = dp0 - rec.DataOffset
			r.junkSpan(rec, s)
			if r.memberOpen {
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
		}
		return nil
	}
	// Plain file: Length stops at the block, as pywb counts it; the line
	// feeds between records belong to neither.
	rec.Length = r.rawPos() - rec.Offset
	b, _ := r.br.Peek(1)
	if len(b) == 0 {
		return nil // end of file: a missing final line feed is fine
	}
	if b[0] != '\n' && b[0] != '\r' && r.atRecordStart() {
		rec.anomaly("no line feed after the record")
		return nil
	}
	if r.skipBlank() != nil || r.atRecordStart() {
		return nil
	}
	if b, _ := r.br.Peek(min(maxARCLine, r.br.Size())); looksLikeARCAttempt(b) {
		// A damaged header line of the next record, not a wrong length:
		// the next call to Next reports it.
		return nil
	}
	if fixed || r.seeker == nil {
		rec.anomaly("bytes that start no record follow the record's Archive-length %d", rec.ARC.Length)
		return nil
	}
	blockStart := rec.Offset + headLen
	next, lastLF, ok := r.nextRecordLine(blockStart)
	if !ok {
		rec.anomaly("bytes that start no record follow the record's Archive-length %d", rec.ARC.Length)
		r.seekTo(rec.End())
		return nil
	}
	length := next - blockStart
	if lastLF && length > 0 {
		length--
	}
	r.arcFix = arcFix{set: true, offset: rec.Offset, length: length}
	return errReread
}

// nextRecordLine scans a plain file from off for the first line that starts
// a record, returning its offset (the end of the input when none does) and
// whether the byte before it is a line feed.
func (r *Reader) nextRecordLine(off int64) (next int64, lastLF, ok bool) {
	if !r.seekTo(off) {
		return 0, false, false
	}
	prevLF := false
	for {
		pos := r.rawPos()
		if pos > off && prevLF && r.atRecordStart() {
			return pos, true, true
		}
		line, err := r.br.ReadSlice('\n')
		if len(line) > 0 {
			prevLF = line[len(line)-1] == '\n'
		}
		if err != nil && err != bufio.ErrBufferFull {
			return r.rawPos(), prevLF, true
		}
	}
}

// arcLengthFromData checks an ARC record's Archive-length against the data
// that follows its header line, read ahead in the buffer (up to its size):
// a length confirmed by what follows it (a record header line, blank
// lines, the end of the data) is kept; one that runs over the next record
// header line, or stops short of it, is replaced by the length up to that
// line (less the line feed that separates records); one that runs past the
// end of the data (the gzip member or the file) by the length up to it,
// when the record is whole (a few bytes short, or an HTTP message whose
// body is complete). ok is false when the buffer cannot tell.
func (r *Reader) arcLengthFromData(declared int64) (n int64, ok bool) {
	want := int(min(declared+4096, int64(r.br.Size())))
	b, err := r.br.Peek(want)
	atEnd := err != nil && len(b) < want
	if int64(len(b)) > declared {
		i := int(declared)
		for i < len(b) && isBlank(b[i]) {
			i++
		}
		if i == len(b) {
			return declared, atEnd
		}
		if bytes.IndexByte(b[i:], '\n') < 0 && !atEnd {
			return 0, false
		}
		if startsRecord(b[i:], r.arcVersion) || looksLikeARCAttempt(b[i:]) {
			// Not at a line start, the declared end may be inside the next
			// header line (an Archive-length a few bytes long, "ttp://…"
			// still parsing) or right after a record without its line
			// feed: the HTTP message's own end tells them apart.
			if i > 0 && b[i-1] != '\n' {
				ls := bytes.LastIndexByte(b[:i], '\n') + 1
				if e := httpEnd(b); ls > 0 && e >= 0 && (e == ls-1 || e == ls) && startsRecord(b[ls:], r.arcVersion) {
					return int64(ls - 1), true
				}
			}
			return declared, true
		}
	} else if !atEnd {
		return 0, false
	} else if int64(len(b)) == declared {
		return declared, true
	}
	if j := recordLineIn(b, 0, r.arcVersion); j >= 0 {
		return int64(j - 1), true
	}
	if !atEnd {
		return 0, false
	}
	n = int64(len(b))
	if n > 0 && b[n-1] == '\n' {
		n--
	}
	if n < declared && declared-n > 16 && !httpWhole(b) && !(r.compressed && r.moreInput()) {
		// A record cut off at the end of the input: reported truncated.
		return 0, false
	}
	return n, true
}

// httpWhole reports whether b holds an HTTP message with a
// Content-Length whose body is complete.
func httpWhole(b []byte) bool {
	e := httpEnd(b)
	return e >= 0 && e <= len(b)
}

// httpEnd returns where the HTTP message at the start of b ends by its
// Content-Length (possibly past len(b)), or -1 when b holds no HTTP head
// with one.
func httpEnd(b []byte) int {
	end, sep := bytes.Index(b, []byte("\r\n\r\n")), 4
	if end < 0 {
		end, sep = bytes.Index(b, []byte("\n\n")), 2
	}
	if end < 0 || !looksLikeHTTP(b) {
		return -1
	}
	for _, line := range bytes.Split(b[:end], []byte("\n")) {
		name, val, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
			cl, err := strconv.Atoi(string(bytes.TrimSpace(val)))
			if err != nil || cl < 0 {
				return -1
			}
			return end + sep + cl
		}
	}
	return -1
}
