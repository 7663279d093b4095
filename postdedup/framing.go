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
