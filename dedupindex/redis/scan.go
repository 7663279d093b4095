package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
)

// globEscape escapes glob metacharacters for SCAN MATCH.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}

// scanAll calls fn for every key matching the pattern on every master,
// one key at a time.
func (ix *Index) scanAll(ctx context.Context, match string, fn func(key string) error) error {
	var mu sync.Mutex
	scan := func(ctx context.Context, c *goredis.Client) error {
		it := c.Scan(ctx, 0, match, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			err := fn(it.Val())
			mu.Unlock()
			if err != nil {
				return err
			}
		}
		return it.Err()
	}
	switch c := ix.c.(type) {
	case *goredis.ClusterClient:
		return c.ForEachMaster(ctx, scan)
	case *goredis.Client:
		return scan(ctx, c)
	}
	return fmt.Errorf("dedupindex/redis: cannot scan with a %T", ix.c)
}

// tagOf returns the hash tag of a key "PREFIXx{tag}".
func tagOf(key string) string {
	i, j := strings.IndexByte(key, '{'), strings.LastIndexByte(key, '}')
	if i < 0 || j < i {
		return ""
	}
	return key[i+1 : j]
}

// Stats counts originals per scope and pending claims by scanning the
// store (slow on large stores: for inspection).
func (ix *Index) Stats(ctx context.Context) (dedupindex.Stats, error) {
	if err := ix.check(ctx); err != nil {
		return dedupindex.Stats{}, err
	}
	st := dedupindex.Stats{Scopes: map[string]int64{}}
	err := ix.scanAll(ctx, globEscape(ix.prefix)+"o{*", func(key string) error {
		s, err := ix.c.HGet(ctx, key, "s").Result()
		if err != nil {
			return err
		}
		st.Scopes[s]++
		st.Originals++
		return nil
	})
	if err == nil {
		err = ix.scanAll(ctx, globEscape(ix.prefix)+"p{*", func(string) error { st.Pending++; return nil })
	}
	if err != nil {
		return dedupindex.Stats{}, fmt.Errorf("dedupindex/redis: stats: %w", err)
	}
	return st, nil
}

// Check verifies that every original decodes, sits under the key its
// fields name and has its by-URL entry, that every by-URL entry refers to a
// stored original of that URL, and that every pending claim has a lease.
func (ix *Index) Check(ctx context.Context) error {
	if err := ix.check(ctx); err != nil {
		return err
	}
	var errs []error
	bad := func(format string, a ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	err := ix.scanAll(ctx, globEscape(ix.prefix)+"o{*", func(key string) error {
		h, err := ix.c.HGetAll(ctx, key).Result()
		if err != nil {
			return err
		}
		o, err := decodeOriginal(h["v"])
		if err != nil {
			bad("%s: %v", key, err)
			return nil
		}
		k := dedupindex.Key{Scope: h["s"], Digest: h["k"], URL: h["u"]}
		if keyTag(k) != tagOf(key) || o.Digest != k.Digest || h["d"] != micros(o.Date) {
			bad("%s: fields do not match the key or the original", key)
			return nil
		}
		if _, err := ix.c.ZScore(ctx, ix.urlKey(k.Scope, dedupindex.URLKey(o.TargetURI)), tagOf(key)).Result(); err != nil {
			bad("%s: no by-url entry for %s: %v", key, o.TargetURI, err)
		}
		return nil
	})
	if err == nil {
		err = ix.scanAll(ctx, globEscape(ix.prefix)+"u{*", func(key string) error {
			tags, err := ix.c.ZRange(ctx, key, 0, -1).Result()
			if err != nil {
				return err
			}
			for _, t := range tags {
				vals, err := ix.c.HMGet(ctx, ix.origKey(t), "v", "s").Result()
				if err != nil {
					return err
				}
				if vals[0] == nil {
					bad("%s: entry %s has no original", key, t)
					continue
				}
				o, err := decodeOriginal(vals[0])
				if err != nil {
					continue // reported with the original
				}
				if s, _ := vals[1].(string); ix.urlKey(s, dedupindex.URLKey(o.TargetURI)) != key {
					bad("%s: entry %s is an original of %s", key, t, o.TargetURI)
				}
			}
			return nil
		})
	}
	if err == nil {
		err = ix.scanAll(ctx, globEscape(ix.prefix)+"p{*", func(key string) error {
			ttl, err := ix.c.PTTL(ctx, key).Result()
			if err != nil {
				return err
			}
			if ttl < 0 && ttl != -2 { // -2: expired meanwhile
				bad("%s: pending claim without a lease", key)
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("dedupindex/redis: check: %w", err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("dedupindex/redis: check: %w", errors.Join(errs...))
	}
	return nil
}
