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

// maxIdleIters bounds the iterators kept between lookups.
const maxIdleIters = 8

// lookupIter is a reusable point-lookup iterator and the write generation
// it reads.
type lookupIter struct {
	it  *pebble.Iterator
	gen uint64
	key []byte // the key sought, built here by get
}

// iterPool holds idle lookup iterators.
type iterPool struct {
	gen    atomic.Uint64
	writes atomic.Uint64 // writes only (flushIdle)
	mu     sync.Mutex
	idle   []*lookupIter
	closed bool
}

// changed records a write: iterators created before it are not used
// again.
func (p *iterPool) changed() { p.gen.Add(1); p.writes.Add(1) }

// reorganised records a flush or compaction: iterators created before it
// answer the same but pin obsolete tables and memtables.
func (p *iterPool) reorganised() { p.gen.Add(1) }

// lookupIterOpts: point lookups use the bottom level's Bloom filters too
// (Pebble skips them by default, tuned for lookups that hit): most dedup
// lookups are for new payloads, which the filters answer without reading a
// data block.
var lookupIterOpts = pebble.IterOptions{UseL6Filters: true}

// getIter returns an iterator that sees every write that returned before
// the call. The caller holds ix.begin and gives it back with putIter.
func (ix *Index) getIter() (*lookupIter, error) {
	p := ix.iters
	g := p.gen.Load()
	var li *lookupIter
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		li = p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
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
	it, err := ix.db.NewIter(&lookupIterOpts)
	if err != nil {
		return nil, err
	}
	return &lookupIter{it: it, gen: g, key: key}, nil
}

// putIter keeps li for a later lookup, or closes it when it is outdated,
// failed or there are enough idle ones. It returns the iterator's error.
func (ix *Index) putIter(li *lookupIter) error {
	if err := li.it.Error(); err != nil {
		li.it.Close()
		return err
	}
	p := ix.iters
	if li.gen == p.gen.Load() {
		p.mu.Lock()
		if !p.closed && len(p.idle) < maxIdleIters {
			p.idle = append(p.idle, li)
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
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, li := range idle {
		li.it.Close()
	}
}
