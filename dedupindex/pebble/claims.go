package pebble

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"sort"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
)

const numShards = 64

// shard holds the in-memory slots of a subset of keys.
type shard struct {
	mu    sync.Mutex
	slots map[string]*slot
}

// slot is an in-memory lock on one key: a pending claim (token != 0) that
// may turn into a commit (writing), or a seeding writer (token == 0,
// writing). Writers that find a slot wait for done; Claim reports Pending.
type slot struct {
	token     uint64
	writing   bool
	notBefore time.Time // ClaimNewer: a stored original dated before it is replaced
	done      chan struct{}
}

func (ix *Index) shardFor(name string) *shard {
	return &ix.shards[maphash.String(ix.seed, name)%numShards]
}

// release removes s from the claim table and wakes its waiters, unless
// Close already did.
func (ix *Index) release(name string, s *slot) {
	sh := ix.shardFor(name)
	sh.mu.Lock()
	if sh.slots[name] == s {
		delete(sh.slots, name)
		close(s.done)
	}
	sh.mu.Unlock()
}

// Claim installs a pending claim for k unless k has a committed original
// (Duplicate) or another pending claim (Pending).
func (ix *Index) Claim(ctx context.Context, k dedupindex.Key) (dedupindex.ClaimResult, error) {
	return ix.claim(ctx, k, time.Time{})
}

// ClaimNewer is Claim, except that a committed original dated before
// notBefore counts as absent and is replaced by the claimer's Commit.
func (ix *Index) ClaimNewer(ctx context.Context, k dedupindex.Key, notBefore time.Time) (dedupindex.ClaimResult, error) {
	return ix.claim(ctx, k, notBefore)
}

func (ix *Index) claim(ctx context.Context, k dedupindex.Key, notBefore time.Time) (dedupindex.ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return dedupindex.ClaimResult{}, err
	}
	pk, err := parseKey(k)
	if err != nil {
		return dedupindex.ClaimResult{}, err
	}
	if err := ix.begin(); err != nil {
		return dedupindex.ClaimResult{}, err
	}
	defer ix.end()
	// Allocate the scope before taking the shard lock (it may sync).
	id, _, err := ix.scopeID(pk.scope, true)
	if err != nil {
		return dedupindex.ClaimResult{}, err
	}
	name := pk.slotName()
	sh := ix.shardFor(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for {
		if ix.closed.Load() { // Close may already have emptied this shard
			return dedupindex.ClaimResult{}, dedupindex.ErrClosed
		}
		cur := sh.slots[name]
		if cur == nil {
			break
		}
		if cur.token != 0 {
			return dedupindex.ClaimResult{State: dedupindex.Pending}, nil
		}
		// A seeding Put (e.g. the sidecar ingesting the WARC this very
		// record was written to) holds the key for one durable batch
		// write: wait for it rather than report Pending, which would
		// cost a missed dedup.
		sh.mu.Unlock()
		select {
		case <-cur.done:
			sh.mu.Lock()
		case <-ctx.Done():
			sh.mu.Lock() // for the deferred Unlock
			return dedupindex.ClaimResult{}, ctx.Err()
		}
	}
	o, found, err := ix.get(nil, id, pk)
	if err != nil {
		return dedupindex.ClaimResult{}, err
	}
	if found && (notBefore.IsZero() || !o.Date.Before(notBefore)) {
		return dedupindex.ClaimResult{State: dedupindex.Duplicate, Original: o}, nil
	}
	seq := ix.seq.Add(1)
	sh.slots[name] = &slot{token: seq, notBefore: notBefore, done: make(chan struct{})}
	k.Digest = pk.digest()
	return dedupindex.ClaimResult{
		State:  dedupindex.Claimed,
		Ticket: dedupindex.Ticket{Key: k, Token: ix.token(seq)},
	}, nil
}

