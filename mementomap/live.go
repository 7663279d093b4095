package mementomap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/iox"
	"github.com/wayside-archive/wayside/mementomap/ukvs"
	"github.com/wayside-archive/wayside/surt"
)

// LiveOptions tunes a live map.
type LiveOptions struct {
	// Compact, when set, compacts the map file on every merge with these
	// options; nil keeps one line per captured key.
	Compact *CompactOptions
	// Interval is Run's merge period (default 1 minute).
	Interval time.Duration
	// MaxPending makes Run merge early once this many keys are pending in
	// memory (default 100000).
	MaxPending int
	// Name is the archive's name, written in a new map's !meta.
	Name string
	// Logger receives Run's reports (default: discard).
	Logger *slog.Logger
	// CDXJDirs are the directories of the CDXJ files written beside the
	// WARC files the captures come from (the crawl's WARC directory, the
	// sidecar's ingest.cdxj_dir). With them the map keeps, beside its
	// file, which records of each WARC file the file covers, and catches
	// up from the CDXJ lines after those (Resync): after a crash, and when
	// a wayside.Fanout dropped captures for it. See catchup.go.
	CDXJDirs []string
}

// Live is a MementoMap kept current from capture events: recent captures
// are held in memory (go-memdb) and merged into the map file by Compact
// (atomically replaced); lookups answer from both, so a captured URI is
// never answered negatively. It implements wayside.Subscriber.
//
// A crash loses only the captures not yet merged; rebuild them by feeding
// the CDXJ index written since (FeedCDXJ): replayed counts are marked as
// upper bounds since some may already be in the file.
type Live struct {
	path string
	opts LiveOptions
	db   *memdb.MemDB

	mu     sync.RWMutex // guards m (swapped by Compact)
	m      *Map
	closed bool

	compactMu sync.Mutex
	pending   atomic.Int64
	kick      chan struct{}

	// marks are the positions the map file covers (catch-up only);
	// uncertain is set when the map file may cover more (a merge was cut
	// short), so what is fed after the marks counts as an upper bound.
	marks     marks
	uncertain bool
}

type liveKey struct {
	Key      string
	M, R     int64
	Replayed bool
}

type liveURI struct {
	URI string
}

func liveSchema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		"keys": {Name: "keys", Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
		}},
		"uris": {Name: "uris", Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "URI"}},
		}},
		"files": {Name: "files", Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "File"}},
		}},
	}}
}

