package pebble

import (
	"time"

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

// WaitCompactionsForBench waits until no flush or compaction runs or is
// owed (benchmarks measure a settled index, as a daemon is after seeding).
func (ix *Index) WaitCompactionsForBench() {
	for m := ix.db.Metrics(); m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0 || m.Compact.EstimatedDebt > 0; m = ix.db.Metrics() {
		time.Sleep(50 * time.Millisecond)
	}
}

// WithIdleFlushForTest sets how long the index waits without writes
// before it flushes its memtable.
func WithIdleFlushForTest(d time.Duration) Option { return func(o *options) { o.idleFlush = d } }