// Commit stores o as the committed original of the ticket's key and drops
// the claim, durably. A ticket issued by an earlier run of the index stores
// o only if the key has no original yet. After an error the claim is gone.
func (ix *Index) Commit(ctx context.Context, t dedupindex.Ticket, o dedupindex.Original) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	pk, err := parseKey(t.Key)
	if err != nil {
		return err
	}
	inst, seq, err := parseToken(t.Token)
	if err != nil {
		return err
	}
	if inst != ix.instance {
		// The claim was lost to a restart; the record is durable, so index
		// it unless another original got there first.
		o, err := dedupindex.CheckOriginal(t.Key, o)
		if err != nil {
			return err
		}
		_, err = ix.put(ctx, pk, o)
		return err
	}
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	name := pk.slotName()
	sh := ix.shardFor(name)
	sh.mu.Lock()
	s := sh.slots[name]
	if s == nil || s.token != seq || s.writing {
		sh.mu.Unlock()
		return fmt.Errorf("%w: commit %s in scope %q", dedupindex.ErrNoClaim, pk.digest(), pk.scope)
	}
	s.writing = true
	sh.mu.Unlock()
	defer ix.release(name, s)
	o, err = dedupindex.CheckOriginal(t.Key, o)
	if err != nil {
		return err
	}
	b := ix.db.NewBatch()
	defer b.Close()
	w := batchWriter{ix: ix, b: b}
	if _, err := w.add(pk, o, s.notBefore); err != nil {
		return err
	}
	if err := w.finish(); err != nil {
		return err
	}
	if err := ix.write(func() error { return ix.apply(b) }); err != nil {
		return fmt.Errorf("dedupindex/pebble: commit %s: %w", pk.digest(), err)
	}
	return nil
}

