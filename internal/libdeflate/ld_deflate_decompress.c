//go:build cgo

// One translation unit per vendored libdeflate source (see doc.go): the
// sources stay unmodified under upstream/.
#include "upstream/lib/deflate_decompress.c"

/* The decompressor's size, so that Go allocates (and owns) its memory. */
size_t wayside_ld_size(void) { return sizeof(struct libdeflate_decompressor); }

/*
 * wayside_ld_bmi2 reports whether decompression runs the BMI2 variant
 * (chosen at run time by the CPU-feature dispatch above, or at compile time
 * when the target has BMI2 natively).
 */
int wayside_ld_bmi2(void)
{
#ifdef deflate_decompress_bmi2
#  ifdef arch_select_decompress_func
	return arch_select_decompress_func() == deflate_decompress_bmi2;
#  else
	return DEFAULT_IMPL == deflate_decompress_bmi2;
#  endif
#else
	return 0;
#endif
}
