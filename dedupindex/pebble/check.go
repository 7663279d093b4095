package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wayside-archive/wayside/dedupindex/internal/record"
)

// maxCheckErrors bounds the violations Check lists.
const maxCheckErrors = 20

// Check verifies the index's invariants: every key is of a known kind,
// every value decodes and refers to known scopes and interned names, every
// by-URL entry has an original of that URL and every original
// exactly one by-URL entry, and the per-scope counters match. Pending claims
// are never persisted, so any other key is a violation.
func (ix *Index) Check(ctx context.Context) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(nil)
	if err != nil {
		return fmt.Errorf("dedupindex/pebble: check: %w", err)
	}
	defer it.Close()

	var errs []error
	bad := func(format string, a ...any) {
		if len(errs) < maxCheckErrors {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	ix.namesMu.RLock()
	scopes := make(map[uint64]string, len(ix.scopeNames))
	for id, n := range ix.scopeNames {
		scopes[id] = n
	}
	ix.namesMu.RUnlock()

	primaries := map[uint64]int64{}
	secondaries := map[uint64]int64{}
	counters := map[uint64]int64{}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		k, v := it.Key(), it.Value()
		switch k[0] {
		case tagMeta:
			if !bytes.Equal(k, versionKey) && !bytes.Equal(k, byURLKey) {
				bad("unknown meta key %q", k)
			}
		case tagScope:
			id, m := binary.Uvarint(v)
			if m <= 0 || scopes[id] != string(k[1:]) {
				bad("scope entry %q does not match the loaded scope table", k[1:])
			}
		case tagIntern:
			if len(k) < 3 {
				bad("bad intern key %x", k)
				continue
			}
			id, m := binary.Uvarint(k[2:])
			if s, ok := ix.internedName(k[1], id); m <= 0 || !ok || s != string(v) {
				bad("intern entry %x does not match the loaded table", k)
			}
		case tagCounter:
			id, m := binary.Uvarint(k[1:])
			c, mv := binary.Varint(v)
			if m <= 0 || mv <= 0 {
				bad("bad counter %x", k)
				continue
			}
			counters[id] = c
		case tagPrimary:
			dp, err := decodePrimaryKey(k)
			if err != nil {
				bad("primary key %x: %v", k, err)
				continue
			}
			if _, ok := scopes[dp.scopeID]; !ok {
				bad("primary key %x: unknown scope id %d", k, dp.scopeID)
			}
			r, err := record.Decode(v)
			if err != nil {
				bad("primary %x: value: %v", k, err)
				continue
			}
			if _, err := ix.toOriginal(dp.pk.digest(), r); err != nil {
				bad("primary %x: %v", k, err)
			}
			if r.TargetURI == "" {
				bad("primary %x: empty target URI", k)
			}
			primaries[dp.scopeID]++
		case tagSecondary:
			if !ix.byURL {
				bad("by-url entry %x in an index without the by-URL index", k)
				continue
			}
			ds, err := decodeSecondaryKey(k)
			if err != nil {
				bad("by-url key %x: %v", k, err)
				continue
			}
			secondaries[ds.scopeID]++
			found := false
			err = ix.scanPrimaries(snap, ds.primary, func(_ decodedPrimary, r record.Record) error {
				if hash8(ix.urlKey(r.TargetURI)) == ds.surtHash {
					found = true
				}
				return nil
			})
			if err != nil {
				bad("by-url entry %x: %v", k, err)
			} else if !found {
				bad("by-url entry %x has no original", k)
			}
		default:
			bad("unknown key %x", k)
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("dedupindex/pebble: check: %w", err)
	}
	for id := range scopes {
		p, s, c := primaries[id], secondaries[id], counters[id]
		if ix.byURL && p != s {
			bad("scope %q: %d originals but %d by-url entries", scopes[id], p, s)
		}
		if p != c {
			bad("scope %q: %d originals but counter says %d", scopes[id], p, c)
		}
	}
	for id := range counters {
		if _, ok := scopes[id]; !ok {
			bad("counter for unknown scope id %d", id)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("dedupindex/pebble: check %s: %w", ix.dir, errors.Join(errs...))
	}
	return nil
}
