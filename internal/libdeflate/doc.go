// Package libdeflate inflates whole gzip members in one call with
// libdeflate (https://github.com/ebiggers/libdeflate, MIT licence), which
// decompresses two to three times faster than a streaming inflater. It
// backs the fast path of warcio's reader over inputs held in memory;
// everything else (streamed inputs, framescan's independent proofs) keeps
// the pure-Go inflater of github.com/klauspost/compress.
//
// Vendored: libdeflate v1.25, tag commit
// c8c56a20f8f621e6a966b716b31f1dedab6a41e3, unmodified, under upstream/
// (COPYING is its licence). Only what inflating gzip needs is taken:
// libdeflate.h, common_defs.h, lib/deflate_decompress.c,
// lib/gzip_decompress.c, lib/utils.c, lib/crc32.c, lib/x86/cpu_features.c,
// lib/arm/cpu_features.c and the headers they include (lib/lib_common.h,
// lib/deflate_constants.h, lib/gzip_constants.h, lib/decompress_template.h,
// lib/crc32_multipliers.h, lib/crc32_tables.h, lib/cpu_features_common.h,
// lib/x86/{cpu_features.h,decompress_impl.h,crc32_impl.h,
// crc32_pclmul_template.h}, lib/arm/{cpu_features.h,crc32_impl.h,
// crc32_pmull_helpers.h,crc32_pmull_wide.h}). Each .c file is compiled as
// its own translation unit through a one-line ld_*.c file in this
// directory (cgo compiles only the package directory's C files). Why
// vendored: the Go bindings (github.com/4kills/go-libdeflate) are not
// served by the module proxy this project builds from, and the part needed
// is small; a newer release is taken by replacing upstream/ with the same
// files of a new tag and updating this comment.
//
// The x86 build dispatches at run time to the BMI2 variant of the
// decompressor when the CPU has BMI2 (see Impl), as libdeflate's own build
// does. Without cgo (CGO_ENABLED=0) the package builds but Available
// reports false and Decompressor.Gzip returns ErrUnavailable: callers keep
// their pure-Go path.
//
// Ownership: a Decompressor's state (libdeflate's struct
// libdeflate_decompressor, about 11 KB) is allocated by Go and handed to C
// only for the duration of each call; no C memory is allocated, so there
// is nothing to free and no Close or finalizer. A Decompressor is not safe
// for concurrent use.
package libdeflate
