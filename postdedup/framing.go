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
	// tap makes the second framing during the scan; framed is its result
	// (proved and walked: its members taken from the reader, and framed
	// by framescan's own walk).
	tap            *framescan.Tap
	framed         *framescan.Result
	proved, walked int
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
	var fr framingReading
	if f.Framing == "" {
		return fr, fmt.Errorf("the manifest names no framing record of the scan (written by an earlier version: write the manifest again)")
	}
	file, err := os.Open(f.Framing)
	if err != nil {
		return fr, fmt.Errorf("framing record of the scan: %w", err)
	}
	defer file.Close()
	br := bufio.NewReaderSize(file, 256<<10)
	line := 0
	bad := func(format string, a ...any) error {
		return fmt.Errorf("framing record %s line %d: %s", f.Framing, line, fmt.Sprintf(format, a...))
	}
	ended := false
	for {
		l, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			big := append([]byte(nil), l...)
			for err == bufio.ErrBufferFull {
				l, err = br.ReadSlice('\n')
				big = append(big, l...)
			}
			l = big
		}
		if len(l) == 0 && err == io.EOF {
			break
		}
		line++
		if err != nil {
			if err == io.EOF {
				return fr, bad("last line has no newline: cut short")
			}
			return fr, fmt.Errorf("framing record %s: %w", f.Framing, err)
		}
		if ended {
			return fr, bad("lines after #end")
		}
		fields := bytes.Split(l[:len(l)-1], []byte{'\t'})
		n := func(i int) int64 {
			v, perr := strconv.ParseInt(string(fields[i]), 10, 64)
			if perr != nil && err == nil {
				err = bad("field %d is no number", i+1)
			}
			return v
		}
		switch {
		case line == 1:
			var h framingHeader
			if len(fields) != 2 || string(fields[0]) != framingFormat || json.Unmarshal(fields[1], &h) != nil || h.Format != framingVersion {
				return fr, bad("not a framing record of format %d", framingVersion)
			}
			if h.Path != f.Path || h.Size != f.Size || !h.MTime.Equal(f.ModTime) {
				return fr, bad("describes %s (%d bytes, modified %s), not the manifest's %s (%d bytes, modified %s)",
					h.Path, h.Size, h.MTime, f.Path, f.Size, f.ModTime)
			}
		case string(fields[0]) == "r" && len(fields) == 4:
			fr.read = append(fr.read, framescan.Read{Offset: n(1), DataOffset: n(2), Key: unescapeField(string(fields[3]))})
		case string(fields[0]) == "s" && len(fields) == 5:
			fr.unread = append(fr.unread, framescan.Extent{Offset: n(1), Length: n(2), DataOffset: n(3), DataLength: n(4)})
		case string(fields[0]) == "#end" && len(fields) == 3:
			fr.records, fr.problems = int(n(1)), int(n(2))
			ended = true
		default:
			return fr, bad("unknown line")
		}
		if err != nil {
			return fr, err
		}
	}
	if line == 0 {
		return fr, bad("empty")
	}
	if !ended {
		return fr, bad("no #end line: cut short")
	}
	if fr.records != len(fr.read) {
		return fr, bad("#end counts %d records, it lists %d", fr.records, len(fr.read))
	}
	return fr, nil
}

// The framed record of an input: the second framing (package framescan)
// made during the manifest scan from the gzip members the scan's reader
// inflated — each member proved by framescan against its own CRC-32 and
// length trailer, every other stretch framed by framescan's own member
// walk and inflater (framescan.Tap) — so that validation compares the
// two framings without inflating the input again. Written beside the
// framing record (its name and ".framed"), one file per input:
//
//	#wayside-dedup-framed	{"format":1,"path":...,"size":...,"mtime":...,"compressed":...,"members":...,"data_bytes":...}
//	f	MEMBER	DATA-OFFSET	LENGTH	ARC	CONFIRMED	TYPE	ID	URI	DATE   (a record found)
//	g	OFFSET	LENGTH	REASON                                        (a gap)
//	#end	RECORDS	GAPS
//
// Text fields are escaped as manifest text fields are; flags are "1" or
// empty. A file without its #end line is cut short; validation then
// frames the input on its own (framescan.File), as it does for a
// manifest written without framed records.
const (
	framedFormat  = "#wayside-dedup-framed"
	framedVersion = 1
)

// framedHeader identifies the input a framed record describes and holds
// framescan.Result's counts.
type framedHeader struct {
	Format     int       `json:"format"`
	Path       string    `json:"path"`
	Size       int64     `json:"size"`
	MTime      time.Time `json:"mtime"`
	Compressed bool      `json:"compressed"`
	Members    int       `json:"members"`
	DataBytes  int64     `json:"data_bytes"`
	// Proved and Walked count the members framed from the scan's bytes
	// and those framescan inflated on its own (for the record).
	Proved int `json:"proved"`
	Walked int `json:"walked"`
}

// framedName is the name of the framed record beside the framing record
// named framing.
func framedName(framing string) string { return framing + ".framed" }

