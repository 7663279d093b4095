package redis

import (
	"fmt"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
)

// CollidingMIMEs returns two MIME types with the same interned id.
func CollidingMIMEs() (string, string) {
	seen := map[uint64]string{}
	for i := 0; ; i++ {
		m := fmt.Sprintf("application/x-test-%d", i)
		id := nameID(record.KindMIME, m)
		if other, ok := seen[id]; ok {
			return other, m
		}
		seen[id] = m
	}
}

// DigestKeyForTest returns the Redis key of the bucket k lives in.
func (ix *Index) DigestKeyForTest(k dedupindex.Key) string {
	s, err := ix.l.locate(k)
	if err != nil {
		panic(err)
	}
	return ix.l.digestKey(s.scope, s.bucket)
}
