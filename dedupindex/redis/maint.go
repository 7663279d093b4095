package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/failpoint"
)

var _ dedupindex.Maintainer = (*Index)(nil)

// queueLua: ARGV field, expected value. If the slot still holds the
// expected original, queue its by-URL entry in the todo hash (KEYS[4]), as
// an interrupted commit leaves it: Check accepts the original without its
// by-URL entry, and Repair writes the entry again if the delete never
// finishes. Returns 1, or 0 if the original changed.
const queueLua = `
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v == '\0' then v = redis.call('GET', KEYS[3]) end
if v ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[4], ARGV[1], '')
return 1
`

// deleteLua: ARGV field, expected value. Deletes the original (its field,
// overflow key and queued by-URL entry) if it is still the expected one.
// Returns 1 or 0.
const deleteLua = `
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v == '\0' then v = redis.call('GET', KEYS[3]) end
if v ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[3])
redis.call('HDEL', KEYS[4], ARGV[1])
return 1
`

var (
	queueScript  = goredis.NewScript(queueLua)
	deleteScript = goredis.NewScript(deleteLua)
)

// stored is an original found by a scan, with its value as stored.
type stored struct {
	s     slot
	value string
	entry dedupindex.Entry
}

// scanStored calls fn for every readable original sel matches.
func (ix *Index) scanStored(ctx context.Context, sel dedupindex.Selector, fn func(stored) error) error {
	if err := ix.check(ctx); err != nil {
		return err
	}
	err := ix.scanAll(ctx, ix.pattern('d'), func(n *goredis.Client, keys []string) error {
		for _, key := range keys {
			bucket, scope, err := ix.l.parseBucketKey(key, 'd')
			if err != nil || (sel.Scope != "" && scope != sel.Scope) {
				continue // a foreign key is reported by Check
			}
			h, err := n.HGetAll(ctx, key).Result()
			if err != nil {
				return err
			}
			for field, v := range h {
				sum, alg, sameURL, err := ix.l.parseField(bucket, field)
				if err != nil {
					continue // reported by Check
				}
				s := slot{scope: scope, digest: digest.Digest{Alg: alg, Sum: sum}.String(), sum: sum, bucket: bucket, field: field}
				if v == overflow {
					if v, err = ix.get(ctx, s); err != nil {
						return err
					}
					if v == "" {
						continue // deleted meanwhile
					}
				}
				o, err := ix.decode(ctx, s, v)
				if errors.Is(err, errUnusable) {
					continue // reported by Check
				}
				if err != nil {
					return err
				}
				if !sel.Match(scope, o) {
					continue
				}
				k := dedupindex.Key{Scope: scope, Digest: s.digest}
				if sameURL {
					k.URL = dedupindex.URLKey(o.TargetURI)
				}
				if err := fn(stored{s: s, value: v, entry: dedupindex.Entry{Key: k, Original: o}}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("dedupindex/redis: scan: %w", ix.failed(err))
	}
	return nil
}

// Scan calls fn for every original sel matches, bucket by bucket on each
// master (no global order; `wayside index export` sorts).
func (ix *Index) Scan(ctx context.Context, sel dedupindex.Selector, fn func(dedupindex.Entry) error) error {
	return ix.scanStored(ctx, sel, func(st stored) error { return fn(st.entry) })
}

// Delete removes the originals sel matches. Each original goes in up to
// three steps, each atomic in Redis: its by-URL entry is queued (as an
// interrupted commit leaves it), the by-URL entry is removed (unless
// another original shares it), then the original, its overflow value and
// its queue entry are removed together if it is still the one found. An
// interrupted Delete leaves each original whole or gone, and Check passes;
// Repair restores the by-URL entry of an original whose delete did not
// finish.
func (ix *Index) Delete(ctx context.Context, sel dedupindex.Selector) (int64, error) {
	if sel.IsZero() {
		return 0, dedupindex.ErrEmptySelector
	}
	var found []stored
	if err := ix.scanStored(ctx, sel, func(st stored) error { found = append(found, st); return nil }); err != nil {
		return 0, err
	}
	var n int64
	for _, st := range found {
		if err := ix.check(ctx); err != nil {
			return n, err
		}
		ok, err := ix.deleteOne(ctx, st)
		if err != nil {
			return n, fmt.Errorf("dedupindex/redis: delete %s: %w", st.s.digest, err)
		}
		if ok {
			n++
		}
	}
	return n, nil
}

func (ix *Index) deleteOne(ctx context.Context, st stored) (bool, error) {
	keys := ix.slotKeys(st.s)
	if ix.l.byURL {
		q, err := queueScript.Run(ctx, ix.c, keys, st.s.field, st.value).Int()
		if err != nil {
			return false, ix.failed(err)
		}
		if q == 0 {
			return false, nil
		}
		if err := ix.dropURLEntryOf(ctx, st); err != nil {
			return false, err
		}
	}
	// Between queueing an original (its by-URL entry gone) and deleting
	// it: crash tests kill the process here, leaving what Repair mends.
	if err := failpoint.Inject("dedupindex.redis.delete-queued"); err != nil {
		return false, err
	}
	var d int
	_, err := ix.write(ctx, keys[0], ix.waitReplicas, ix.waitTimeout, func(c goredis.Cmdable) error {
		var err error
		d, err = deleteScript.Run(ctx, c, keys, st.s.field, st.value).Int()
		return err
	})
	if err != nil {
		return false, ix.failed(err)
	}
	return d == 1, nil
}

// dropURLEntryOf removes the by-URL entry of the original st is about to
// delete, unless another original (another field) shares it.
func (ix *Index) dropURLEntryOf(ctx context.Context, st stored) error {
	surtKey := dedupindex.URLKey(st.entry.Original.TargetURI)
	key, field := ix.l.urlEntry(st.s.scope, surtKey, st.s.sum)
	found, err := ix.originalsByRef(ctx, st.s.scope, st.s.sum[:refLen])
	if err != nil {
		return err
	}
	for _, o := range found {
		if o.Digest == st.entry.Original.Digest && o.RecordID == st.entry.Original.RecordID && o.TargetURI == st.entry.Original.TargetURI {
			continue // the original being deleted
		}
		if k, f := ix.l.urlEntry(st.s.scope, dedupindex.URLKey(o.TargetURI), st.s.sum); k == key && f == field {
			return nil
		}
	}
	_, err = ix.write(ctx, key, 0, 0, func(c goredis.Cmdable) error { return c.HDel(ctx, key, field).Err() })
	return ix.failed(err)
}

// Update replaces originals whose record moved: each move is a commit
// that replaces exactly the value found (compare and set in the commit
// script), with the by-URL index kept as a commit keeps it.
func (ix *Index) Update(ctx context.Context, moves []dedupindex.Move) (int64, error) {
	if err := ix.check(ctx); err != nil {
		return 0, err
	}
	type prepared struct {
		s  slot
		to dedupindex.Original
	}
	ps := make([]prepared, len(moves))
	for i, m := range moves {
		k, s, err := ix.locate(m.Key)
		if err != nil {
			return 0, fmt.Errorf("move %d: %w", i, err)
		}
		o, err := dedupindex.CheckOriginal(k, m.To)
		if err != nil {
			return 0, fmt.Errorf("move %d: %w", i, err)
		}
		ps[i] = prepared{s: s, to: o}
	}
	var n int64
	for i, p := range ps {
		v, err := ix.get(ctx, p.s)
		if err != nil {
			return n, err
		}
		if v == "" {
			continue
		}
		old, err := ix.decode(ctx, p.s, v)
		if errors.Is(err, errUnusable) {
			continue
		}
		if err != nil {
			return n, err
		}
		if old.RecordID != moves[i].From {
			continue
		}
		ok, err := ix.store(ctx, p.s, p.to, "", v)
		if ok {
			n++
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
