//go:build cgo

// One translation unit per vendored libdeflate source (see doc.go): the
// sources stay unmodified under upstream/.
#include "upstream/lib/utils.c"
