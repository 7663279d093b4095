package redis

import (
	"context"
	"fmt"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
)

// WithScriptClaims makes every Claim run the claim script, as before the
// HGET read path (BenchmarkClaims compares the two).
func WithScriptClaims() Option { return func(o *options) { o.scriptClaims = true } }

// CollidingMIMEs returns two MIME types with the same level-0 interned id.
func CollidingMIMEs() (string, string) {
	seen := map[uint64]string{}
	for i := 0; ; i++ {
		m := fmt.Sprintf("application/x-test-%d", i)
		id := nameID(record.KindMIME, m, 0)
		if other, ok := seen[id]; ok {
			return other, m
		}
		seen[id] = m
	}
}

// TakeNameIDs files other names under every id name s of kind MIME could
// have, as hash collisions at every level would (too rare to provoke).
func (ix *Index) TakeNameIDs(ctx context.Context, s string) error {
	for level := range idLevels {
		id := nameID(record.KindMIME, s, level)
		if err := ix.c.HSet(ctx, ix.l.nameKey(id), nameField(record.KindMIME, id), fmt.Sprint("other/", level)).Err(); err != nil {
			return err
		}
	}
	return nil
}

// MIMEIDForTest returns the interned id of MIME type s, or 0.
func (ix *Index) MIMEIDForTest(ctx context.Context, s string) (uint64, error) {
	return ix.intern(ctx, record.KindMIME, s)
}

// DigestKeyForTest returns the Redis key of the bucket k lives in.
func (ix *Index) DigestKeyForTest(k dedupindex.Key) string {
	s, err := ix.l.locate(k)
	if err != nil {
		panic(err)
	}
	return ix.l.digestKey(s.scope, s.bucket)
}
