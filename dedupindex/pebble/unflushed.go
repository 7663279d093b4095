package pebble

import (
	"hash/maphash"
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
// unflushed is a filter over the primary keys written: each key hashes to
// a bucket holding the largest sequence number of a batch that wrote a key
// of that bucket (apply, after the batch is applied), and flushed is a
// sequence number every write at or below which is in the tables: after a
// flush (FlushEnd, called once the flushed tables are installed and
// visible to new iterators) the largest sequence number in its output.
// Memtables are flushed oldest first and Pebble assigns sequence numbers in
// memtable order, so the memtable of that number and every older one are
// flushed. Bucket numbers only grow, and a bucket at or below flushed
// holds nothing unflushed: no entry is ever removed. Open leaves the
// memtable empty (Pebble flushes a replayed write-ahead log into tables
// when it opens a directory for writing), so at the start nothing is
// unflushed.
//
// A lookup of a primary key whose bucket is at or below flushed reads the
// tables only: an iterator with OnlyReadGuaranteedDurable, tagged with the
// table generation (bumped by flushes and compactions, not by writes,
// which do not change the tables). Any other lookup (another key of its
// bucket unflushed: a few per cent while a full memtable waits) reads the
// memtable too, as before (lookupiter.go). While top, the largest number
// applied, is at or below flushed, nothing is unflushed and no bucket is
// read (a read-mostly index, after the idle flush).
//
// Why no lookup misses a write that returned: apply raises the buckets of
// the batch's keys to its number before the write returns. A lookup that
// starts later either finds the bucket above flushed and reads the
// memtable with an iterator newer than the write; or finds it at or below
// flushed, stored by a FlushEnd after the flush's tables were installed and
// after it bumped the table generation, so the lookup, reading that
// generation afterwards, gets a tables iterator created after the install,
// which holds the write (TestLookupSeesEveryWrite,
// TestTablesOnlyLookupsUnderWrites). A batch whose Apply failed or panicked
// (a fatal write) may be in the memtable without its number: the filter is
// then off for good, and every lookup reads the memtable.
type unflushed struct {
	seed    maphash.Seed
	buckets []atomic.Uint64
	flushed atomic.Uint64
	top     atomic.Uint64 // the largest number applied: nothing is unflushed while it is at or below flushed
	off     atomic.Bool
	// skipped counts lookups answered from the tables alone (tests).
	skipped atomic.Uint64
}

// filterBuckets is the filter's size: 2 MiB, a few per cent of false
// "unflushed" answers with a full 4 MiB memtable of originals (~10,000
// primary keys) waiting.
const filterBuckets = 1 << 18

func newUnflushed() *unflushed {
	return &unflushed{seed: maphash.MakeSeed(), buckets: make([]atomic.Uint64, filterBuckets)}
}

func (u *unflushed) bucket(key []byte) *atomic.Uint64 {
	return &u.buckets[maphash.Bytes(u.seed, key)&(filterBuckets-1)]
}

// applied raises the buckets of b's primary keys to b's largest sequence
// number once b is applied.
func (u *unflushed) applied(b *pebble.Batch) {
	if b.Count() == 0 {
		return
	}
	top := b.SeqNum() + uint64(b.Count()) - 1
	r := b.Reader()
	for {
		_, k, _, ok, err := r.Next()
		if !ok || err != nil {
			break
		}
		if len(k) == 0 || k[0] != tagPrimary {
			continue
		}
		raise(u.bucket(k), top)
	}
	raise(&u.top, top)
}

// raise sets v to n unless it is larger already.
func raise(v *atomic.Uint64, n uint64) {
	for {
		cur := v.Load()
		if cur >= n || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// holds reports whether key may be in a memtable.
func (u *unflushed) holds(key []byte) bool {
	if len(key) == 0 || key[0] != tagPrimary || u.off.Load() {
		return true
	}
	f := u.flushed.Load()
	if u.top.Load() <= f {
		return false // all flushed (a read-mostly index): no probe
	}
	return u.bucket(key).Load() > f
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
	raise(&u.flushed, top)
}

// apply commits b durably, recording its keys in ix.mem. Every write to
// the database goes through it.
func (ix *Index) apply(b *pebble.Batch) error {
	ok := false
	defer func() {
		if !ok {
			ix.mem.off.Store(true) // b may be in the memtable, unrecorded
		}
	}()
	if err := ix.db.Apply(b, pebble.Sync); err != nil {
		return err
	}
	ix.mem.applied(b)
	ok = true
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
