package postdedup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wayside-archive/wayside/internal/framescan"
	"github.com/wayside-archive/wayside/warcio"
)

// The framing record of an input: how the manifest scan's reader framed
// it (every record it read, every stretch it reported unreadable), written
// sequentially during the scan, one file per input, so that validation
// compares the second framing (package framescan) with the reading the
// manifest was built from without inflating the input a third time.
//
//	#wayside-dedup-framing	{"format":1,"path":...,"size":...,"mtime":...}
//	r	OFFSET	DATA-OFFSET	KEY          (framescan.Key of a record read)
//	s	OFFSET	LENGTH	DATA-OFFSET	DATA-LENGTH   (a non-padding span)
//	#end	RECORDS	PROBLEMS
//
// KEY is escaped as manifest text fields are. A file without its #end line
// is cut short and refused.
const (
	framingFormat  = "#wayside-dedup-framing"
	framingVersion = 1
)

// framingHeader identifies the input a framing record describes.
type framingHeader struct {
	Format int       `json:"format"`
	Path   string    `json:"path"`
	Size   int64     `json:"size"`
	MTime  time.Time `json:"mtime"`
}

// FramingDir is the directory beside the manifest named manifest that
// holds the framing records of its inputs (removed with the manifest).
func FramingDir(manifest string) string {
	return filepath.Join(filepath.Dir(manifest), filepath.Base(manifest)+".framing")
}

// framingName is the name of input i's framing record, relative to the
// directory of the manifest named manifest.
func framingName(manifest string, i int) string {
	return filepath.Join(filepath.Base(manifest)+".framing", fmt.Sprintf("%06d", i))
}

// framingRecorder writes one framing record; the first write error sticks.
type framingRecorder struct {
	w   io.Writer
	buf []byte
	err error
	// fw receives the framed record: the second framing, made during
	// the scan (framescan.Tap); nil: none is made.
	fw io.Writer
}

func (fr *framingRecorder) write() {
	if fr.err == nil {
		_, fr.err = fr.w.Write(fr.buf)
	}
}

func (fr *framingRecorder) header(info FileInfo) {
	hb, _ := json.Marshal(framingHeader{Format: framingVersion, Path: info.Path, Size: info.Size, MTime: info.ModTime})
	fr.buf = append(append(append(append(fr.buf[:0], framingFormat...), '\t'), hb...), '\n')
	fr.write()
}

// record notes a record the reader read, keyed as the second framing keys
// it.
func (fr *framingRecorder) record(rec *warcio.Record) {
	key := framescan.Key(rec.RecordID, rec.TargetURI, rec.Header("WARC-Date"))
	if rec.ARC != nil {
		key = framescan.Key("", rec.ARC.URL, rec.ARC.Date)
	}
	b := append(fr.buf[:0], "r\t"...)
	b = strconv.AppendInt(b, rec.Offset, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, rec.DataOffset, 10)
	b = append(b, '\t')
	b = appendEscaped(b, key)
	fr.buf = append(b, '\n')
	fr.write()
}

// span notes a stretch the reader reported unreadable (zero padding is
// not: the second framing finds no record there either way).
func (fr *framingRecorder) span(s warcio.Span) {
	if s.Padding {
		return
	}
	b := append(fr.buf[:0], 's')
	for _, v := range [...]int64{s.Offset, s.Length, s.DataOffset, s.DataLength} {
		b = strconv.AppendInt(append(b, '\t'), v, 10)
	}
	fr.buf = append(b, '\n')
	fr.write()
}

func (fr *framingRecorder) end(records, problems int) error {
	fr.buf = fmt.Appendf(fr.buf[:0], "#end\t%d\t%d\n", records, problems)
	fr.write()
	return fr.err
}

// framingReading is a framing record read back.
type framingReading struct {
	read              []framescan.Read
	unread            []framescan.Extent
	records, problems int
}

// readFraming reads the framing record of f (f.Framing) and checks that it
// describes f's input as the manifest does (path, size, modification time)
// and is complete.
func readFraming(f FileInfo) (framingReading, error) {
	var read []framescan.Read
	fr, err := eachFramingRead(f, func(r framescan.Read) { read = append(read, r) })
	fr.read = read
	return fr, err
}

