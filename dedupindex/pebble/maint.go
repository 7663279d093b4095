package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
	"github.com/wayside-archive/wayside/internal/failpoint"
)

var _ dedupindex.Maintainer = (*Index)(nil)

// deleteBatch is how many originals one durable batch of Delete removes
// (unless WithDeleteBatchForTest says otherwise).
const deleteBatch = 4096

// scopeBounds returns the primary key range of sel's scope (all scopes
// when unset); ok is false for an unknown scope.
func (ix *Index) scopeBounds(scope string) (lo, hi []byte, ok bool) {
	if scope == "" {
		return []byte{tagPrimary}, []byte{tagPrimary + 1}, true
	}
	id, found, _ := ix.scopeID(scope, false)
	if !found {
		return nil, nil, false
	}
	p := binary.AppendUvarint([]byte{tagPrimary}, id)
	return p, prefixEnd(p), true
}

// entryAt decodes a primary entry into a dedupindex.Entry.
func (ix *Index) entryAt(k, v []byte) (dedupindex.Entry, parsedKey, error) {
	dp, err := decodePrimaryKey(k)
	if err != nil {
		return dedupindex.Entry{}, parsedKey{}, fmt.Errorf("dedupindex/pebble: entry %x: %w", k, err)
	}
	r, err := record.Decode(v)
	if err != nil {
		return dedupindex.Entry{}, parsedKey{}, fmt.Errorf("dedupindex/pebble: entry %x: %w", k, err)
	}
	ix.namesMu.RLock()
	scope, ok := ix.scopeNames[dp.scopeID]
	ix.namesMu.RUnlock()
	if !ok {
		return dedupindex.Entry{}, parsedKey{}, fmt.Errorf("dedupindex/pebble: entry %x: unknown scope id %d", k, dp.scopeID)
	}
	pk := dp.pk
	pk.scope = scope
	o, err := ix.toOriginal(pk.digest(), r)
	if err != nil {
		return dedupindex.Entry{}, parsedKey{}, fmt.Errorf("dedupindex/pebble: entry %x: %w", k, err)
	}
	key := dedupindex.Key{Scope: scope, Digest: pk.digest()}
	if pk.hasURL {
		key.URL = ix.urlKey(o.TargetURI)
	}
	return dedupindex.Entry{Key: key, Original: o}, pk, nil
}

// Scan calls fn for every original sel matches, in key order, from a
// consistent snapshot.
func (ix *Index) Scan(ctx context.Context, sel dedupindex.Selector, fn func(dedupindex.Entry) error) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	lo, hi, ok := ix.scopeBounds(sel.Scope)
	if !ok {
		return nil
	}
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("dedupindex/pebble: scan: %w", err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e, _, err := ix.entryAt(it.Key(), it.Value())
		if err != nil {
			return err
		}
		if !sel.Match(e.Key.Scope, e.Original) {
			continue
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("dedupindex/pebble: scan: %w", err)
	}
	return nil
}

// victim is an original Delete found.
type victim struct {
	pk       parsedKey
	recordID string
}

// Delete removes the originals sel matches, in durable batches of up to
// deleteBatch originals: each batch removes its originals, their by-URL
// entries and their counts in one atomic write, so a crash leaves every
// original either stored whole or gone, and Check passes.
func (ix *Index) Delete(ctx context.Context, sel dedupindex.Selector) (int64, error) {
	if sel.IsZero() {
		return 0, dedupindex.ErrEmptySelector
	}
	var found []victim
	err := ix.Scan(ctx, sel, func(e dedupindex.Entry) error {
		pk, err := parseKey(e.Key)
		if err != nil {
			return err
		}
		found = append(found, victim{pk: pk, recordID: e.Original.RecordID})
		return nil
	})
	if err != nil {
		return 0, err
	}
	batch := ix.delBatch
	if batch <= 0 {
		batch = deleteBatch
	}
	var n int64
	for len(found) > 0 {
		part := found[:min(len(found), batch)]
		found = found[len(part):]
		m, err := ix.deleteSome(ctx, sel, part)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// deleteSome deletes one batch, holding the slots of its keys so no Put
// or Commit of them runs meanwhile; an original that changed since the
// scan is deleted only if it still matches.
func (ix *Index) deleteSome(ctx context.Context, sel dedupindex.Selector, vs []victim) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	release, err := ix.hold(ctx, vs)
	if err != nil {
		return 0, err
	}
	defer release()
	if err := ix.begin(); err != nil {
		return 0, err
	}
	defer ix.end()
	b := ix.db.NewBatch()
	defer b.Close()
	// One iterator serves the batch's reads (an iterator per read costs
	// more than the read).
	it, err := ix.db.NewIter(nil)
	if err != nil {
		return 0, fmt.Errorf("dedupindex/pebble: delete: %w", err)
	}
	defer it.Close()
	deleted := map[string]bool{}
	counts := map[uint64]int64{}
	var n int64
	for _, v := range vs {
		id, ok, err := ix.scopeID(v.pk.scope, false)
		if err != nil || !ok {
			continue
		}
		key := primaryKey(id, v.pk)
		if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
			continue
		}
		e, _, err := ix.entryAt(it.Key(), it.Value())
		if err != nil {
			return 0, err
		}
		if !sel.Match(v.pk.scope, e.Original) {
			continue
		}
		if err := b.Delete(key, nil); err != nil {
			return 0, err
		}
		deleted[string(key)] = true
		counts[id]--
		n++
		if ix.byURL {
			if err := ix.dropSecondary(it, b, id, v.pk, e.Original.TargetURI, deleted); err != nil {
				return 0, err
			}
		}
	}
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("dedupindex/pebble: delete: %w", err)
	}
	for id, c := range counts {
		if err := b.Merge(counterKey(id), binary.AppendVarint(nil, c), nil); err != nil {
			return 0, err
		}
	}
	if n == 0 {
		return 0, nil
	}
	err = ix.apply(b)
	ix.iters.changed()
	if err != nil {
		return 0, fmt.Errorf("dedupindex/pebble: delete: %w", err)
	}
	// After each durable batch: crash tests kill the process here.
	if err := failpoint.Inject("dedupindex.delete-batch"); err != nil {
		return n, fmt.Errorf("dedupindex/pebble: delete: %w", err)
	}
	return n, nil
}

