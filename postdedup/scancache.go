package postdedup

import (
	"bytes"
	"strings"
	"sync"

	"github.com/wayside-archive/wayside/warcio"
)

// scanCache holds recently read payloads by cluster key (bounded; FIFO
// with a second chance for a payload a copy was compared with since it
// was queued: CLOCK, so payloads with many copies stay), shared by the
// scanning goroutines: a later copy is compared with the cached payload
// as it is read, so Resolve need not read either again.
//
// A payload pushed out of the budget leaves where its record is (input,
// offset, record ID: locCost bytes of the budget) instead of nothing: a
// later copy of it reads the original's payload back from the input
// (one inflation of the original, no digest: the bytes are compared with
// the copy's, whose digest the scan checks) and is still compared during
// the scan. Resolve would read both records again and hash them, so a
// small cache costs little CPU and memory stays flat as inputs grow.
type scanCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	byKey map[string]*cached
	fifo  []string  // keys of cached payloads, oldest first
	locs  []string  // keys of location-only entries, oldest first
	files openFiles // inputs opened to read originals back
	loads int       // payloads read back (guarded by mu)
}

// cached is the first record of a cluster the scan read: its payload
// while it is within the budget, else only where it is. A cached value
// is never changed once in the map (comparisons read it without the
// lock); pushing its payload out replaces it with a location-only one.
type cached struct {
	id      string
	payload []byte // nil: pushed out, read back from the input
	path    string
	offset  int64
	length  int64
	record  string // WARC-Record-ID
	plen    int64  // payload length
	hit     bool   // a copy was compared with it since it was (re)queued; guarded by mu
}

// locCost is what a location-only entry is counted as in the budget
// (the struct, the record ID and the map's key and slot).
const locCost = 256

func (p *cached) cost() int64 { return locCost + int64(len(p.payload)) }

// locShare: locations may take up to 1/locShare of the budget. A
// location is worth far more than its bytes of payload: a copy that
// finds its original's location is compared during the scan by
// inflating the original once, while a copy that finds nothing is left
// to Resolve, which reads both records again and hashes them. With an
// eighth (12,800 locations at the default --mem-mb), the 28,009 distinct
// payloads of warcgen's 4x WARC (1.6 GB) pushed locations out, and
// Resolve's re-reads took 7% of dedup run's CPU there (none at 1x); at
// half, a budget of B bytes keeps B/512 locations.
const locShare = 2

func newScanCache(max int64) *scanCache {
	if max <= 0 {
		return nil
	}
	return &scanCache{max: max, byKey: map[string]*cached{}}
}

// close closes the inputs opened to read originals back.
func (c *scanCache) close() {
	if c != nil {
		c.files.close()
	}
}

// keepMax is the largest payload the cache holds.
func (c *scanCache) keepMax() int64 { return min(memLimit, c.max/4) }

func (c *scanCache) get(key string) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.byKey[key]
	if p != nil {
		p.hit = true
	}
	return p
}

// insert adds p under key, making room first; the caller holds mu.
func (c *scanCache) insert(key string, p *cached) {
	c.makeRoom(p.cost())
	c.byKey[key] = p
	c.fifo = append(c.fifo, key)
	c.size += p.cost()
}

// makeRoom pushes payloads out, then locations, until n more bytes fit;
// the caller holds mu. Locations have a queue of their own and at most
// half the budget (locShare), so that payloads streaming through do not
// flush them.
func (c *scanCache) makeRoom(n int64) {
	for c.size+n > c.max {
		switch {
		case len(c.locs) > 0 && (int64(len(c.locs))*locCost > c.max/locShare || len(c.fifo) == 0):
			k := c.locs[0]
			c.locs = c.locs[1:]
			switch q, ok := c.byKey[k]; {
			case !ok || q.payload != nil: // gone, or read back and queued again
			case q.hit:
				q.hit = false
				c.locs = append(c.locs, k)
			default:
				c.size -= q.cost()
				delete(c.byKey, k)
			}
		case len(c.fifo) > 0:
			k := c.fifo[0]
			c.fifo = c.fifo[1:]
			switch q, ok := c.byKey[k]; {
			case !ok || q.payload == nil: // gone, or pushed out already
			case q.hit: // second chance: a payload with copies is likely to have more
				q.hit = false
				c.fifo = append(c.fifo, k)
			default: // keep where it is
				loc := *q
				loc.payload, loc.hit = nil, false
				c.byKey[k] = &loc
				c.size -= int64(len(q.payload))
				c.locs = append(c.locs, k)
			}
		default:
			return
		}
	}
}

// load reads back the payload of the location-only entry p (of key) from
// its input with rd, and caches it again (a payload with one copy often
// has more). It returns nil when the record there is not the one p names
// or cannot be read: the copy is then compared by Resolve.
func (c *scanCache) load(key string, p *cached, rd **warcio.Reader) *cached {
	if p.plen <= 0 || p.plen > c.keepMax() {
		return nil
	}
	f, err := c.files.get(p.path)
	if err != nil {
		return nil
	}
	if rd == nil {
		rd = new(*warcio.Reader)
	}
	if *rd == nil {
		*rd = new(warcio.Reader)
	}
	buf := bytes.NewBuffer(make([]byte, 0, p.plen))
	rec, err := (*rd).ReadRecordAt(f, p.path, p.offset, p.length, warcio.Options{Payload: buf, SkipPayloadDigest: true})
	if err != nil || rec.RecordID != p.record || rec.PayloadLength != p.plen || int64(buf.Len()) != p.plen {
		return nil
	}
	full := cached{id: p.id, payload: buf.Bytes(), path: p.path, offset: p.offset, length: p.length, record: p.record, plen: p.plen}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads++
	if c.byKey[key] != p { // replaced meanwhile
		return &full
	}
	c.makeRoom(int64(len(full.payload)))
	switch c.byKey[key] {
	case p: // its location slot is skipped from now on
		c.byKey[key] = &full
		c.size += int64(len(full.payload))
		c.fifo = append(c.fifo, key)
	case nil: // dropped while making room
		c.insert(key, &full)
	}
	return &full
}