// eachFramingRead reads the framing record of f as readFraming does,
// passing each record read to fn instead of holding it (fr.read stays
// empty).
func eachFramingRead(f FileInfo, fn func(framescan.Read)) (framingReading, error) {
	var fr framingReading
	reads := 0
	if f.Framing == "" {
		return fr, fmt.Errorf("the manifest names no framing record of the scan (written by an earlier version: write the manifest again)")
	}
	err := readRecordLines(f.Framing, "framing record", func(l *recordLine) error {
		fields := l.fields
		switch {
		case l.n == 1:
			var h framingHeader
			if len(fields) != 2 || string(fields[0]) != framingFormat || json.Unmarshal(fields[1], &h) != nil || h.Format != framingVersion {
				return l.bad("not a framing record of format %d", framingVersion)
			}
			if h.Path != f.Path || h.Size != f.Size || !h.MTime.Equal(f.ModTime) {
				return l.bad("describes %s (%d bytes, modified %s), not the manifest's %s (%d bytes, modified %s)",
					h.Path, h.Size, h.MTime, f.Path, f.Size, f.ModTime)
			}
		case string(fields[0]) == "r" && len(fields) == 4:
			fn(framescan.Read{Offset: l.num(1), DataOffset: l.num(2), Key: unescapeField(string(fields[3]))})
			reads++
		case string(fields[0]) == "s" && len(fields) == 5:
			fr.unread = append(fr.unread, framescan.Extent{Offset: l.num(1), Length: l.num(2), DataOffset: l.num(3), DataLength: l.num(4)})
		case string(fields[0]) == "#end" && len(fields) == 3:
			fr.records, fr.problems = int(l.num(1)), int(l.num(2))
			if l.err == nil && fr.records != reads {
				return l.bad("#end counts %d records, it lists %d", fr.records, reads)
			}
		default:
			return l.bad("unknown line")
		}
		return l.err
	})
	return fr, err
}

// The framed record of an input: the second framing (package framescan)
// made during the manifest scan from the gzip members the scan's reader
// inflated — each member proved by framescan against its own CRC-32 and
// length trailer, every other stretch framed by framescan's own member
// walk and inflater (framescan.Tap) — so that validation compares the
// two framings without inflating the input again. Written beside the
// framing record (its name and ".framed"), one file per input, the
// records as the framing decides them (memory holds only those it has
// not passed yet):
//
//	#wayside-dedup-framed	{"format":1,"path":...,"size":...,"mtime":...}
//	f	MEMBER	DATA-OFFSET	LENGTH	ARC	CONFIRMED	TYPE	ID	URI	DATE   (a record found)
//	g	OFFSET	LENGTH	REASON                                        (a gap)
//	#result	{"compressed":...,"members":...,"data_bytes":...,"proved":...,"walked":...}
//	#end	RECORDS	GAPS
//
// Text fields are escaped as manifest text fields are; flags are "1" or
// empty; proved and walked count the members framed from the scan's
// bytes and those the reader passed that framescan's walk framed instead.
// A file without its #end line is cut short; validation then frames the
// input on its own (framescan.File), as it does for a manifest written
// without framed records.
const (
	framedFormat  = "#wayside-dedup-framed"
	framedVersion = 1
)

// framedHeader identifies the input a framed record describes.
type framedHeader struct {
	Format int       `json:"format"`
	Path   string    `json:"path"`
	Size   int64     `json:"size"`
	MTime  time.Time `json:"mtime"`
}

// framedResult holds framescan.Result's counts, and the tap's.
type framedResult struct {
	Compressed bool  `json:"compressed"`
	Members    int   `json:"members"`
	DataBytes  int64 `json:"data_bytes"`
	Proved     int   `json:"proved"`
	Walked     int   `json:"walked"`
}

// framedName is the name of the framed record beside the framing record
// named framing.
func framedName(framing string) string { return framing + ".framed" }