// OpenLive opens (or starts) the live map at path. Temporary files a crash
// left beside it are removed; the file itself is only ever replaced
// atomically, so it is the last completed merge.
func OpenLive(path string, opts LiveOptions) (*Live, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Minute
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 100000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	db, err := memdb.NewMemDB(liveSchema())
	if err != nil {
		return nil, fmt.Errorf("mementomap: live: %w", err)
	}
	if err := RemoveStaleTemps(path); err != nil {
		return nil, fmt.Errorf("mementomap: live: %w", err)
	}
	l := &Live{path: path, opts: opts, db: db, kick: make(chan struct{}, 1)}
	if _, err := os.Stat(path); err == nil {
		if l.m, err = OpenMap(path); err != nil {
			return nil, fmt.Errorf("mementomap: live: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("mementomap: live: %w", err)
	}
	if len(opts.CDXJDirs) > 0 {
		if err := l.loadMarks(); err != nil {
			if l.m != nil {
				l.m.Close()
			}
			return nil, err
		}
	}
	return l, nil
}

// OnCapture records a durable capture (response, revisit or resource
// record of an http(s) URI); other records are ignored. It implements
// wayside.Subscriber. With LiveOptions.CDXJDirs, a capture at or before the
// last position counted for its WARC file (see catchup.go) is not counted
// again.
func (l *Live) OnCapture(ctx context.Context, c wayside.Capture) error {
	txn := l.db.Txn(true)
	defer txn.Abort()
	if len(l.opts.CDXJDirs) > 0 && c.File != "" {
		counted, err := l.advance(txn, c.File, c.Offset)
		if err != nil || counted {
			return err
		}
	}
	if c.IsCapture() {
		if err := l.add(txn, c.URI, false); err != nil {
			return fmt.Errorf("mementomap: live: %s: %w", c.URI, err)
		}
	}
	txn.Commit()
	l.noteInsert()
	return nil
}

// Add records one capture of uri. URIs that are not http(s) are ignored;
// invalid ones are an error.
func (l *Live) Add(uri string) error {
	txn := l.db.Txn(true)
	defer txn.Abort()
	if err := l.add(txn, uri, false); err != nil {
		return err
	}
	txn.Commit()
	l.noteInsert()
	return nil
}

func (l *Live) add(txn *memdb.Txn, uri string, replayed bool) error {
	key, full, ok, err := keyOf(uri)
	if err != nil || !ok {
		return err
	}
	return l.insert(txn, key, full, replayed)
}

func keyOf(uri string) (key, full string, ok bool, err error) {
	s, err := surt.Canonicalize(uri)
	if err != nil {
		return "", "", false, fmt.Errorf("mementomap: live: %w", err)
	}
	key, ok = HxPxKey(s)
	return key, s, ok, nil
}

func (l *Live) noteInsert() {
	if l.pending.Load() >= int64(l.opts.MaxPending) {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (l *Live) insert(txn *memdb.Txn, key, full string, replayed bool) error {
	raw, err := txn.First("uris", "id", full)
	if err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	newURI := raw == nil
	if newURI {
		if err := txn.Insert("uris", &liveURI{URI: full}); err != nil {
			return fmt.Errorf("mementomap: live: %w", err)
		}
	}
	raw, err = txn.First("keys", "id", key)
	if err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	e := liveKey{Key: key}
	if raw != nil {
		e = *raw.(*liveKey)
	} else {
		l.pending.Add(1)
	}
	e.M++
	if newURI {
		e.R++
	}
	e.Replayed = e.Replayed || replayed
	if err := txn.Insert("keys", &e); err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	return nil
}

// FeedCDXJ records the captures of a CDXJ (or classic CDX) index, e.g. to
// rebuild after a crash, committing at most 1000 per transaction. Counts
// fed this way are marked as upper bounds when merged, since some may
// already be in the file. A malformed line is an error naming the line.
func (l *Live) FeedCDXJ(r io.Reader, name string) (int64, error) {
	cr := cdxj.NewReader(r, name)
	return l.feedLines(cr, func(txn *memdb.Txn, c cdxj.Line) (bool, error) {
		var key, full string
		ok := false
		if c.URL != "" {
			var err error
			if key, full, ok, err = keyOf(c.URL); err != nil {
				return false, fmt.Errorf("mementomap: live: %s line %d: %w", name, cr.LineNumber(), err)
			}
		} else {
			full = c.Key
			key, ok = HxPxKey(c.Key)
		}
		if !ok {
			return false, nil
		}
		return true, l.insert(txn, key, full, true)
	})
}

// feedLines calls add for every line of cr in write transactions of at
// most 1000 lines; it returns how many lines add counted.
func (l *Live) feedLines(cr *cdxj.Reader, add func(txn *memdb.Txn, c cdxj.Line) (bool, error)) (int64, error) {
	var n int64
	txn := l.db.Txn(true)
	inTxn := 0
	defer func() {
		txn.Commit()
		l.noteInsert()
	}()
	for {
		c, err := cr.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("mementomap: live: %w", err)
		}
		counted, err := add(txn, c)
		if err != nil {
			return n, err
		}
		if counted {
			n++
		}
		if inTxn++; inTxn == 1000 {
			txn.Commit()
			txn = l.db.Txn(true)
			inTxn = 0
		}
	}
}

// Pending returns the number of keys held in memory, not yet merged.
func (l *Live) Pending() int64 { return l.pending.Load() }

// Lookup answers whether the archive holds captures of uri's HxPx key.
func (l *Live) Lookup(uri string) (Match, error) {
	key, _, ok, err := keyOf(uri)
	if err != nil {
		return Match{}, err
	}
	if !ok {
		return Match{}, fmt.Errorf("mementomap: live: %q is not an http(s) URI", uri)
	}
	return l.LookupKey([]byte(key))
}

// LookupKey answers for an HxPx key in any spelling other tools write
// (normalised first, as the map file's lookup does): a pending capture of
// the key answers first (it is the most specific), then the map file.
func (l *Live) LookupKey(key []byte) (Match, error) {
	key, err := NormalizeKey(nil, key)
	if err != nil {
		return Match{}, fmt.Errorf("mementomap: live: %w", err)
	}
	raw, err := l.db.Txn(false).First("keys", "id", string(key))
	if err != nil {
		return Match{}, fmt.Errorf("mementomap: live: %w", err)
	}
	if raw != nil {
		e := raw.(*liveKey)
		return Match{Present: true, Key: []byte(e.Key), Freq: e.freq()}, nil
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return Match{}, errors.New("mementomap: live: closed")
	}
	if l.m == nil {
		return Match{}, nil
	}
	mt, err := l.m.Lookup(key, nil)
	if err != nil {
		return mt, err
	}
	mt.Key = bytes.Clone(mt.Key)
	return mt, nil
}

func (e *liveKey) freq() ukvs.Freq {
	f := ukvs.Freq{M: ukvs.Exactly(e.M), R: ukvs.Exactly(e.R)}
	if e.Replayed {
		f.M.Bound, f.R.Bound = ukvs.AtMost, ukvs.AtMost
	}
	return f
}

// snapshot writes the pending keys of txn as a sorted map.
func snapshot(txn *memdb.Txn) ([]byte, []liveKey, error) {
	it, err := txn.Get("keys", "id")
	if err != nil {
		return nil, nil, err
	}
	var buf []byte
	var keys []liveKey
	for raw := it.Next(); raw != nil; raw = it.Next() {
		e := raw.(*liveKey)
		keys = append(keys, *e)
		buf = ukvs.AppendRecord(buf, ukvs.Record{Key: []byte(e.Key), Freq: e.freq()})
	}
	return buf, keys, nil
}

func (l *Live) headers() []byte {
	meta := `{"type":"MementoMap"}`
	if l.opts.Name != "" {
		h, err := ukvs.MetaHeader(map[string]string{"type": "MementoMap", "name": l.opts.Name})
		if err == nil {
			meta = string(h.Value)
		}
	}
	return []byte("!context [\"http://oduwsdl.github.io/contexts/ukvs\"]\n!fields {\"keys\":[\"surt\"],\"values\":[\"frequency\"]}\n!meta " + meta + "\n")
}

// WriteTo writes the current map (file and pending captures merged, not
// compacted) to w.
func (l *Live) WriteTo(w io.Writer) (int64, error) {
	txn := l.db.Txn(false)
	pend, _, err := snapshot(txn)
	if err != nil {
		return 0, fmt.Errorf("mementomap: live: %w", err)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, errors.New("mementomap: live: closed")
	}
	cw := &iox.CountWriter{W: w}
	if err := l.mergeTo(cw, pend); err != nil {
		return cw.N, err
	}
	return cw.N, nil
}

// mergeTo writes file ∪ pending; l.mu must be held.
func (l *Live) mergeTo(w io.Writer, pend []byte) error {
	base := l.m
	if base == nil {
		var err error
		if base, err = NewMap(l.headers()); err != nil {
			return err
		}
	}
	pm, err := NewMap(pend)
	if err != nil {
		return err
	}
	if _, err := Merge(w, []*Map{base, pm}, nil); err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	return nil
}

// Compact merges the pending captures into the map file (compacting it
// when LiveOptions.Compact is set) and replaces the file atomically. Lookups
// keep answering from the old file and memory until the new file is in
// place; the merged captures then leave memory.
func (l *Live) Compact(ctx context.Context) error {
	l.compactMu.Lock()
	defer l.compactMu.Unlock()
	snap := l.db.Txn(false)
	pend, keys, err := snapshot(snap)
	if err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	next, err := l.snapshotMarks(snap)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return l.saveMarks(next)
	}
	if err := l.beginMerge(next); err != nil {
		return err
	}
	target := l.path
	if l.opts.Compact != nil {
		target = filepath.Join(filepath.Dir(l.path), "."+filepath.Base(l.path)+".tmp-merged")
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return errors.New("mementomap: live: closed")
	}
	err = WriteFileAtomic(target, func(w io.Writer) error { return l.mergeTo(w, pend) })
	l.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	if l.opts.Compact != nil {
		opts := *l.opts.Compact
		opts.Workers = max(opts.Workers, 1)
		_, err := CompactFile(ctx, target, l.path, opts)
		os.Remove(target)
		if err != nil {
			return fmt.Errorf("mementomap: live: %w", err)
		}
	}
	nm, err := OpenMap(l.path)
	if err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	l.mu.Lock()
	old := l.m
	l.m = nm
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if err := l.saveMarks(next); err != nil {
		return err
	}
	return l.forget(snap, keys)
}

// forget removes from memory what the snapshot merged into the file,
// keeping captures that arrived since (their counts minus the merged ones).
func (l *Live) forget(snap *memdb.Txn, keys []liveKey) error {
	for i := 0; i < len(keys); i += 1000 {
		txn := l.db.Txn(true)
		for _, s := range keys[i:min(i+1000, len(keys))] {
			raw, err := txn.First("keys", "id", s.Key)
			if err != nil {
				txn.Abort()
				return fmt.Errorf("mementomap: live: %w", err)
			}
			if raw == nil {
				continue
			}
			cur := raw.(*liveKey)
			if cur.M == s.M {
				if err := txn.Delete("keys", cur); err != nil {
					txn.Abort()
					return fmt.Errorf("mementomap: live: %w", err)
				}
				l.pending.Add(-1)
				continue
			}
			left := liveKey{Key: cur.Key, M: cur.M - s.M, R: max(cur.R-s.R, 0), Replayed: cur.Replayed}
			if err := txn.Insert("keys", &left); err != nil {
				txn.Abort()
				return fmt.Errorf("mementomap: live: %w", err)
			}
		}
		txn.Commit()
	}
	// URIs merged into the file: forget them too (a later capture of one
	// counts it again, which the merge's URI-R upper bound accounts for).
	it, err := snap.Get("uris", "id")
	if err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	var batch []any
	flush := func() error {
		txn := l.db.Txn(true)
		for _, u := range batch {
			if err := txn.Delete("uris", u); err != nil && !errors.Is(err, memdb.ErrNotFound) {
				txn.Abort()
				return fmt.Errorf("mementomap: live: %w", err)
			}
		}
		txn.Commit()
		batch = batch[:0]
		return nil
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		batch = append(batch, raw)
		if len(batch) == 1000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// Run merges pending captures every Interval, or sooner when MaxPending
// keys are pending, until ctx is cancelled; then it merges once more.
func (l *Live) Run(ctx context.Context) error {
	t := time.NewTicker(l.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := l.Compact(context.Background()); err != nil {
				return err
			}
			return nil
		case <-t.C:
		case <-l.kick:
		}
		if err := l.Compact(ctx); err != nil && ctx.Err() == nil {
			l.opts.Logger.Warn("mementomap: live: merge failed; captures stay in memory", "path", l.path, "err", err)
		}
	}
}

// Close merges what is pending into the file and releases the map.
func (l *Live) Close() error {
	err := l.Compact(context.Background())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return err
	}
	l.closed = true
	if l.m != nil {
		if cerr := l.m.Close(); err == nil {
			err = cerr
		}
		l.m = nil
	}
	return err
}

// Check verifies the live map's invariants: the map file is sorted and
// well-formed, every pending key is an HxPx key with 0 < R <= M, and the
// pending counter matches the keys held in memory.
func (l *Live) Check() error {
	l.mu.RLock()
	if l.m != nil {
		if err := l.m.Check(); err != nil {
			l.mu.RUnlock()
			return fmt.Errorf("mementomap: live: %w", err)
		}
	}
	l.mu.RUnlock()
	txn := l.db.Txn(false)
	it, err := txn.Get("keys", "id")
	if err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	var n int64
	for raw := it.Next(); raw != nil; raw = it.Next() {
		e := raw.(*liveKey)
		n++
		if _, ok := HxPxKey(e.Key); !ok || e.M <= 0 || e.R > e.M || e.R < 0 {
			return fmt.Errorf("mementomap: live: bad pending entry %q M=%d R=%d", e.Key, e.M, e.R)
		}
	}
	if p := l.pending.Load(); p != n {
		return fmt.Errorf("mementomap: live: pending counter %d, %d keys in memory", p, n)
	}
	return nil
}
