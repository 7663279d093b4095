package warcfile

import (
	"bytes"
	"io"

	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/internal/iox"
	"github.com/wayside-archive/wayside/warcio"
)

// WriteFile writes the WARC file at path whole, for producers that make a
// file in one go (ARC conversion, characterization metadata) rather than
// append as captures come (Writer): fill appends the records through a
// FileWriter, one gzip member each (warcio.MemberWriter at level), and the
// file appears under path only once complete and durable (a temporary
// file beside it, fsync, rename, directory fsync: fsutil.WriteFileAtomic),
// so a crash leaves no partial file under path. An error of fill is
// returned as it is, and leaves no file.
func WriteFile(path string, level int, fill func(fw *FileWriter) error) error {
	mw, err := warcio.NewMemberWriter(level)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		return fill(&FileWriter{out: &iox.CountWriter{W: w}, mw: mw})
	})
}

// NewFileWriter returns a FileWriter appending to w (a file the caller
// makes durable itself, or a buffer: a generated fixture).
func NewFileWriter(w io.Writer, level int) (*FileWriter, error) {
	mw, err := warcio.NewMemberWriter(level)
	if err != nil {
		return nil, err
	}
	return &FileWriter{out: &iox.CountWriter{W: w}, mw: mw}, nil
}

// FileWriter appends records to a file WriteFile is writing.
type FileWriter struct {
	out *iox.CountWriter
	mw  *warcio.MemberWriter
	buf bytes.Buffer
}

// WriteRecord writes the record h (ContentLength and BlockDigest set by
// the caller) with the bytes of block as one gzip member and returns its
// stored length.
func (fw *FileWriter) WriteRecord(h *warcio.RecordHead, block io.Reader) (int64, error) {
	return fw.mw.WriteRecord(fw.out, h, block)
}

// WriteDraft writes d, serialised for version in the file warcinfoID
// starts (warcio.Draft.MarshalInFile), as one gzip member and returns its
// stored length.
func (fw *FileWriter) WriteDraft(d *warcio.Draft, version, warcinfoID string) (int64, error) {
	fw.buf.Reset()
	d.MarshalInFile(&fw.buf, version, warcinfoID)
	return fw.mw.WriteMember(fw.out, fw.buf.Bytes())
}

// Size returns the bytes written so far: the offset of the next record.
func (fw *FileWriter) Size() int64 { return fw.out.N }