// framedWriter writes a framed record; the first write error sticks.
// record is called from the framing's goroutine, the rest after it ends.
type framedWriter struct {
	bw      *bufio.Writer
	b       []byte
	records int
	err     error
}

func newFramedWriter(w io.Writer, info FileInfo) *framedWriter {
	fw := &framedWriter{bw: bufio.NewWriterSize(w, 64<<10)}
	hb, _ := json.Marshal(framedHeader{Format: framedVersion, Path: info.Path, Size: info.Size, MTime: info.ModTime})
	fw.write(append(append(append([]byte(framedFormat), '\t'), hb...), '\n'))
	return fw
}

func (fw *framedWriter) write(b []byte) {
	if fw.err == nil {
		_, fw.err = fw.bw.Write(b)
	}
}

// record writes a record the framing found.
func (fw *framedWriter) record(r framescan.Record) {
	flag := func(b []byte, v bool) []byte {
		if v {
			b = append(b, '1')
		}
		return append(b, '\t')
	}
	b := append(fw.b[:0], "f\t"...)
	for _, v := range [...]int64{r.Member, r.DataOffset, r.Length} {
		b = append(strconv.AppendInt(b, v, 10), '\t')
	}
	b = flag(flag(b, r.ARC), r.Confirmed)
	for i, s := range [...]string{r.Type, r.ID, r.URI, r.Date} {
		if i > 0 {
			b = append(b, '\t')
		}
		b = appendEscaped(b, s)
	}
	fw.b = append(b, '\n')
	fw.write(fw.b)
	fw.records++
}

// finish writes the gaps and counts of res (its records were written by
// record) and flushes.
func (fw *framedWriter) finish(res *framescan.Result, proved, walked int) error {
	if len(res.Records) > 0 {
		return fmt.Errorf("framed record: %d records not written", len(res.Records))
	}
	b := fw.b[:0]
	for _, g := range res.Gaps {
		b = append(b, "g\t"...)
		b = append(strconv.AppendInt(b, g.Offset, 10), '\t')
		b = append(strconv.AppendInt(b, g.Length, 10), '\t')
		b = append(appendEscaped(b, g.Reason), '\n')
	}
	rb, _ := json.Marshal(framedResult{Compressed: res.Compressed, Members: res.Members, DataBytes: res.DataBytes, Proved: proved, Walked: walked})
	b = append(append(append(b, "#result\t"...), rb...), '\n')
	b = fmt.Appendf(b, "#end\t%d\t%d\n", fw.records, len(res.Gaps))
	fw.write(b)
	if fw.err == nil {
		fw.err = fw.bw.Flush()
	}
	return fw.err
}

// readFramed reads the framed record of f (f.Framed) back, checking that
// it describes f's input as the manifest does and is complete.
func readFramed(f FileInfo) (*framescan.Result, error) {
	var recs []framescan.Record
	res, err := eachFramedRecord(f, func(r framescan.Record) { recs = append(recs, r) })
	if err != nil {
		return nil, err
	}
	res.Records = recs
	return res, nil
}