// writeFramed writes res, the second framing of the input info describes,
// to w.
func writeFramed(w io.Writer, info FileInfo, res *framescan.Result, proved, walked int) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	hb, _ := json.Marshal(framedHeader{Format: framedVersion, Path: info.Path, Size: info.Size, MTime: info.ModTime,
		Compressed: res.Compressed, Members: res.Members, DataBytes: res.DataBytes, Proved: proved, Walked: walked})
	b := append(append(append([]byte(framedFormat), '\t'), hb...), '\n')
	flag := func(b []byte, v bool) []byte {
		if v {
			b = append(b, '1')
		}
		return append(b, '\t')
	}
	for _, r := range res.Records {
		b = append(b, "f\t"...)
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
		b = append(b, '\n')
		if len(b) > 64<<10 {
			bw.Write(b)
			b = b[:0]
		}
	}
	for _, g := range res.Gaps {
		b = append(b, "g\t"...)
		b = append(strconv.AppendInt(b, g.Offset, 10), '\t')
		b = append(strconv.AppendInt(b, g.Length, 10), '\t')
		b = append(appendEscaped(b, g.Reason), '\n')
	}
	b = fmt.Appendf(b, "#end\t%d\t%d\n", len(res.Records), len(res.Gaps))
	bw.Write(b)
	return bw.Flush()
}

// readFramed reads the framed record of f (f.Framed) back, checking that
// it describes f's input as the manifest does and is complete.
func readFramed(f FileInfo) (*framescan.Result, error) {
	if f.Framed == "" {
		return nil, fmt.Errorf("the manifest names no framed record")
	}
	file, err := os.Open(f.Framed)
	if err != nil {
		return nil, fmt.Errorf("framed record: %w", err)
	}
	defer file.Close()
	br := bufio.NewReaderSize(file, 256<<10)
	line := 0
	bad := func(format string, a ...any) error {
		return fmt.Errorf("framed record %s line %d: %s", f.Framed, line, fmt.Sprintf(format, a...))
	}
	res := &framescan.Result{}
	ended := false
	var records, gaps int64
	for {
		l, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			big := append([]byte(nil), l...)
			for err == bufio.ErrBufferFull {
				l, err = br.ReadSlice('\n')
				big = append(big, l...)
			}
			l = big
		}
		if len(l) == 0 && err == io.EOF {
			break
		}
		line++
		if err != nil {
			if err == io.EOF {
				return nil, bad("last line has no newline: cut short")
			}
			return nil, fmt.Errorf("framed record %s: %w", f.Framed, err)
		}
		if ended {
			return nil, bad("lines after #end")
		}
		fields := bytes.Split(l[:len(l)-1], []byte{'\t'})
		var perr error
		n := func(i int) int64 {
			v, e := strconv.ParseInt(string(fields[i]), 10, 64)
			if e != nil && perr == nil {
				perr = bad("field %d is no number", i+1)
			}
			return v
		}
		flag := func(i int) bool {
			if len(fields[i]) > 0 && string(fields[i]) != "1" {
				perr = bad("field %d is no flag", i+1)
			}
			return len(fields[i]) > 0
		}
		switch {
		case line == 1:
			var h framedHeader
			if len(fields) != 2 || string(fields[0]) != framedFormat || json.Unmarshal(fields[1], &h) != nil || h.Format != framedVersion {
				return nil, bad("not a framed record of format %d", framedVersion)
			}
			if h.Path != f.Path || h.Size != f.Size || !h.MTime.Equal(f.ModTime) {
				return nil, bad("describes %s (%d bytes, modified %s), not the manifest's %s (%d bytes, modified %s)",
					h.Path, h.Size, h.MTime, f.Path, f.Size, f.ModTime)
			}
			res.Compressed, res.Members, res.DataBytes = h.Compressed, h.Members, h.DataBytes
		case string(fields[0]) == "f" && len(fields) == 10:
			res.Records = append(res.Records, framescan.Record{Member: n(1), DataOffset: n(2), Length: n(3), ARC: flag(4), Confirmed: flag(5),
				Type: unescapeField(string(fields[6])), ID: unescapeField(string(fields[7])), URI: unescapeField(string(fields[8])), Date: unescapeField(string(fields[9]))})
		case string(fields[0]) == "g" && len(fields) == 4:
			res.Gaps = append(res.Gaps, framescan.Gap{Offset: n(1), Length: n(2), Reason: unescapeField(string(fields[3]))})
		case string(fields[0]) == "#end" && len(fields) == 3:
			records, gaps = n(1), n(2)
			ended = true
		default:
			return nil, bad("unknown line")
		}
		if perr != nil {
			return nil, perr
		}
	}
	if line == 0 {
		return nil, bad("empty")
	}
	if !ended {
		return nil, bad("no #end line: cut short")
	}
	if records != int64(len(res.Records)) || gaps != int64(len(res.Gaps)) {
		return nil, bad("#end counts %d records and %d gaps, it lists %d and %d", records, gaps, len(res.Records), len(res.Gaps))
	}
	return res, nil
}
