package captureindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/surt"
)

// URLKey returns the urlkey captures of uri are filed under: its SURT form,
// or uri itself when it does not canonicalise — the key cdxj.FromCapture
// writes, so index and CDXJ files agree.
func URLKey(uri string) string {
	k, err := surt.Canonicalize(uri)
	if err != nil {
		return uri
	}
	return k
}

// canonicalDigest returns d in canonical form, or d as written when it does
// not parse.
func canonicalDigest(d string) string {
	if c, err := digest.Normalize(d); err == nil {
		return c
	}
	return d
}

// Indexable reports whether c belongs in the capture index: a response,
// revisit, resource or conversion record with a target URI and a date.
func Indexable(c wayside.Capture) bool {
	return c.IsCapture() && c.URI != "" && !c.Date.IsZero() && c.File != "" && c.Offset >= 0
}

// OnCapture adds one capture (wayside.Subscriber). Captures that are not
// Indexable are ignored.
func (ix *Index) OnCapture(ctx context.Context, c wayside.Capture) error {
	_, err := ix.Add(ctx, c)
	return err
}

// Add files captures into the index in one atomic write and returns how
// many were new. Captures that are not Indexable are skipped; one already
// held (same collection, urlkey, second, file and offset) is left as it is.
// A revisit is stored with the location of its original when the index
// holds it (see Resolve); otherwise it is listed as unresolved and tried
// again by Resync.
//
// Writes are not fsynced one by one but every WithSyncInterval: a process
// crash loses nothing (the write-ahead log is in the kernel's hands), a
// power loss at most the last interval, which the catch-up at start reads
// back from the CDXJ files.
func (ix *Index) Add(ctx context.Context, cs ...wayside.Capture) (int, error) {
	if err := ix.begin(); err != nil {
		return 0, err
	}
	defer ix.end()
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	b := ix.db.NewIndexedBatch()
	defer b.Close()
	pending := map[byte]map[string]uint64{}
	delta := map[uint64]map[byte]int64{}
	added := 0
	// Revisits added earlier may wait for the originals added now.
	waiting := map[string][]byte{}
	anyUnresolved := false
	for _, c := range ix.counters {
		anyUnresolved = anyUnresolved || c[ctrUnresolved] > 0
	}
	for i, c := range cs {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		if !Indexable(c) {
			continue
		}
		key, ok, err := ix.addOne(b, pending, delta, c)
		if err != nil {
			return 0, fmt.Errorf("captureindex: add %s at %s offset %d: %w", c.URI, c.File, c.Offset, err)
		}
		if ok {
			added++
			if anyUnresolved && !c.IsRevisit() {
				// The marker prefix of this scope and urlkey.
				p := unresolvedKey(key[:bytes.IndexByte(key, keySep)+1])
				waiting[string(p)] = p
			}
		}
	}
	if added == 0 {
		return 0, nil
	}
	for scope, d := range delta {
		cur := ix.counter(scope)
		for kind, n := range d {
			b.Set(counterKey(scope, kind), binary.AppendVarint(nil, cur[kind]+n), nil)
		}
	}
	// Publish the new names before the entries that use them become
	// visible; take them back if the write fails.
	ix.publish(pending)
	err := failpoint.Inject("captureindex.add-before-commit")
	if err == nil {
		err = b.Commit(pebble.NoSync)
	}
	if err != nil {
		ix.unpublish(pending)
		return 0, fmt.Errorf("captureindex: add: %w", err)
	}
	if err := failpoint.Inject("captureindex.add-after-commit"); err != nil {
		return 0, fmt.Errorf("captureindex: add: %w", err)
	}
	ix.dirty.Store(true)
	for scope, d := range delta {
		cur := ix.counter(scope)
		for kind, n := range d {
			cur[kind] += n
		}
	}
	if len(waiting) > 0 {
		var ps [][]byte
		for _, p := range waiting {
			ps = append(ps, p)
		}
		if err := ix.resolveMarked(ctx, ps); err != nil {
			return added, err
		}
	}
	return added, nil
}

func (ix *Index) publish(pending map[byte]map[string]uint64) {
	ix.nmu.Lock()
	defer ix.nmu.Unlock()
	for kind, m := range pending {
		for name, id := range m {
			ix.remember(kind, name, id)
		}
	}
}

func (ix *Index) unpublish(pending map[byte]map[string]uint64) {
	ix.nmu.Lock()
	defer ix.nmu.Unlock()
	for kind, m := range pending {
		for name, id := range m {
			delete(ix.ids[kind], name)
			delete(ix.names[kind], id)
		}
	}
}

