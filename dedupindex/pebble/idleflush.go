package pebble

import (
	"time"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// defaultIdleFlush is how long the index waits without writes before it
// flushes its memtable (WithIdleFlushForTest changes it).
const defaultIdleFlush = time.Second

// idleFlushReserve is the free space below which flushIdle does not flush.
const idleFlushReserve = 64 << 20

// defaultIdleFlushMin is how much unflushed data (the live write-ahead
// log) makes a pause worth a flush: a slow crawl that commits one record
// every few seconds must not write one tiny table per record, and a small
// memtable costs a lookup little.
const defaultIdleFlushMin = 1 << 20

// Writes land in Pebble's memtable, a skiplist that every lookup searches
// before the tables: one cache miss per level of a 4 MiB structure, which
// in the daemon under load cost about half of a lookup (3 µs of 6.5, more
// than every table together, whose Bloom filters answer most lookups from
// one cache line). When writes pause — a crawl ends, an import or seeding
// is done, the index is read-only for a while — flushIdle flushes the
// memtable into a table, once per pause: at most one small table per
// pause of idleFlush, and only when at least idleFlushMin bytes are
// unflushed, written in the background as a full memtable would be. Durability does not change (writes are already synced to the log);
// a flush changes no answer (TestLookupSeesEveryWrite).
func (ix *Index) flushIdle(every time.Duration, min uint64) {
	defer close(ix.idleDone)
	t := time.NewTicker(every)
	defer t.Stop()
	last, flushed := ix.iters.writes.Load(), ix.iters.writes.Load()
	for {
		select {
		case <-ix.idleStop:
			return
		case <-t.C:
		}
		w := ix.iters.writes.Load()
		if w != last || w == flushed {
			last = w
			continue
		}
		// No write for a whole period since the last flush: flush, unless
		// the disk is nearly full. A flush starts a new write-ahead log
		// file, and Pebble panics when it cannot create one: a full
		// memtable does that too (a write that fails on a full disk), but
		// an idle daemon on a full disk must keep answering lookups.
		if fsutil.CheckFree(ix.dir, idleFlushReserve, 0) != nil {
			last = w
			continue
		}
		// Too little unflushed to be worth a table: wait for more writes
		// (a later pause looks again).
		if ix.db.Metrics().WAL.Size < min {
			last = w
			continue
		}
		if ix.begin() != nil {
			return
		}
		err := ix.write(func() error { _, err := ix.db.AsyncFlush(); return err })
		ix.end()
		if err != nil {
			ix.log.Warn("dedupindex/pebble: flush after writes paused", "err", err)
			return
		}
		flushed = ix.iters.writes.Load() // write counted itself
		last = flushed
	}
}