// sameAs makes e SameAs the record ref holds, keeping what its revisit
// needs (the HTTP head and WARC header fields).
func sameAs(e *Entry, rec *warcio.Record, ref *cached) {
	e.SameAs = ref.id
	e.Head = rec.HTTP.Head
	e.Headers = make([][2]string, 0, len(rec.Headers))
	for _, f := range rec.Headers {
		e.Headers = append(e.Headers, [2]string{f.Name, f.Value})
	}
}

// compare compares e's payload with the cached one of its cluster (read
// back from its input when only its location is left, with rd): equal
// bytes make e SameAs the cached record; a miss caches the payload
// (owned: the cache may keep the slice as it is, else it keeps a copy).
func (c *scanCache) compare(e *Entry, rec *warcio.Record, payload []byte, owned bool, rd **warcio.Reader) {
	if int64(len(payload)) != e.PayloadLength || e.PayloadLength == 0 || rec.HTTP == nil {
		return
	}
	if p := c.get(e.Key); p != nil {
		if p.payload == nil {
			if p = c.load(e.Key, p, rd); p == nil {
				return
			}
		}
		if bytes.Equal(p.payload, payload) {
			sameAs(e, rec, p)
		}
		return
	}
	if int64(len(payload)) > c.keepMax() {
		return
	}
	if !owned {
		payload = bytes.Clone(payload)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[e.Key]; ok { // another scanning goroutine cached one meanwhile
		return
	}
	// The key and record ID are cloned: as read they are parts of the
	// record's whole WARC header (~1 KB), which a location-only entry
	// would keep alive long after its payload went.
	c.insert(strings.Clone(e.Key), &cached{id: entryID(e.Path, e.Offset), payload: payload, path: e.Path, offset: e.Offset,
		length: e.Length, record: strings.Clone(e.RecordID), plen: e.PayloadLength})
}

// tap returns the payload writer of one scanning goroutine.
func (c *scanCache) tap(headerKeys bool) *payloadTap {
	return &payloadTap{cache: c, headerKeys: headerKeys}
}

// payloadTap receives the payload of each record the scan reads
// (warcio.Options.Payload, with head as Options.OnHead). When cluster
// keys are the declared digests, a response's key is known from its
// header before the first payload byte: a cached payload of that key is
// compared with the bytes as they stream by, with no copy; on a miss the
// bytes are kept once, in a buffer the cache then takes over. When keys
// are computed from the bytes, the payload is kept in a reused buffer and
// compared (or copied into the cache) once the key is known.
type payloadTap struct {
	cache      *scanCache
	headerKeys bool

	rd     *warcio.Reader // reads originals back (scanCache.load)
	key    string         // the key looked up at the head ("" when unknown)
	ref    *cached        // the cached payload being compared with (hit)
	keep   bool           // keeping the bytes in buf
	owned  bool           // buf is a new buffer for the cache
	buf    []byte
	spare  []byte // reused buf for computed keys
	n      int64  // payload bytes seen
	differ bool   // the bytes differ from ref
	over   bool   // more than keepMax bytes
}

// reset readies the tap for the next record: nothing is compared or kept
// unless head says so.
func (t *payloadTap) reset() {
	if !t.owned && t.buf != nil {
		t.spare = t.buf[:0]
	}
	*t = payloadTap{cache: t.cache, headerKeys: t.headerKeys, spare: t.spare, rd: t.rd}
}

// head decides, from a record's headers, what to do with its payload.
func (t *payloadTap) head(rec *warcio.Record) {
	if rec.Type != "response" || rec.HTTP == nil {
		return
	}
	t.keep = true
	if !t.headerKeys {
		t.buf = t.spare[:0]
		return
	}
	// Header keys: the declared digest, canonical (warcio normalised it).
	if t.key = rec.DeclaredPayloadDigest; t.key == "" {
		t.keep = false
		return
	}
	if t.ref = t.cache.get(t.key); t.ref != nil {
		if t.ref.payload == nil { // pushed out: read the original back
			t.ref = t.cache.load(t.key, t.ref, &t.rd)
		}
		t.keep = false
		return
	}
	t.owned = true
	t.buf = make([]byte, 0, min(rec.ContentLength, t.cache.keepMax()))
}

func (t *payloadTap) Write(p []byte) (int, error) {
	switch {
	case t.ref != nil:
		if r := t.ref.payload; !t.differ && (t.n+int64(len(p)) > int64(len(r)) || !bytes.Equal(r[t.n:t.n+int64(len(p))], p)) {
			t.differ = true
		}
	case t.keep && !t.over:
		if int64(len(t.buf)+len(p)) > t.cache.keepMax() {
			t.over, t.buf = true, nil
		} else {
			t.buf = append(t.buf, p...)
		}
	}
	t.n += int64(len(p))
	return len(p), nil
}

// finish acts on the record read, once its entry (and key) is known.
func (t *payloadTap) finish(e *Entry, rec *warcio.Record) {
	if !e.CanBeOriginal() || rec.HTTP == nil || e.PayloadLength == 0 || t.n != e.PayloadLength {
		return
	}
	switch {
	case t.ref != nil:
		if t.key == e.Key && !t.differ && t.n == int64(len(t.ref.payload)) {
			sameAs(e, rec, t.ref)
		}
	case t.keep && !t.over && (t.key == "" || t.key == e.Key):
		t.cache.compare(e, rec, t.buf, t.owned, &t.rd)
	}
}
