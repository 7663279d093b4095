package captureindex

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/wayside-archive/wayside"
)

// Entry is one capture held by the index.
type Entry struct {
	wayside.Capture
	// Key is the urlkey (SURT) the capture is filed under.
	Key string
	// Original locates the payload of a revisit: its original record, when
	// the index holds it (nil otherwise, and for other records).
	Original *Location
}

// Timestamp returns the capture's 14-digit timestamp.
func (e *Entry) Timestamp() string { return e.Date.UTC().Format("20060102150405") }

// Location is where a record is stored.
type Location struct {
	File           string
	Offset, Length int64
	// URI and Date are the record's target URI and date.
	URI  string
	Date time.Time
}

// ErrStop, returned by a Scan callback, ends the scan without error.
var ErrStop = errors.New("captureindex: stop")

// Query selects captures of one collection.
type Query struct {
	// Scope is the collection ("" = the index's default).
	Scope string
	// Key is the urlkey to match. With End == "", only captures of exactly
	// Key; otherwise every urlkey k with Key <= k < End (a prefix, host or
	// domain range, as pywb computes them).
	Key, End string
	// From and To bound the capture time, inclusive, at second precision
	// (zero: unbounded).
	From, To time.Time
	// Reverse returns the captures in descending order.
	Reverse bool
}

// ErrNoScope is returned for a collection the index holds nothing of.
var ErrNoScope = errors.New("captureindex: no such collection")

func (ix *Index) scopeID(name string) (uint64, error) {
	if name == "" {
		name = ix.scope
	}
	id, ok := ix.lookupID(kindScope, name)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrNoScope, name)
	}
	return id, nil
}

// empty reports whether err only says that the default collection holds
// nothing yet: queries of it answer nothing rather than fail.
func (ix *Index) empty(scope string, err error) bool {
	return errors.Is(err, ErrNoScope) && (scope == "" || scope == ix.scope)
}

// exactRange returns the key prefix of the captures of urlkey in scope and
// the bounds selecting those from..to (zero: unbounded); ok is false when
// the default collection holds nothing yet.
func (ix *Index) exactRange(scope, urlkey string, from, to time.Time) (p, lo, hi []byte, ok bool, err error) {
	sid, err := ix.scopeID(scope)
	if ix.empty(scope, err) {
		return nil, nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, nil, false, err
	}
	p = urlPrefix(sid, urlkey)
	lo, hi = p, upperBound(p)
	if !from.IsZero() {
		lo = secondsKey(append([]byte(nil), p...), from)
	}
	if !to.IsZero() {
		hi = secondsKey(append([]byte(nil), p...), to.Add(time.Second))
	}
	return p, lo, hi, true, nil
}

// HasScope reports whether the index holds captures of a collection.
func (ix *Index) HasScope(name string) bool {
	_, ok := ix.lookupID(kindScope, name)
	return ok
}

// Scan calls fn for each capture q selects, in urlkey then time order (or
// the reverse), streaming from the store: memory does not grow with the
// number of captures. fn may return ErrStop to end the scan. A collection
// the index holds nothing of is ErrNoScope, except the default collection,
// which is merely empty.
func (ix *Index) Scan(ctx context.Context, q Query, fn func(*Entry) error) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	var lo, hi []byte
	filterTime := false
	if q.End == "" {
		_, l, h, ok, err := ix.exactRange(q.Scope, q.Key, q.From, q.To)
		if !ok {
			return err
		}
		lo, hi = l, h
	} else {
		scope, err := ix.scopeID(q.Scope)
		if ix.empty(q.Scope, err) {
			return nil
		}
		if err != nil {
			return err
		}
		lo, hi = rangeKey(scope, q.Key), rangeKey(scope, q.End)
		filterTime = !q.From.IsZero() || !q.To.IsZero()
	}
	it, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("captureindex: scan: %w", err)
	}
	defer it.Close()
	from, to := q.From.Unix(), q.To.Unix()
	var valid bool
	if q.Reverse {
		valid = it.Last()
	} else {
		valid = it.First()
	}
	for n := 0; valid; n++ {
		if n%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e, err := ix.entry(it.Key(), it.Value())
		if err != nil {
			return fmt.Errorf("captureindex: scan: %w", err)
		}
		keep := true
		if filterTime {
			s := e.Date.Unix()
			keep = (q.From.IsZero() || s >= from) && (q.To.IsZero() || s <= to)
		}
		if keep {
			if err := fn(e); err != nil {
				if errors.Is(err, ErrStop) {
					return nil
				}
				return err
			}
		}
		if q.Reverse {
			valid = it.Prev()
		} else {
			valid = it.Next()
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("captureindex: scan: %w", err)
	}
	return nil
}

// Times calls fn with the capture time (second precision) of each capture
// of exactly urlkey between from and to (inclusive; zero: unbounded), in
// time order, reading keys only: the cheap pass a paged TimeMap makes to
// find its bounds.
func (ix *Index) Times(ctx context.Context, scope, urlkey string, from, to time.Time, fn func(time.Time) error) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	p, lo, hi, ok, err := ix.exactRange(scope, urlkey, from, to)
	if !ok {
		return err
	}
	it, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("captureindex: times: %w", err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		if len(k) < len(p)+8 {
			return fmt.Errorf("captureindex: times: short key %x", clipKey(k))
		}
		if err := fn(time.Unix(decodeSeconds(k[len(p):]), 0).UTC()); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("captureindex: times: %w", err)
	}
	return nil
}

