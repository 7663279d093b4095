package pebble

import (
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
)

// Point lookups reuse Pebble iterators. Creating one per lookup (the merging
// iterator, then a table iterator per level, each closed again) cost about
// half of a cached lookup's CPU in the daemon. But an iterator reads the
// database as it was when it was created: it is reused only while nothing
// was written since, which the write generation tells.
//
// gen counts writes: every write to the database bumps it after the write
// returns (changed). An iterator is tagged with the generation read before
// it was created, so it sees at least every write that had bumped the
// generation by then; it is used again only while the generation is still
// the same. A lookup that starts after a write returned reads a newer
// generation and gets a new iterator: it sees the write (no stale answer;
// TestLookupSeesEveryWrite). A write that lands between reading the tag and
// creating the iterator only makes the iterator look older than it is.
//
// Flushes and compactions do not change what an iterator answers, but an
// iterator pins the tables and memtables it reads: they bump the generation
// too, so a kept iterator holds obsolete files only until the next lookup.
//
// Iterators over the tables alone (unflushed.go) have a generation of their
// own, tableGen, which only flushes and compactions bump: a write changes
// the memtable, not what they read, so under continuous writes they are
// reused.

// maxIdleIters bounds the iterators of each kind kept between lookups.
const maxIdleIters = 8

// lookupIter is a reusable point-lookup iterator and the generation it
// reads.
type lookupIter struct {
	it     *pebble.Iterator
	gen    uint64
	tables bool   // reads the tables only (OnlyReadGuaranteedDurable)
	key    []byte // the key sought, built here by get
}

// iterPool holds idle lookup iterators.
type iterPool struct {
	gen      atomic.Uint64
	tableGen atomic.Uint64 // flushes and compactions only
	writes   atomic.Uint64 // writes only (flushIdle)
	mu       sync.Mutex
	idle     [2][]*lookupIter // [0]: memtables and tables; [1]: tables only
	closed   bool
}

// changed records a write: iterators over the memtables created before it
// are not used again.
func (p *iterPool) changed() { p.gen.Add(1); p.writes.Add(1) }

// reorganised records a flush or compaction: iterators created before it
// answer the same (unless they read the tables only, and it was a flush)
// but pin obsolete tables and memtables.
func (p *iterPool) reorganised() { p.gen.Add(1); p.tableGen.Add(1) }

func (p *iterPool) genOf(tables bool) uint64 {
	if tables {
		return p.tableGen.Load()
	}
	return p.gen.Load()
}

// lookupIterOpts: point lookups use the bottom level's Bloom filters too
// (Pebble skips them by default, tuned for lookups that hit): most dedup
// lookups are for new payloads, which the filters answer without reading a
// data block.
var (
	lookupIterOpts = pebble.IterOptions{UseL6Filters: true}
	tablesIterOpts = pebble.IterOptions{UseL6Filters: true, OnlyReadGuaranteedDurable: true}
)

// getIter returns an iterator that sees every write that returned before
// the call, of the tables only when tables is set (the caller has checked
// with ix.mem.holds before the call that the key it seeks is not in a
// memtable). The caller holds ix.begin and gives it back with putIter.
func (ix *Index) getIter(tables bool) (*lookupIter, error) {
	p := ix.iters
	g := p.genOf(tables)
	k := 0
	if tables {
		k = 1
	}
	var li *lookupIter
	p.mu.Lock()
	if n := len(p.idle[k]); n > 0 {
		li = p.idle[k][n-1]
		p.idle[k][n-1] = nil
		p.idle[k] = p.idle[k][:n-1]
	}
	p.mu.Unlock()
	var key []byte
	if li != nil {
		if li.gen == g {
			return li, nil
		}
		li.it.Close() // its error was checked before it was kept
		key = li.key
	}
	opts := &lookupIterOpts
	if tables {
		opts = &tablesIterOpts
	}
	it, err := ix.db.NewIter(opts)
	if err != nil {
		return nil, err
	}
	return &lookupIter{it: it, gen: g, tables: tables, key: key}, nil
}

// putIter keeps li for a later lookup, or closes it when it is outdated,
// failed or there are enough idle ones. It returns the iterator's error.
func (ix *Index) putIter(li *lookupIter) error {
	if err := li.it.Error(); err != nil {
		li.it.Close()
		return err
	}
	p := ix.iters
	if li.gen == p.genOf(li.tables) {
		k := 0
		if li.tables {
			k = 1
		}
		p.mu.Lock()
		if !p.closed && len(p.idle[k]) < maxIdleIters {
			p.idle[k] = append(p.idle[k], li)
			li = nil
		}
		p.mu.Unlock()
	}
	if li != nil {
		return li.it.Close()
	}
	return nil
}

// closeIters closes the idle iterators; later ones are closed when given
// back. Close calls it with no operation in flight.
func (p *iterPool) closeIters() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = [2][]*lookupIter{}, true
	p.mu.Unlock()
	for _, l := range idle {
		for _, li := range l {
			li.it.Close()
		}
	}
}
