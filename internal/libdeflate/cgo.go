//go:build cgo

package libdeflate

/*
#cgo CFLAGS: -O2
#include <stddef.h>
#include "upstream/libdeflate.h"

size_t wayside_ld_size(void);
int wayside_ld_bmi2(void);

// wayside_ld_gzip inflates the gzip member at the start of in into out,
// with the decompressor whose memory (Go-owned) is state; res receives the
// stored length of the member and the bytes it inflated to.
static int wayside_ld_gzip(void *state, size_t *res, const void *in, size_t in_n,
			   void *out, size_t out_n)
{
	return libdeflate_gzip_decompress_ex((struct libdeflate_decompressor *)state,
					     in, in_n, out, out_n, &res[0], &res[1]);
}
*/
import "C"

import (
	"unsafe"
)

// Available reports whether libdeflate is built in (cgo is enabled).
func Available() bool { return true }

// Impl names the decompressor variant in use: "bmi2" (x86 CPUs with BMI2)
// or "generic".
func Impl() string {
	if C.wayside_ld_bmi2() != 0 {
		return "bmi2"
	}
	return "generic"
}

// stateWords is the decompressor state in 8-byte words, plus the two
// results.
var stateWords = (int(C.wayside_ld_size())+7)/8 + 2

// New returns a Decompressor.
func New() *Decompressor {
	return &Decompressor{state: make([]uint64, stateWords)}
}

// Gzip inflates the gzip member at the start of in into out. It returns
// the member's stored length (header, deflate data and trailer: the bytes
// of in it used) and the length of what it inflated to, out[:outLen]. The
// member's CRC-32 and ISIZE are checked; bytes of in after the member are
// not read. A member that needs more than len(out) bytes returns
// ErrInsufficientSpace; out's contents are then undefined.
func (d *Decompressor) Gzip(in, out []byte) (inLen, outLen int, err error) {
	if len(in) == 0 {
		return 0, 0, ErrBadData
	}
	var outp unsafe.Pointer
	if len(out) > 0 {
		outp = unsafe.Pointer(unsafe.SliceData(out))
	}
	res := (*[2]C.size_t)(unsafe.Pointer(&d.state[len(d.state)-2]))
	rc := C.wayside_ld_gzip(unsafe.Pointer(unsafe.SliceData(d.state)), &res[0],
		unsafe.Pointer(unsafe.SliceData(in)), C.size_t(len(in)),
		outp, C.size_t(len(out)))
	switch rc {
	case C.LIBDEFLATE_SUCCESS:
		return int(res[0]), int(res[1]), nil
	case C.LIBDEFLATE_INSUFFICIENT_SPACE:
		return 0, 0, ErrInsufficientSpace
	default: // BAD_DATA; SHORT_OUTPUT cannot happen with an out count
		return 0, 0, ErrBadData
	}
}
