package libdeflate

import "errors"

// Errors Gzip returns. They say why the fast path could not be used; a
// caller that falls back to a streaming inflater learns the precise
// problem (and its position) from that inflater.
var (
	// ErrBadData: the input is not one valid gzip member (bad header,
	// bad deflate data, CRC-32 or ISIZE mismatch, or the input ends
	// early).
	ErrBadData = errors.New("libdeflate: bad or incomplete gzip data")
	// ErrInsufficientSpace: the member inflates to more than the output
	// buffer holds.
	ErrInsufficientSpace = errors.New("libdeflate: output buffer too small")
	// ErrUnavailable: built without cgo.
	ErrUnavailable = errors.New("libdeflate: not built in (built without cgo)")
)

// Decompressor inflates gzip members; its zero value is not usable: call
// New.
type Decompressor struct {
	// state is libdeflate's decompressor followed by two size_t results
	// (the in and out counts), in Go memory without Go pointers.
	state []uint64
}