// Closest calls fn for the captures of exactly urlkey in order of distance
// from t (ties: the earlier first), as pywb's sort=closest orders them,
// reading only as far as fn asks (return ErrStop to end).
func (ix *Index) Closest(ctx context.Context, scope, urlkey string, t time.Time, fn func(*Entry) error) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	p, _, _, ok, err := ix.exactRange(scope, urlkey, time.Time{}, time.Time{})
	if !ok {
		return err
	}
	mid := secondsKey(append([]byte(nil), p...), t)
	fwd, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: mid, UpperBound: upperBound(p)})
	if err != nil {
		return fmt.Errorf("captureindex: closest: %w", err)
	}
	defer fwd.Close()
	back, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: p, UpperBound: mid})
	if err != nil {
		return fmt.Errorf("captureindex: closest: %w", err)
	}
	defer back.Close()
	fv, bv := fwd.First(), back.Last()
	var fe, be *Entry
	load := func(it *pebble.Iterator, valid bool) (*Entry, error) {
		if !valid {
			return nil, it.Error()
		}
		return ix.entry(it.Key(), it.Value())
	}
	if fe, err = load(fwd, fv); err != nil {
		return fmt.Errorf("captureindex: closest: %w", err)
	}
	if be, err = load(back, bv); err != nil {
		return fmt.Errorf("captureindex: closest: %w", err)
	}
	ts := t.Unix()
	for n := 0; fe != nil || be != nil; n++ {
		if n%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		takeBack := fe == nil || (be != nil && ts-be.Date.Unix() <= fe.Date.Unix()-ts)
		var e *Entry
		if takeBack {
			e = be
			if be, err = load(back, back.Prev()); err != nil {
				return fmt.Errorf("captureindex: closest: %w", err)
			}
		} else {
			e = fe
			if fe, err = load(fwd, fwd.Next()); err != nil {
				return fmt.Errorf("captureindex: closest: %w", err)
			}
		}
		if err := fn(e); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

// entry decodes a primary entry.
func (ix *Index) entry(k, v []byte) (*Entry, error) {
	pk, err := parseCaptureKey(k)
	if err != nil {
		return nil, err
	}
	val, err := decodeValue(v)
	if err != nil {
		return nil, fmt.Errorf("entry %x: %w", clipKey(k), err)
	}
	file, ok := ix.name(kindFile, pk.file)
	if !ok {
		return nil, fmt.Errorf("entry %x: unknown file id %d", clipKey(k), pk.file)
	}
	scope, _ := ix.name(kindScope, pk.scope)
	e := &Entry{Key: pk.urlkey, Capture: wayside.Capture{
		URI: val.uri, Date: time.Unix(pk.seconds, val.nanos).UTC(), Type: typeNames[val.typ],
		Digest: val.digest, Status: val.status, File: file, Offset: pk.offset, Length: val.length,
		PayloadLength: val.payloadLength, Truncated: val.truncated, Scope: scope, Profile: val.profile, Metadata: val.metadata,
	}}
	if val.mime > 0 {
		e.MIME, _ = ix.name(kindMIME, val.mime)
	}
	if val.mimeDetected > 0 {
		e.MIMEDetected, _ = ix.name(kindMIME, val.mimeDetected)
	}
	if val.typ == typeRevisit {
		e.RevisitOf = &wayside.Ref{RecordID: val.refID, TargetURI: val.refURI, Date: val.refDate}
		if val.orig != nil {
			name, ok := ix.name(kindFile, val.orig.file)
			if !ok {
				return nil, fmt.Errorf("entry %x: unknown original file id %d", clipKey(k), val.orig.file)
			}
			e.Original = &Location{File: name, Offset: val.orig.offset, Length: val.orig.length}
		}
	}
	return e, nil
}

// Resolve returns the location of a revisit's original: the one found when
// it was added, or (for a revisit added before its original) a new search
// by the rules of Add. It returns nil when the index does not hold it.
func (ix *Index) Resolve(ctx context.Context, e *Entry) (*Location, error) {
	if !e.IsRevisit() {
		return nil, nil
	}
	if e.Original != nil {
		return e.Original, nil
	}
	if err := ix.begin(); err != nil {
		return nil, err
	}
	defer ix.end()
	scope, err := ix.scopeID(e.Scope)
	if err != nil {
		return nil, err
	}
	q := revisitQuery{uri: e.URI, date: e.Date, digest: canonicalDigest(e.Digest)}
	if e.RevisitOf != nil {
		q.refURI, q.refDate = e.RevisitOf.TargetURI, e.RevisitOf.Date
	}
	o, err := ix.findOriginal(ix.db, scope, q)
	if err != nil || o == nil {
		return nil, err
	}
	return &o.Location, nil
}