func (ix *Index) addOne(b *pebble.Batch, pending map[byte]map[string]uint64, delta map[uint64]map[byte]int64, c wayside.Capture) ([]byte, bool, error) {
	scopeName := c.Scope
	if scopeName == "" {
		scopeName = ix.scope
	}
	scope := ix.intern(b, pending, kindScope, scopeName)
	file := ix.intern(b, pending, kindFile, c.File)
	key := captureKey(scope, URLKey(c.URI), c.Date, file, c.Offset)
	if _, closer, err := b.Get(key); err == nil {
		closer.Close()
		return key, false, nil
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return key, false, err
	}
	v := value{typ: typeCode(c.Type), length: c.Length, status: c.Status, uri: c.URI,
		digest: canonicalDigest(c.Digest), payloadLength: c.PayloadLength, nanos: int64(c.Date.Nanosecond()),
		truncated: c.Truncated, profile: c.Profile, metadata: c.Metadata}
	if c.MIME != "" {
		v.mime = ix.intern(b, pending, kindMIME, c.MIME)
	}
	if c.MIMEDetected != "" {
		v.mimeDetected = ix.intern(b, pending, kindMIME, c.MIMEDetected)
	}
	d := delta[scope]
	if d == nil {
		d = map[byte]int64{}
		delta[scope] = d
	}
	d[ctrCaptures]++
	if c.IsRevisit() {
		d[ctrRevisits]++
		if r := c.RevisitOf; r != nil {
			v.refURI, v.refSameURI, v.refDate, v.refID = r.TargetURI, r.TargetURI == c.URI && r.TargetURI != "", r.Date, r.RecordID
		}
		o, err := ix.findOriginal(b, scope, revisitOf(c.URI, c.Date, v))
		if err != nil {
			return key, false, err
		}
		if o != nil {
			v.orig = &origRef{file: o.fileID, offset: o.Offset, length: o.Length}
		} else {
			b.Set(unresolvedKey(key), nil, nil)
			d[ctrUnresolved]++
		}
	}
	return key, true, b.Set(key, v.encode(nil), nil)
}

// revisitQuery is what resolving a revisit needs to know.
type revisitQuery struct {
	uri     string
	date    time.Time
	digest  string
	refURI  string
	refDate time.Time
}

func revisitOf(uri string, date time.Time, v value) revisitQuery {
	return revisitQuery{uri: uri, date: date, digest: v.digest, refURI: v.refURI, refDate: v.refDate}
}

// found is a candidate original.
type found struct {
	fileID uint64
	Location
}

// iterable is what findOriginal reads from: the database or a batch.
type iterable interface {
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// maxResolveScan bounds the captures of one URL examined to find a
// revisit's original.
const maxResolveScan = 10000

// findOriginal looks for the original of a revisit the way replay tools
// do: the capture of WARC-Refers-To-Target-URI at WARC-Refers-To-Date with
// the same payload digest; else the latest capture of that URL (or of the
// revisit's own URL) at or before the revisit with the same digest. The
// revisit's collection is searched first, then the others (a crawl may
// write revisits against a read-only earlier collection).
func (ix *Index) findOriginal(r iterable, scope uint64, q revisitQuery) (*found, error) {
	var others []uint64
	ix.nmu.RLock()
	for _, id := range ix.ids[kindScope] {
		if id != scope {
			others = append(others, id)
		}
	}
	ix.nmu.RUnlock()
	slices.Sort(others)
	scopes := append([]uint64{scope}, others...)
	target := q.refURI
	if target == "" {
		target = q.uri
	}
	for _, s := range scopes {
		if q.refURI != "" && !q.refDate.IsZero() {
			p := urlPrefix(s, URLKey(q.refURI))
			lo := secondsKey(append([]byte(nil), p...), q.refDate)
			hi := secondsKey(append([]byte(nil), p...), q.refDate.Add(time.Second))
			o, err := ix.scanOriginal(r, lo, hi, false, q.digest, false)
			if o != nil || err != nil {
				return o, err
			}
		}
		if q.digest == "" {
			continue // nothing to recognise an original by
		}
		p := urlPrefix(s, URLKey(target))
		hi := secondsKey(append([]byte(nil), p...), q.date.Add(time.Second))
		o, err := ix.scanOriginal(r, p, hi, true, q.digest, true)
		if o != nil || err != nil {
			return o, err
		}
	}
	return nil, nil
}

// scanOriginal returns the first non-revisit entry in [lo, hi) (from the
// end when reverse) whose digest equals dg (any digest when dg is "" and
// !needDigest).
func (ix *Index) scanOriginal(r iterable, lo, hi []byte, reverse bool, dg string, needDigest bool) (*found, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	valid := it.First()
	if reverse {
		valid = it.Last()
	}
	for n := 0; valid && n < maxResolveScan; n++ {
		v, err := decodeValue(it.Value())
		if err != nil {
			return nil, fmt.Errorf("entry %x: %w", clipKey(it.Key()), err)
		}
		if v.typ != typeRevisit && ((dg == "" && !needDigest) || v.digest == dg) {
			k, err := parseCaptureKey(it.Key())
			if err != nil {
				return nil, err
			}
			name, _ := ix.name(kindFile, k.file)
			return &found{fileID: k.file, Location: Location{File: name, Offset: k.offset, Length: v.length, URI: v.uri,
				Date: time.Unix(k.seconds, v.nanos).UTC()}}, nil
		}
		if reverse {
			valid = it.Prev()
		} else {
			valid = it.Next()
		}
	}
	return nil, it.Error()
}
