package postdedup

import (
	"bytes"
	"sync"

	"github.com/wayside-archive/wayside/warcio"
)

// scanCache holds recently read payloads by cluster key (bounded; FIFO
// with a second chance for a payload a copy was compared with since it
// was queued: CLOCK, so payloads with many copies stay),
// shared by the scanning goroutines: a later copy is compared with the
// cached payload as it is read, so Resolve need not read either again.
type scanCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	byKey map[string]*cached
	fifo  []string
}

// cached is the payload of the first record of a cluster the scan read
// (never changed once cached: comparisons read it without the lock).
type cached struct {
	id      string
	payload []byte
	hit     bool // a copy was compared with it since it was (re)queued; guarded by mu
}

func newScanCache(max int64) *scanCache {
	if max <= 0 {
		return nil
	}
	return &scanCache{max: max, byKey: map[string]*cached{}}
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

// compare compares e's payload with the cached one of its cluster: equal
// bytes make e SameAs the cached record; a miss caches the payload (owned:
// the cache may keep the slice as it is, else it keeps a copy).
func (c *scanCache) compare(e *Entry, rec *warcio.Record, payload []byte, owned bool) {
	if int64(len(payload)) != e.PayloadLength || e.PayloadLength == 0 || rec.HTTP == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.byKey[e.Key]; ok {
		p.hit = true
		if bytes.Equal(p.payload, payload) {
			sameAs(e, rec, p)
		}
		return
	}
	if int64(len(payload)) > c.keepMax() {
		return
	}
	for c.size+int64(len(payload)) > c.max && len(c.fifo) > 0 {
		old := c.fifo[0]
		c.fifo = c.fifo[1:]
		if p, ok := c.byKey[old]; ok {
			if p.hit { // second chance: a payload with copies is likely to have more
				p.hit = false
				c.fifo = append(c.fifo, old)
				continue
			}
			c.size -= int64(len(p.payload))
			delete(c.byKey, old)
		}
	}
	if !owned {
		payload = bytes.Clone(payload)
	}
	c.byKey[e.Key] = &cached{id: entryID(e.Path, e.Offset), payload: payload}
	c.fifo = append(c.fifo, e.Key)
	c.size += int64(len(payload))
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

	key    string  // the key looked up at the head ("" when unknown)
	ref    *cached // the cached payload being compared with (hit)
	keep   bool    // keeping the bytes in buf
	owned  bool    // buf is a new buffer for the cache
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
	*t = payloadTap{cache: t.cache, headerKeys: t.headerKeys, spare: t.spare}
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
		t.cache.compare(e, rec, t.buf, t.owned)
	}
}
