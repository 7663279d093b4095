package pebble

import (
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// WithCompressionForBench selects the table compression (benchmarks only).
func WithCompressionForBench(zstd bool) Option {
	return func(o *options) {
		o.compression = pebble.SnappyCompression
		if zstd {
			o.compression = pebble.ZstdCompression
		}
	}
}

// WithFSForTest stores the index in fs (tests inject power loss with
// vfs.NewStrictMem).
func WithFSForTest(fs vfs.FS) Option { return func(o *options) { o.fs = fs } }