// eachFramedRecord reads the framed record of f as readFramed does,
// passing each record to fn instead of holding it (res.Records stays
// empty). fn may have been called when it fails.
func eachFramedRecord(f FileInfo, fn func(framescan.Record)) (*framescan.Result, error) {
	if f.Framed == "" {
		return nil, fmt.Errorf("the manifest names no framed record")
	}
	res := &framescan.Result{}
	result := false
	records := 0
	err := readRecordLines(f.Framed, "framed record", func(l *recordLine) error {
		fields := l.fields
		switch {
		case l.n == 1:
			var h framedHeader
			if len(fields) != 2 || string(fields[0]) != framedFormat || json.Unmarshal(fields[1], &h) != nil || h.Format != framedVersion {
				return l.bad("not a framed record of format %d", framedVersion)
			}
			if h.Path != f.Path || h.Size != f.Size || !h.MTime.Equal(f.ModTime) {
				return l.bad("describes %s (%d bytes, modified %s), not the manifest's %s (%d bytes, modified %s)",
					h.Path, h.Size, h.MTime, f.Path, f.Size, f.ModTime)
			}
		case string(fields[0]) == "#result" && len(fields) == 2:
			var r framedResult
			if json.Unmarshal(fields[1], &r) != nil {
				return l.bad("bad #result line")
			}
			res.Compressed, res.Members, res.DataBytes = r.Compressed, r.Members, r.DataBytes
			result = true
		case string(fields[0]) == "f" && len(fields) == 10:
			rec := framescan.Record{Member: l.num(1), DataOffset: l.num(2), Length: l.num(3), ARC: l.flag(4), Confirmed: l.flag(5),
				Type: unescapeField(string(fields[6])), ID: unescapeField(string(fields[7])), URI: unescapeField(string(fields[8])), Date: unescapeField(string(fields[9]))}
			if l.err == nil {
				fn(rec)
				records++
			}
		case string(fields[0]) == "g" && len(fields) == 4:
			res.Gaps = append(res.Gaps, framescan.Gap{Offset: l.num(1), Length: l.num(2), Reason: unescapeField(string(fields[3]))})
		case string(fields[0]) == "#end" && len(fields) == 3:
			n, gaps := l.num(1), l.num(2)
			switch {
			case l.err != nil:
			case !result:
				return l.bad("no #result line")
			case n != int64(records) || gaps != int64(len(res.Gaps)):
				return l.bad("#end counts %d records and %d gaps, it lists %d and %d", n, gaps, records, len(res.Gaps))
			}
		default:
			return l.bad("unknown line")
		}
		return l.err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// recordLine is one line of a framing or framed record as
// readRecordLines passes it: its number (from 1), its tab-separated
// fields, and the first error num or flag met.
type recordLine struct {
	what, path string
	n          int
	fields     [][]byte
	err        error
}

func (l *recordLine) bad(format string, a ...any) error {
	return fmt.Errorf("%s %s line %d: %s", l.what, l.path, l.n, fmt.Sprintf(format, a...))
}

// num is field i as a number (l.err is set if it is none).
func (l *recordLine) num(i int) int64 {
	v, err := strconv.ParseInt(string(l.fields[i]), 10, 64)
	if err != nil && l.err == nil {
		l.err = l.bad("field %d is no number", i+1)
	}
	return v
}

// flag is field i as a flag, "1" or empty (l.err is set if it is neither).
func (l *recordLine) flag(i int) bool {
	if len(l.fields[i]) > 0 && string(l.fields[i]) != "1" && l.err == nil {
		l.err = l.bad("field %d is no flag", i+1)
	}
	return len(l.fields[i]) > 0
}

// readRecordLines reads the framing or framed record at path (what names
// it in errors) line by line, passing each to fn, and refuses a record
// that is empty, has a last line without a newline or no "#end" line (cut
// short), or lines after "#end".
// splitTabs appends the tab-separated fields of b to fields (as
// bytes.Split(b, "\t") returns them, into a slice reused from line to
// line: fn does not keep them).
func splitTabs(fields [][]byte, b []byte) [][]byte {
	for {
		i := bytes.IndexByte(b, '\t')
		if i < 0 {
			return append(fields, b)
		}
		fields = append(fields, b[:i:i])
		b = b[i+1:]
	}
}

func readRecordLines(path, what string, fn func(*recordLine) error) error {
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer file.Close()
	br := bufio.NewReaderSize(file, 256<<10)
	l := &recordLine{what: what, path: path}
	ended := false
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			big := append([]byte(nil), b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				big = append(big, b...)
			}
			b = big
		}
		if len(b) == 0 && err == io.EOF {
			break
		}
		l.n++
		if err != nil {
			if err == io.EOF {
				return l.bad("last line has no newline: cut short")
			}
			return fmt.Errorf("%s %s: %w", what, path, err)
		}
		if ended {
			return l.bad("lines after #end")
		}
		l.fields = splitTabs(l.fields[:0], b[:len(b)-1])
		if err := fn(l); err != nil {
			return err
		}
		ended = string(l.fields[0]) == "#end"
	}
	if l.n == 0 {
		return l.bad("empty")
	}
	if !ended {
		return l.bad("no #end line: cut short")
	}
	return nil
}
