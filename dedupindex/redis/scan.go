package redis

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
	"github.com/wayside-archive/wayside/digest"
)

// globEscape escapes glob metacharacters for SCAN MATCH.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}

// scanAll calls fn with each page of keys matching the pattern on every
// master, with a client for that master; calls are serialised.
func (ix *Index) scanAll(ctx context.Context, match string, fn func(n *goredis.Client, keys []string) error) error {
	var mu sync.Mutex
	scan := func(ctx context.Context, n *goredis.Client) error {
		var cursor uint64
		for {
			keys, next, err := n.Scan(ctx, cursor, match, 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				mu.Lock()
				err = fn(n, keys)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	switch c := ix.c.(type) {
	case *goredis.ClusterClient:
		return c.ForEachMaster(ctx, scan)
	case *goredis.Client:
		return scan(ctx, c)
	}
	return fmt.Errorf("dedupindex/redis: cannot scan with a %T", ix.c)
}

func (ix *Index) pattern(kind byte) string { return globEscape(ix.l.prefix) + string(kind) + "{*" }

// Stats counts originals per scope (the fields of every bucket) and
// pending claims by scanning the store: for inspection.
func (ix *Index) Stats(ctx context.Context) (dedupindex.Stats, error) {
	if err := ix.check(ctx); err != nil {
		return dedupindex.Stats{}, err
	}
	st := dedupindex.Stats{Scopes: map[string]int64{}}
	err := ix.scanAll(ctx, ix.pattern('d'), func(n *goredis.Client, keys []string) error {
		cmds, err := n.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, k := range keys {
				p.HLen(ctx, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, k := range keys {
			_, scope, err := ix.l.parseBucketKey(k, 'd')
			if err != nil {
				continue // reported by Check
			}
			c := cmds[i].(*goredis.IntCmd).Val()
			st.Scopes[scope] += c
			st.Originals += c
		}
		return nil
	})
	if err == nil {
		err = ix.scanAll(ctx, ix.pattern('c'), func(_ *goredis.Client, keys []string) error {
			st.Pending += int64(len(keys))
			return nil
		})
	}
	if err != nil {
		return dedupindex.Stats{}, fmt.Errorf("dedupindex/redis: stats: %w", ix.failed(err))
	}
	return st, nil
}

// maxCheckErrors bounds the violations Check lists.
const maxCheckErrors = 20

// Check verifies the index's invariants: every bucket field is a digest
// of its bucket whose value decodes (through the name table, or its
// overflow key) and, for a same-URL key, has the URL it is filed under;
// every original has its by-URL entry (or has it queued for Repair) and
// every by-URL entry an original of that URL; every overflow key is announced by its field; every pending
// claim has a lease; every interned name sits under its own id.
func (ix *Index) Check(ctx context.Context) error {
	if err := ix.check(ctx); err != nil {
		return err
	}
	var errs []error
	bad := func(format string, a ...any) {
		if len(errs) < maxCheckErrors {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	checks := []struct {
		kind byte
		fn   func(ctx context.Context, n *goredis.Client, key string, bad func(string, ...any)) error
	}{{'d', ix.checkBucket}, {'b', ix.checkURLBucket}, {'x', ix.checkOverflow}, {'c', checkClaim}, {'n', ix.checkNames}}
	var err error
	for _, c := range checks {
		if c.kind == 'b' && !ix.l.byURL {
			continue
		}
		err = ix.scanAll(ctx, ix.pattern(c.kind), func(n *goredis.Client, keys []string) error {
			for _, key := range keys {
				if err := c.fn(ctx, n, key, bad); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("dedupindex/redis: check: %w", ix.failed(err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("dedupindex/redis: check: %w", errors.Join(errs...))
	}
	return nil
}

// checkOverflow checks that the field of an overflow key announces it.
func (ix *Index) checkOverflow(ctx context.Context, n *goredis.Client, key string, bad func(string, ...any)) error {
	tag, rest, _ := ix.l.splitKey(key, 'x')
	fieldHex, scope, ok := strings.Cut(rest, "/")
	field, err := hex.DecodeString(fieldHex)
	if !ok || err != nil {
		bad("%s: not an overflow key of this layout", key)
		return nil
	}
	v, err := n.HGet(ctx, ix.l.prefix+"d{"+tag+"}"+scope, string(field)).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return err
	}
	if v != overflow {
		bad("%s: overflow value not announced by its field", key)
	}
	return nil
}

// checkClaim checks that a pending claim has a lease.
func checkClaim(ctx context.Context, n *goredis.Client, key string, bad func(string, ...any)) error {
	ttl, err := n.PTTL(ctx, key).Result()
	if err != nil {
		return err
	}
	if ttl < 0 && ttl != -2 { // -2: expired meanwhile
		bad("%s: pending claim without a lease", key)
	}
	return nil
}

// checkNames checks that every name of a shard sits under its own id.
func (ix *Index) checkNames(ctx context.Context, n *goredis.Client, key string, bad func(string, ...any)) error {
	h, err := n.HGetAll(ctx, key).Result()
	if err != nil {
		return err
	}
	for f, name := range h {
		var id uint64
		w := 0
		if len(f) >= 2 {
			id, w = binary.Uvarint([]byte(f[1:]))
		}
		level := idLevel(id)
		if w <= 0 || w != len(f)-1 || level < 0 || nameID(record.Kind(f[0]), name, level) != id || ix.l.nameKey(id) != key {
			bad("%s: name %q is not filed under its id (field %x)", key, name, f)
		}
	}
	return nil
}

func (ix *Index) checkBucket(ctx context.Context, n *goredis.Client, key string, bad func(string, ...any)) error {
	bucket, scope, err := ix.l.parseBucketKey(key, 'd')
	if err != nil {
		bad("%v", err)
		return nil
	}
	h, err := n.HGetAll(ctx, key).Result()
	if err != nil {
		return err
	}
	todo, err := n.HGetAll(ctx, ix.l.todoKey(scope, bucket)).Result()
	if err != nil {
		return err
	}
	for field := range todo {
		if _, ok := h[field]; !ok {
			bad("%s: queued by-url entry %x has no original", key, field)
		}
	}
	for field, v := range h {
		sum, alg, sameURL, err := ix.l.parseField(bucket, field)
		if err != nil {
			bad("%s: %v", key, err)
			continue
		}
		s := slot{scope: scope, digest: digest.Digest{Alg: alg, Sum: sum}.String(), sum: sum, bucket: bucket, field: field}
		if v == overflow {
			v, err = n.Get(ctx, ix.l.overflowKey(scope, bucket, field)).Result()
			if errors.Is(err, goredis.Nil) {
				bad("%s: %s: overflow key missing", key, s.digest)
				continue
			}
			if err != nil {
				return err
			}
		}
		o, err := ix.decode(ctx, s, v)
		if errors.Is(err, errUnusable) {
			bad("%s: %v", key, err)
			continue
		}
		if err != nil {
			return err
		}
		surtKey := dedupindex.URLKey(o.TargetURI)
		if uh := hash8(surtKey); sameURL && field[len(field)-hashLen:] != string(uh[:]) {
			bad("%s: %s: filed under another URL than its target %s", key, s.digest, o.TargetURI)
		}
		if ix.l.byURL {
			ukey, ufield := ix.l.urlEntry(scope, surtKey, sum)
			ok, err := ix.c.HExists(ctx, ukey, ufield).Result()
			if err != nil {
				return err
			}
			if _, queued := todo[field]; !ok && !queued {
				bad("%s: %s: no by-url entry for %s", key, s.digest, o.TargetURI)
			}
		}
	}
	return nil
}

func (ix *Index) checkURLBucket(ctx context.Context, n *goredis.Client, key string, bad func(string, ...any)) error {
	_, scope, err := ix.l.parseBucketKey(key, 'b')
	if err != nil {
		bad("%v", err)
		return nil
	}
	fields, err := n.HKeys(ctx, key).Result()
	if err != nil {
		return err
	}
	for _, f := range fields {
		hashRest := urlHashLen - ix.l.drop
		if len(f) != hashRest+refLen {
			bad("%s: entry %x has %d bytes, want %d", key, f, len(f), hashRest+refLen)
			continue
		}
		found, err := ix.originalsByRef(ctx, scope, []byte(f[hashRest:]))
		if err != nil {
			return err
		}
		ok := false
		for _, o := range found {
			k, field := ix.l.urlEntry(scope, dedupindex.URLKey(o.TargetURI), []byte(f[hashRest:]))
			ok = ok || k == key && field == f
		}
		if !ok {
			bad("%s: entry %x has no original", key, f)
		}
	}
	return nil
}