// dropSecondary deletes the by-URL entry of primary pk (target uri) in b
// unless another original that stays shares it (entries keep 8 digest
// bytes, so two originals of one URL can share one). it reads the store.
func (ix *Index) dropSecondary(it *pebble.Iterator, b *pebble.Batch, id uint64, pk parsedKey, uri string, gone map[string]bool) error {
	surtHash := hash8(ix.urlKey(uri))
	sk := secondaryKey(id, surtHash, pk)
	ds, err := decodeSecondaryKey(sk)
	if err != nil {
		return err
	}
	for ok := it.SeekGE(ds.primary); ok && bytes.HasPrefix(it.Key(), ds.primary); ok = it.Next() {
		if gone[string(it.Key())] {
			continue
		}
		r, err := record.Decode(it.Value())
		if err != nil {
			return fmt.Errorf("dedupindex/pebble: entry %x: %w", it.Key(), err)
		}
		if hash8(ix.urlKey(r.TargetURI)) == surtHash {
			return nil // shared
		}
	}
	return b.Delete(sk, nil)
}

// hold acquires the writer slots of the victims' keys in sorted order
// (as putBatch does, so they cannot deadlock) and returns their release.
func (ix *Index) hold(ctx context.Context, vs []victim) (func(), error) {
	names := make([]string, 0, len(vs))
	seen := map[string]bool{}
	for _, v := range vs {
		if n := v.pk.slotName(); !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	held := make([]*slot, 0, len(names))
	release := func() {
		for i, s := range held {
			ix.release(names[i], s)
		}
	}
	for _, name := range names {
		s, err := ix.acquire(ctx, name)
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, s)
	}
	return release, nil
}

// Update replaces originals whose record moved (compare and set on the
// record id), in one durable batch.
func (ix *Index) Update(ctx context.Context, moves []dedupindex.Move) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	vs := make([]victim, len(moves))
	tos := make([]dedupindex.Original, len(moves))
	for i, m := range moves {
		pk, err := parseKey(m.Key)
		if err != nil {
			return 0, fmt.Errorf("move %d: %w", i, err)
		}
		o, err := dedupindex.CheckOriginal(m.Key, m.To)
		if err != nil {
			return 0, fmt.Errorf("move %d: %w", i, err)
		}
		vs[i], tos[i] = victim{pk: pk, recordID: m.From}, o
	}
	release, err := ix.hold(ctx, vs)
	if err != nil {
		return 0, err
	}
	defer release()
	if err := ix.begin(); err != nil {
		return 0, err
	}
	defer ix.end()
	b := ix.db.NewBatch()
	defer b.Close()
	var n int64
	done := map[string]bool{}
	for i, v := range vs {
		id, ok, err := ix.scopeID(v.pk.scope, false)
		if err != nil || !ok {
			continue
		}
		key := primaryKey(id, v.pk)
		if done[string(key)] {
			continue
		}
		old, found, err := ix.get(key, 0, v.pk)
		if err != nil {
			return 0, err
		}
		if !found || old.RecordID != v.recordID {
			continue
		}
		r, err := ix.toRecord(tos[i])
		if err != nil {
			return 0, err
		}
		if err := b.Set(key, record.Append(nil, r), nil); err != nil {
			return 0, err
		}
		done[string(key)] = true
		if ix.byURL && !bytes.Equal(secondaryKey(id, hash8(ix.urlKey(old.TargetURI)), v.pk), secondaryKey(id, hash8(ix.urlKey(tos[i].TargetURI)), v.pk)) {
			it, err := ix.db.NewIter(nil)
			if err != nil {
				return 0, err
			}
			err = ix.dropSecondary(it, b, id, v.pk, old.TargetURI, map[string]bool{string(key): true})
			if cerr := it.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return 0, err
			}
			if err := b.Set(secondaryKey(id, hash8(ix.urlKey(tos[i].TargetURI)), v.pk), nil, nil); err != nil {
				return 0, err
			}
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	err = ix.apply(b)
	ix.iters.changed()
	if err != nil {
		return 0, fmt.Errorf("dedupindex/pebble: update: %w", err)
	}
	return n, nil
}
