//go:build !cgo

package libdeflate

// Available reports whether libdeflate is built in (cgo is enabled).
func Available() bool { return false }

// Impl names the decompressor variant in use: "none" without cgo.
func Impl() string { return "none" }

// New returns a Decompressor; without cgo its Gzip always fails.
func New() *Decompressor { return &Decompressor{} }

// Gzip returns ErrUnavailable: libdeflate is not built in.
func (d *Decompressor) Gzip(in, out []byte) (inLen, outLen int, err error) {
	return 0, 0, ErrUnavailable
}
