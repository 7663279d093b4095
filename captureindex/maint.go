package captureindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/failpoint"
)

// deleteBatch is how many changes one durable batch of Delete writes.
const deleteBatch = 4096

// location names a capture by file id and offset, as a revisit's
// original reference does.
type location struct {
	file   uint64
	offset int64
}

// change is one planned write of Delete or ReplaceFiles: a capture row
// to remove, or a revisit whose original is removed and that becomes
// unresolved (then looked for again).
type change struct {
	key       []byte
	val       value
	scope     uint64
	unresolve bool
}

// plan walks every capture and lists the rows match selects, and before
// them the revisits (kept) whose original is among those rows.
func (ix *Index) plan(ctx context.Context, match func(scope, file string, k parsedKey, v value) bool) ([]change, error) {
	return ix.planGone(ctx, match, map[location]bool{})
}

// planGone is plan with the locations already removed (by earlier
// batches) in gone; it adds the locations match selects.
func (ix *Index) planGone(ctx context.Context, match func(scope, file string, k parsedKey, v value) bool, gone map[location]bool) ([]change, error) {
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: []byte{tagCapture}, UpperBound: []byte{tagCapture + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var dels []change
	type ref struct {
		change
		to location
	}
	var refs []ref
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		pk, err := parseCaptureKey(it.Key())
		if err != nil {
			return nil, err
		}
		v, err := decodeValue(it.Value())
		if err != nil {
			return nil, fmt.Errorf("entry %x: %w", clipKey(it.Key()), err)
		}
		scope, _ := ix.name(kindScope, pk.scope)
		file, _ := ix.name(kindFile, pk.file)
		c := change{key: append([]byte(nil), it.Key()...), val: v, scope: pk.scope}
		if match != nil && match(scope, file, pk, v) {
			dels = append(dels, c)
			gone[location{pk.file, pk.offset}] = true
			continue
		}
		if v.typ == typeRevisit && v.orig != nil {
			refs = append(refs, ref{change: c, to: location{v.orig.file, v.orig.offset}})
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	var out []change
	for _, r := range refs {
		if gone[r.to] {
			r.unresolve = true
			out = append(out, r.change)
		}
	}
	return append(out, dels...), nil
}

// apply writes changes into b, counting per scope in delta. Each row is
// read again first (the caller holds wmu): a writer may have changed it
// (resolved a revisit) since it was planned.
func (ix *Index) apply(b *pebble.Batch, cs []change, delta map[uint64]map[byte]int64) error {
	for _, c := range cs {
		raw, closer, err := ix.db.Get(c.key)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		c.val, err = decodeValue(raw)
		closer.Close()
		if err != nil {
			return fmt.Errorf("entry %x: %w", clipKey(c.key), err)
		}
		if c.unresolve && c.val.orig == nil {
			continue
		}
		d := delta[c.scope]
		if d == nil {
			d = map[byte]int64{}
			delta[c.scope] = d
		}
		if c.unresolve {
			c.val.orig = nil
			b.Set(c.key, c.val.encode(nil), nil)
			b.Set(unresolvedKey(c.key), nil, nil)
			d[ctrUnresolved]++
			continue
		}
		b.Delete(c.key, nil)
		d[ctrCaptures]--
		if c.val.typ == typeRevisit {
			d[ctrRevisits]--
			if c.val.orig == nil {
				b.Delete(unresolvedKey(c.key), nil)
				d[ctrUnresolved]--
			}
		}
	}
	return nil
}

// commit writes the counters of delta into b, commits it durably and
// updates the counters in memory. The caller holds wmu.
func (ix *Index) commit(b *pebble.Batch, delta map[uint64]map[byte]int64) error {
	for scope, d := range delta {
		cur := ix.counter(scope)
		for kind, n := range d {
			b.Set(counterKey(scope, kind), binary.AppendVarint(nil, cur[kind]+n), nil)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	for scope, d := range delta {
		cur := ix.counter(scope)
		for kind, n := range d {
			cur[kind] += n
		}
	}
	return nil
}

// Delete removes every capture sel matches (Files by the stored file
// name, or its base name; URLPrefix against the capture's URI; From and
// To against its date) and reports how many. Revisits kept whose
// original is removed become unresolved and are looked for again (another
// capture of the payload may serve). It writes durable batches of up to
// deleteBatch changes, the revisits first: a crash leaves each capture
// either stored or gone, no revisit pointing at a removed original, and
// Check passes. The zero Selector is refused.
func (ix *Index) Delete(ctx context.Context, sel dedupindex.Selector) (int64, error) {
	if sel.IsZero() {
		return 0, fmt.Errorf("captureindex: %w", dedupindex.ErrEmptySelector)
	}
	if err := ix.begin(); err != nil {
		return 0, err
	}
	defer ix.end()
	match := func(scope, file string, k parsedKey, v value) bool {
		return sel.Match(scope, dedupindex.Original{File: file, TargetURI: v.uri, Date: timeOf(k, v)})
	}
	ix.wmu.Lock()
	cs, err := ix.plan(ctx, match)
	ix.wmu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("captureindex: delete: %w", err)
	}
	gone := map[location]bool{}
	for _, c := range cs {
		if !c.unresolve {
			pk, _ := parseCaptureKey(c.key)
			gone[location{pk.file, pk.offset}] = true
		}
	}
	batch := ix.delBatch
	if batch <= 0 {
		batch = deleteBatch
	}
	// Writers (ingest) go on between batches: wmu is held per batch.
	var n int64
	for len(cs) > 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		part := cs[:min(len(cs), batch)]
		cs = cs[len(part):]
		m, err := ix.deleteBatch(part)
		n += m
		if err != nil {
			return n, fmt.Errorf("captureindex: delete: %w", err)
		}
		// After each durable batch: crash tests kill the process here.
		if err := failpoint.Inject("captureindex.delete-batch"); err != nil {
			return n, fmt.Errorf("captureindex: delete: %w", err)
		}
	}
	// A revisit added meanwhile may have been resolved to a capture
	// removed since: unresolve those, then look again for every
	// unresolved revisit's original.
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	fix, err := ix.planGone(ctx, nil, gone)
	if err == nil && len(fix) > 0 {
		_, err = ix.deleteBatchLocked(fix)
	}
	if err != nil {
		return n, fmt.Errorf("captureindex: delete: %w", err)
	}
	if err := ix.resolveMarked(ctx, [][]byte{{tagUnresolved}}); err != nil {
		return n, err
	}
	return n, nil
}

// deleteBatch applies one durable batch of changes under wmu and reports
// the captures removed.
func (ix *Index) deleteBatch(cs []change) (int64, error) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return ix.deleteBatchLocked(cs)
}

func (ix *Index) deleteBatchLocked(cs []change) (int64, error) {
	b := ix.db.NewBatch()
	defer b.Close()
	delta := map[uint64]map[byte]int64{}
	if err := ix.apply(b, cs, delta); err != nil {
		return 0, err
	}
	if err := ix.commit(b, delta); err != nil {
		return 0, err
	}
	var n int64
	for _, d := range delta {
		n -= d[ctrCaptures]
	}
	return n, nil
}

// ReplaceFiles replaces the captures of each named WARC file (matched as
// Delete matches Files) with the captures given for it, in one durable
// batch: the file was rewritten (`wayside dedup --replace`) and its
// records moved. Revisits elsewhere that pointed into the old file are
// resolved again against the new captures. Running it again with the same
// captures changes nothing, so a caller may retry after a crash.
func (ix *Index) ReplaceFiles(ctx context.Context, files map[string][]wayside.Capture) (removed, added int, err error) {
	if len(files) == 0 {
		return 0, 0, nil
	}
	if err := ix.begin(); err != nil {
		return 0, 0, err
	}
	defer ix.end()
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	cs, err := ix.plan(ctx, func(_, file string, _ parsedKey, _ value) bool { return dedupindex.MatchFile(names, file) })
	if err != nil {
		return 0, 0, fmt.Errorf("captureindex: replace files: %w", err)
	}
	b := ix.db.NewIndexedBatch()
	defer b.Close()
	delta := map[uint64]map[byte]int64{}
	if err := ix.apply(b, cs, delta); err != nil {
		return 0, 0, fmt.Errorf("captureindex: replace files: %w", err)
	}
	for _, d := range delta {
		removed -= int(d[ctrCaptures])
	}
	pending := map[byte]map[string]uint64{}
	for _, name := range names {
		for _, c := range files[name] {
			if !Indexable(c) {
				continue
			}
			_, ok, err := ix.addOne(b, pending, delta, c)
			if err != nil {
				return 0, 0, fmt.Errorf("captureindex: replace files: add %s at %s offset %d: %w", c.URI, c.File, c.Offset, err)
			}
			if ok {
				added++
			}
		}
	}
	ix.publish(pending)
	if err := ix.commit(b, delta); err != nil {
		ix.unpublish(pending)
		return 0, 0, fmt.Errorf("captureindex: replace files: %w", err)
	}
	if err := ix.resolveMarked(ctx, [][]byte{{tagUnresolved}}); err != nil {
		return removed, added, err
	}
	return removed, added, nil
}

// ScanAll calls fn for every capture sel matches, in key order (scope,
// urlkey, time: the order of a sorted CDXJ file within a scope), from a
// consistent snapshot. Return ErrStop to end early.
func (ix *Index) ScanAll(ctx context.Context, sel dedupindex.Selector, fn func(*Entry) error) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	lo, hi := []byte{tagCapture}, []byte{tagCapture + 1}
	if sel.Scope != "" {
		id, ok := ix.lookupID(kindScope, sel.Scope)
		if !ok {
			return nil
		}
		lo = scopePrefix(id)
		hi = upperBound(lo)
	}
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("captureindex: scan: %w", err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e, err := ix.entry(it.Key(), it.Value())
		if err != nil {
			return fmt.Errorf("captureindex: scan: %w", err)
		}
		if !sel.Match(e.Scope, dedupindex.Original{File: e.File, TargetURI: e.URI, Date: e.Date}) {
			continue
		}
		if err := fn(e); err != nil {
			if err == ErrStop {
				return nil
			}
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("captureindex: scan: %w", err)
	}
	return nil
}
