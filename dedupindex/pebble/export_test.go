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

// WithDeleteBatchForTest sets how many originals one durable batch of
// Delete removes (crash tests kill a delete between small batches).
func WithDeleteBatchForTest(n int) Option { return func(o *options) { o.delBatch = n } }
