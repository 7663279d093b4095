package testenv

import (
	"runtime"
	"runtime/metrics"
)

// LiveHeap returns the bytes of heap objects live after a full
// collection: what memory-bound tests compare before and during the code
// whose buffers they bound.
func LiveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
