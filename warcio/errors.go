package warcio

import (
	"errors"
	"fmt"
)

var (
	// ErrTruncated reports a partial record or gzip member at the end of the
	// input. The *Error carrying it has Offset = the start of the partial
	// record, which is also the end of the last complete record: truncating
	// the file there leaves only whole records.
	ErrTruncated = errors.New("truncated: partial record at end of input")
	// ErrCorrupt reports a record that cannot be read (bad header, bad gzip
	// data). The next call to Next resynchronises on the following record.
	ErrCorrupt = errors.New("corrupt record")
)

// Error locates a read error in a file.
type Error struct {
	File   string // file name as given to Open or NewReader
	Offset int64  // offset in the stored (compressed) file
	Err    error  // wraps ErrTruncated or ErrCorrupt, plus the cause
}

func (e *Error) Error() string {
	return fmt.Sprintf("warcio: %s offset %d: %v", e.File, e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
