package pebble

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
)

// Lookups skip the memtable for keys it does not hold. Every write lands
// in Pebble's memtable, a skiplist each lookup searches before the tables:
// under continuous writes (a crawl committing while others look up) that
// search cost a lookup in the daemon more than all tables together (2.6
// of its 6 CPU-µs), and every write made the next lookups build new
// iterators. But a lookup only needs the memtable for a key written since
// its memtable was flushed, and the index knows which keys it wrote.
//
// unflushed maps every key a batch wrote (apply) to the largest sequence
// number of that batch, and flushed is a sequence number every write at or
// below which is in the tables: after a flush (FlushEnd, called once the
// flushed tables are installed and visible to new iterators) the largest
// sequence number in its output. Memtables are flushed oldest first and
// Pebble assigns sequence numbers in memtable order, so the memtable of
// that number and every older one are flushed. Open leaves the memtable
// empty (Pebble flushes a replayed write-ahead log into tables when it
// opens a directory for writing), so at the start nothing is unflushed.
//
// A lookup of a key not in unflushed, or whose number is at or below
// flushed, reads the tables only: an iterator with
// OnlyReadGuaranteedDurable, tagged with the table generation (bumped by
// flushes and compactions, not by writes, which do not change the tables).
// Any other lookup reads the memtable too, as before (lookupiter.go).
//
// Why no lookup misses a write that returned: apply records the batch's
// keys (first as pending, then with the batch's number) before the write
// returns. A lookup that starts later either finds the key unflushed and
// reads the memtable with an iterator newer than the write; or finds its
// number at or below flushed, stored by a FlushEnd after the flush's tables
// were installed and after it bumped the table generation, so the lookup,
// reading that generation afterwards, gets a tables iterator created after
// the install, which holds the write (TestLookupSeesEveryWrite,
// TestTablesOnlyLookupsUnderWrites).
type unflushed struct {
	mu      sync.RWMutex
	keys    map[string]uint64 // key → largest sequence number that wrote it (pending: math.MaxUint64)
	pruneAt int
	flushed atomic.Uint64
	// skipped counts lookups answered from the tables alone (tests).
	skipped atomic.Uint64
}

const minPruneAt = 4096

func newUnflushed() *unflushed {
	return &unflushed{keys: map[string]uint64{}, pruneAt: minPruneAt}
}

// pending records b's keys before b is applied: until apply has its
// sequence number, a lookup of them reads the memtable.
func (u *unflushed) pending(b *pebble.Batch) {
	r := b.Reader()
	u.mu.Lock()
	defer u.mu.Unlock()
	for {
		_, k, _, ok, err := r.Next()
		if !ok || err != nil {
			break
		}
		u.keys[string(k)] = math.MaxUint64
	}
}

// applied records b's keys with b's largest sequence number once b is
// applied, and drops keys flushed since (when the table has grown).
func (u *unflushed) applied(b *pebble.Batch) {
	if b.Count() == 0 {
		return
	}
	top := b.SeqNum() + uint64(b.Count()) - 1
	r := b.Reader()
	u.mu.Lock()
	defer u.mu.Unlock()
	for {
		_, k, _, ok, err := r.Next()
		if !ok || err != nil {
			break
		}
		// A concurrent batch's pending mark is replaced by this number:
		// that batch has not returned yet, and its own applied call
		// raises the number again.
		if cur, ok := u.keys[string(k)]; !ok || cur == math.MaxUint64 || cur < top {
			u.keys[string(k)] = top
		}
	}
	if len(u.keys) >= u.pruneAt {
		f := u.flushed.Load()
		for k, s := range u.keys {
			if s <= f {
				delete(u.keys, k)
			}
		}
		u.pruneAt = max(2*len(u.keys), minPruneAt)
	}
}

// holds reports whether key may be in a memtable: written, and not known
// to be flushed.
func (u *unflushed) holds(key []byte) bool {
	u.mu.RLock()
	s, ok := u.keys[string(key)]
	u.mu.RUnlock()
	return ok && s > u.flushed.Load()
}

// flushEnd records a finished flush; the caller has bumped the table
// generation first.
func (u *unflushed) flushEnd(info pebble.FlushInfo) {
	if info.Err != nil {
		return
	}
	var top uint64
	for _, t := range info.Output {
		top = max(top, t.LargestSeqNum)
	}
	for {
		cur := u.flushed.Load()
		if top <= cur || u.flushed.CompareAndSwap(cur, top) {
			return
		}
	}
}

// apply commits b durably, recording its keys in ix.mem. Every write to
// the database goes through it.
func (ix *Index) apply(b *pebble.Batch) error {
	ix.mem.pending(b)
	if err := ix.db.Apply(b, pebble.Sync); err != nil {
		return err
	}
	ix.mem.applied(b)
	return nil
}

// setOne durably sets one key.
func (ix *Index) setOne(key, value []byte) error {
	b := ix.db.NewBatch()
	defer b.Close()
	if err := b.Set(key, value, nil); err != nil {
		return err
	}
	return ix.apply(b)
}
