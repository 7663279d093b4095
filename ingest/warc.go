package ingest

import (
	"errors"
	"io"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/warcio"
)

// recordIter yields the captures of a WARC file from a start offset, with
// offsets in file coordinates.
type recordIter struct {
	r         *warcio.Reader
	start     int64
	name, dir string
}

// newRecordIter reads r, the WARC file named name (its base name without
// ".open", or the location URL of a remote file) in dir ("" for a remote
// file), from start (r yields the file's bytes from there).
func newRecordIter(r io.Reader, dir, name string, start int64) *recordIter {
	return &recordIter{r: warcio.NewReader(r, name), start: start, name: name, dir: dir}
}

// ingested is one record read by the watcher.
type ingested struct {
	c wayside.Capture
	// indexed is set for records that get a CDXJ line (cdxj.HasLine).
	indexed bool
	// unaddressable is set for a record that would be indexed but shares
	// its gzip member with another (cdxj.Indexed, Length 0): no offset
	// and length locate it, so, as `wayside cdxj` does, it gets no CDXJ
	// line and no capture (it is reported instead).
	unaddressable bool
	// dataStart and dataEnd locate the record in the uncompressed data
	// read from the iterator's start; shared is set for a record in a gzip
	// member that holds others (or a file that is one gzip stream): such
	// a record is located by the member's start and its uncompressed
	// offset from there, not by a stored offset of its own.
	dataStart, dataEnd int64
	shared             bool
}

// Next returns the next record, io.EOF at the end of the complete records,
// or a *warcio.Error (offsets in file coordinates).
func (it *recordIter) Next() (ingested, error) {
	rec, err := it.r.Next()
	if err != nil {
		var we *warcio.Error
		if errors.As(err, &we) {
			cp := *we
			cp.Offset += it.start
			return ingested{}, &cp
		}
		return ingested{}, err
	}
	rec.Offset += it.start
	c := rec.Capture(it.name)
	c.Dir = it.dir
	return ingested{c: c, indexed: cdxj.HasLine(rec), unaddressable: rec.Length == 0 && cdxj.Indexed(rec, false), dataStart: rec.DataOffset, dataEnd: rec.DataOffset + rec.DataLength, shared: rec.Length == 0}, nil
}

// consumed is the file offset up to which the reader consumed the input
// (after io.EOF: its end).
func (it *recordIter) consumed() int64 { return it.start + it.r.Offset() }

func isTruncated(err error) bool { return errors.Is(err, warcio.ErrTruncated) }

// truncatedOffset is where the partial record starts (def when unknown).
func truncatedOffset(err error, def int64) int64 {
	var we *warcio.Error
	if errors.As(err, &we) {
		return we.Offset
	}
	return def
}
