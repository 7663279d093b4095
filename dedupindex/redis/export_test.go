package redis

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
)

// WithClaimPath makes every Claim start with the claim script ("script",
// as before the read path), or with an HGET ("read"), instead of choosing
// by recent outcomes ("adaptive"); BenchmarkClaims compares them.
func WithClaimPath(path string) Option {
	return func(o *options) {
		o.claimPath = map[string]claimPath{"adaptive": pathAdaptive, "script": pathScript, "read": pathRead}[path]
	}
}

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

// InternedIDForTest returns the id name s of kind k has in the index (0:
// inline).
func (ix *Index) InternedIDForTest(ctx context.Context, k record.Kind, s string) (uint64, error) {
	return ix.intern(ctx, k, s)
}

// V2NameID is the interned id layout 2 gave a name: a 28-bit hash (14
// bits for MIME types).
func V2NameID(k record.Kind, s string) uint64 {
	bits := 28
	if k == record.KindMIME {
		bits = 14
	}
	h := sha256.Sum256(append([]byte{byte(k)}, s...))
	return binary.BigEndian.Uint64(h[:8])%(1<<bits-1) + 1
}

// V2Layout writes originals as layout 2 did (BenchmarkMemory measures it
// beside this layout): the same buckets, record's varint values with
// 28-bit name ids, 16-byte by-URL entries, and names under those ids.
type V2Layout struct{ l *layout }

// NewV2Layout lays out an index of capacity originals under prefix, with
// the bucket sizes New would choose for hash-max-listpack-entries 256.
func NewV2Layout(prefix string, capacity int64) V2Layout {
	return V2Layout{newLayout(prefix, bitsFor(capacity, 128), true)}
}

// Write queues on p the writes layout 2 made for o under digest key k,
// and returns the value it stored.
func (v V2Layout) Write(ctx context.Context, p goredis.Pipeliner, k dedupindex.Key, o dedupindex.Original) ([]byte, error) {
	s, err := v.l.locate(k)
	if err != nil {
		return nil, err
	}
	r, err := record.FromOriginal(o, func(kind record.Kind, name string) (uint64, error) {
		id := V2NameID(kind, name)
		p.HSet(ctx, v.l.nameKey(id), nameField(kind, id), name)
		return id, nil
	})
	if err != nil {
		return nil, err
	}
	val := record.Append(nil, r)
	p.HSet(ctx, v.l.digestKey(s.scope, s.bucket), s.field, val)
	h := hash8(dedupindex.URLKey(o.TargetURI))
	p.HSet(ctx, v.l.urlKey(s.scope, v.l.bucketOf(h[:])), string(h[v.l.drop:])+string(s.sum[:8]), "")
	return val, nil
}

// FieldLen is the length of the bucket field of k in this layout.
func (v V2Layout) FieldLen(k dedupindex.Key) int {
	s, err := v.l.locate(k)
	if err != nil {
		panic(err)
	}
	return len(s.field)
}

// URLEntryLens returns the by-URL field lengths of layout 2 and this one.
func (v V2Layout) URLEntryLens() (v2, v3 int) {
	return hashLen - v.l.drop + 8, urlHashLen - v.l.drop + refLen
}
