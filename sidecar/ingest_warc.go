package sidecar

import (
	"errors"
	"fmt"
	"io"
	"os"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/warcio"
)

// recordIter yields the captures of a WARC file from a start offset, with
// offsets in file coordinates.
type recordIter struct {
	r     *warcio.Reader
	start int64
}

func newRecordIter(f *os.File, name string, start int64) (*recordIter, error) {
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("sidecar: ingest: seek %s to %d: %w", name, start, err)
	}
	return &recordIter{r: warcio.NewReader(f, name), start: start}, nil
}

// ingested is one record read by the watcher.
type ingested struct {
	c wayside.Capture
	// partial is set for a response or resource record carrying
	// WARC-Truncated: its payload is incomplete, so it is indexed in CDXJ
	// but never made a dedup original.
	partial bool
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
	c := rec.Capture("")
	c.Offset += it.start
	return ingested{c: c, partial: c.Truncated != "" || c.DigestMismatch}, nil
}

func isTruncated(err error) bool { return errors.Is(err, warcio.ErrTruncated) }

// truncatedOffset is where the partial record starts (def when unknown).
func truncatedOffset(err error, def int64) int64 {
	var we *warcio.Error
	if errors.As(err, &we) {
		return we.Offset
	}
	return def
}

// cdxjLine formats a capture's CDXJ line (pywb form, with newline).
func cdxjLine(c wayside.Capture) ([]byte, error) {
	if c.URI == "" || c.Date.IsZero() {
		return nil, fmt.Errorf("record %s has no target URI or date", c.RecordID)
	}
	l := cdxj.FromCapture(c)
	return l.Format(nil), nil
}