// Cancel drops a pending claim.
func (ix *Index) Cancel(ctx context.Context, t dedupindex.Ticket) error {
	pk, err := parseKey(t.Key)
	if err != nil {
		return err
	}
	inst, seq, err := parseToken(t.Token)
	if err != nil {
		return err
	}
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	name := pk.slotName()
	sh := ix.shardFor(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.slots[name]
	if inst != ix.instance || s == nil || s.token != seq || s.writing {
		return fmt.Errorf("%w: cancel %s in scope %q", dedupindex.ErrNoClaim, pk.digest(), pk.scope)
	}
	delete(sh.slots, name)
	close(s.done)
	return nil
}

// Put stores o under k, durably, unless k already has an original. It
// waits while another caller holds a claim on k.
func (ix *Index) Put(ctx context.Context, k dedupindex.Key, o dedupindex.Original) (bool, error) {
	pk, err := parseKey(k)
	if err != nil {
		return false, err
	}
	o, err = dedupindex.CheckOriginal(k, o)
	if err != nil {
		return false, err
	}
	return ix.put(ctx, pk, o)
}

func (ix *Index) put(ctx context.Context, pk parsedKey, o dedupindex.Original) (bool, error) {
	added, err := ix.putBatch(ctx, []parsedKey{pk}, []dedupindex.Original{o})
	if err != nil {
		return false, err
	}
	return added[0], nil
}

// PutBatch stores entries like Put with one durable write for the batch.
func (ix *Index) PutBatch(ctx context.Context, entries []dedupindex.Entry) ([]bool, error) {
	pks := make([]parsedKey, len(entries))
	os := make([]dedupindex.Original, len(entries))
	for i, e := range entries {
		pk, err := parseKey(e.Key)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		o, err := dedupindex.CheckOriginal(e.Key, e.Original)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		pks[i], os[i] = pk, o
	}
	return ix.putBatch(ctx, pks, os)
}

func (ix *Index) putBatch(ctx context.Context, pks []parsedKey, os []dedupindex.Original) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Lock every key's slot in sorted order (so concurrent batches cannot
	// deadlock), waiting for claims and other writers to finish.
	names := make([]string, 0, len(pks))
	seen := make(map[string]bool, len(pks))
	for _, pk := range pks {
		n := pk.slotName()
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	held := make([]*slot, 0, len(names))
	defer func() {
		for i, s := range held {
			ix.release(names[i], s)
		}
	}()
	for _, name := range names {
		s, err := ix.acquire(ctx, name)
		if err != nil {
			return nil, err
		}
		held = append(held, s)
	}
	if err := ix.begin(); err != nil {
		return nil, err
	}
	defer ix.end()
	b := ix.db.NewBatch()
	defer b.Close()
	w := batchWriter{ix: ix, b: b, inBatch: map[string]bool{}}
	added := make([]bool, len(pks))
	for i, pk := range pks {
		ok, err := w.add(pk, os[i], time.Time{})
		if err != nil {
			return nil, err
		}
		added[i] = ok
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	if b.Count() > 0 {
		if err := ix.write(func() error { return ix.apply(b) }); err != nil {
			return nil, fmt.Errorf("dedupindex/pebble: put: %w", err)
		}
	}
	return added, nil
}

// acquire installs a writer slot for name, waiting while another slot
// holds it.
func (ix *Index) acquire(ctx context.Context, name string) (*slot, error) {
	sh := ix.shardFor(name)
	for {
		sh.mu.Lock()
		if ix.closed.Load() {
			sh.mu.Unlock()
			return nil, dedupindex.ErrClosed
		}
		cur := sh.slots[name]
		if cur == nil {
			s := &slot{writing: true, done: make(chan struct{})}
			sh.slots[name] = s
			sh.mu.Unlock()
			return s, nil
		}
		sh.mu.Unlock()
		select {
		case <-cur.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// batchWriter adds originals to a batch, keeping the counters, the by-URL
// index and first-original-wins consistent. The caller holds the slot of
// every key it adds.
type batchWriter struct {
	ix      *Index
	b       *pebble.Batch
	inBatch map[string]bool  // primary keys already set in b
	added   map[uint64]int64 // new originals per scope id
}

// finish adds the counter updates to the batch; call it once, before
// applying the batch.
func (w *batchWriter) finish() error {
	for id, n := range w.added {
		if err := w.b.Merge(counterKey(id), binary.AppendVarint(nil, n), nil); err != nil {
			return err
		}
	}
	return nil
}

// add writes o under pk unless pk has an original that is kept (any
// original, or with notBefore set, one dated at or after notBefore).
func (w *batchWriter) add(pk parsedKey, o dedupindex.Original, notBefore time.Time) (bool, error) {
	ix := w.ix
	id, _, err := ix.scopeID(pk.scope, true)
	if err != nil {
		return false, err
	}
	key := primaryKey(id, pk)
	if w.inBatch[string(key)] {
		return false, nil
	}
	old, found, err := ix.get(key, 0, pk)
	if err != nil {
		return false, err
	}
	if found && (notBefore.IsZero() || !old.Date.Before(notBefore)) {
		return false, nil
	}
	r, err := ix.toRecord(o)
	if err != nil {
		return false, err
	}
	if found && ix.byURL && ix.urlKey(old.TargetURI) != ix.urlKey(o.TargetURI) {
		// Replacing an expired original of another URL: drop its by-URL entry.
		if err := w.b.Delete(secondaryKey(id, hash8(ix.urlKey(old.TargetURI)), pk), nil); err != nil {
			return false, err
		}
	}
	if !found {
		if w.added == nil {
			w.added = map[uint64]int64{}
		}
		w.added[id]++
	}
	if err := w.b.Set(key, record.Append(nil, r), nil); err != nil {
		return false, err
	}
	if ix.byURL {
		if err := w.b.Set(secondaryKey(id, hash8(ix.urlKey(o.TargetURI)), pk), nil, nil); err != nil {
			return false, err
		}
	}
	if w.inBatch != nil {
		w.inBatch[string(key)] = true
	}
	return true, nil
}
