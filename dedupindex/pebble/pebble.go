package pebble

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/internal/record"
	"github.com/wayside-archive/wayside/internal/pebblelog"
)

// Index is a dedupindex.Index stored in a Pebble directory. It is safe for
// concurrent use. Only one process may open a directory at a time.
type Index struct {
	db       *pebble.DB
	dir      string
	log      *slog.Logger
	urlKey   func(string) string
	byURL    bool   // the by-URL secondary index is kept
	instance string // random per Open; prefixes ticket tokens
	seq      atomic.Uint64
	seed     maphash.Seed // shards the claim table
	delBatch int          // originals per durable batch of Delete (0: deleteBatch)

	closed atomic.Bool
	opMu   sync.RWMutex // shared by operations using db, exclusive in Close
	// fatal holds the error of a write Pebble found fatal (a commit that
	// failed, e.g. on a full disk): no write is tried after it, and Close
	// leaves the store as a crash would (the next Open recovers it).
	fatal atomic.Pointer[error]

	shards [numShards]shard

	// iters holds reusable point-lookup iterators (lookupiter.go). Every
	// write to db calls iters.changed after it returns.
	iters *iterPool
	// mem holds the keys written and maybe not yet flushed; every write
	// goes through apply (unflushed.go).
	mem *unflushed

	idleStop, idleDone chan struct{} // flushIdle

	namesMu    sync.RWMutex // guards the maps below
	scopeIDs   map[string]uint64
	scopeNames map[uint64]string
	interned   map[byte]map[string]uint64
	internedBy map[byte]map[uint64]string
	allocMu    sync.Mutex // serialises id allocations (durable writes)
}

var (
	_ dedupindex.Index         = (*Index)(nil)
	_ dedupindex.Batcher       = (*Index)(nil)
	_ dedupindex.WindowClaimer = (*Index)(nil)
	_ dedupindex.Checker       = (*Index)(nil)
)

type options struct {
	fs           vfs.FS // nil: the OS file system
	noURLIdx     bool
	compression  pebble.Compression
	log          *slog.Logger
	urlKey       func(string) string
	cacheSize    int64
	blockSize    int
	delBatch     int
	idleFlush    time.Duration
	idleFlushMin uint64
	memTableSize uint64 // 0: Pebble's default (tests set a small one)
}

// Option configures Open.
type Option func(*options)

// WithLogger sets the logger for Pebble's own messages (compactions at
// debug level, background errors at error level).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithURLKey replaces the function that maps a target URI to its by-URL key
// (default dedupindex.URLKey, the SURT form). The same function must be used
// every time a directory is opened.
func WithURLKey(f func(uri string) string) Option { return func(o *options) { o.urlKey = f } }

// WithoutURLIndex creates the index without the by-URL secondary index:
// about a third smaller on disk, but ByURL (CDX queries, conditional
// requests) then fails with dedupindex.ErrNoURLIndex. It applies when the directory is
// created; an existing index keeps the choice it was created with.
func WithoutURLIndex() Option { return func(o *options) { o.noURLIdx = true } }

// WithCacheSize sets the block cache size in bytes. The default is three
// times the index's tables on disk when it is opened (the cache holds
// uncompressed blocks), at least 128 MiB and at most 4 GiB: with the whole
// index cached a decision takes a few microseconds; with a small cache a
// lookup that finds an original reads and decompresses a block (~30 µs).
// Memory is only used as blocks are read.
func WithCacheSize(n int64) Option { return func(o *options) { o.cacheSize = n } }

// defaultCacheSize sizes the block cache from the tables in dir.
func defaultCacheSize(fs vfs.FS, dir string) int64 {
	const lo, hi = 128 << 20, 4 << 30
	var n int64
	names, _ := fs.List(dir) // a new index has none
	for _, name := range names {
		if strings.HasSuffix(name, ".sst") {
			if fi, err := fs.Stat(fs.PathJoin(dir, name)); err == nil {
				n += fi.Size()
			}
		}
	}
	return min(max(3*n, lo), hi)
}

// WithBlockSize sets the target uncompressed size of table data blocks
// (default 16 KiB: larger blocks compress target URIs better, smaller ones
// decompress faster on a cache miss).
func WithBlockSize(n int) Option { return func(o *options) { o.blockSize = n } }

const mergerName = "wayside.dedupindex.counter.v1"

// Open opens or creates the index in dir.
func Open(dir string, opts ...Option) (*Index, error) {
	o := options{
		log:          slog.New(slog.DiscardHandler),
		urlKey:       dedupindex.URLKey,
		blockSize:    16 << 10,
		compression:  pebble.ZstdCompression,
		idleFlush:    defaultIdleFlush,
		idleFlushMin: defaultIdleFlushMin,
	}
	for _, f := range opts {
		f(&o)
	}
	fsys := o.fs
	if fsys == nil {
		fsys = vfs.Default
	}
	if o.cacheSize <= 0 {
		o.cacheSize = defaultCacheSize(fsys, dir)
	}
	cache := pebble.NewCache(o.cacheSize)
	defer cache.Unref()
	// The default comparer with a whole-key Split: the same order, name and
	// filter contents, but it lets get use SeekPrefixGE with Bloom filters.
	cmp := *pebble.DefaultComparer
	cmp.Split = func(k []byte) int { return len(k) }
	popts := &pebble.Options{
		Comparer: &cmp,
		Cache:    cache,
		Logger:   pebblelog.Logger{L: o.log, Owner: "dedupindex/pebble"},
		Merger:   &pebble.Merger{Name: mergerName, Merge: newCounterMerger},
	}
	popts.Levels = make([]pebble.LevelOptions, 7)
	for i := range popts.Levels {
		popts.Levels[i] = pebble.LevelOptions{
			BlockSize:    o.blockSize,
			FilterPolicy: bloom.FilterPolicy(10),
			FilterType:   pebble.TableFilter,
			Compression:  o.compression,
		}
		if i < 5 {
			// Short-lived upper levels: cheap to write and read; the
			// bottom levels hold ~90% of the data and get the better ratio.
			popts.Levels[i].Compression = pebble.SnappyCompression
		}
	}
	if o.fs != nil {
		popts.FS = o.fs
	}
	if o.memTableSize > 0 {
		popts.MemTableSize = o.memTableSize
	}
	iters := &iterPool{}
	mem := newUnflushed()
	popts.AddEventListener(pebble.EventListener{
		// Pebble calls FlushEnd once the flushed tables are installed:
		// iterators created after it read them (unflushed.go).
		FlushEnd: func(info pebble.FlushInfo) {
			iters.reorganised()
			mem.flushEnd(info)
		},
		CompactionEnd: func(pebble.CompactionInfo) { iters.reorganised() },
	})
	popts.EnsureDefaults()
	if err := createDir(popts.FS, dir); err != nil {
		return nil, fmt.Errorf("dedupindex/pebble: create %s: %w", dir, err)
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("dedupindex/pebble: open %s: %w", dir, err)
	}
	if m := db.Metrics(); m.WAL.Size > 0 || m.MemTable.Count > 1 {
		// Pebble kept replayed writes in a memtable instead of flushing
		// them into tables: the filter does not know them (unflushed.go).
		mem.off.Store(true)
	}
	var inst [8]byte
	if _, err := rand.Read(inst[:]); err != nil {
		db.Close()
		return nil, fmt.Errorf("dedupindex/pebble: instance id: %w", err)
	}
	ix := &Index{
		db:         db,
		dir:        dir,
		log:        o.log,
		urlKey:     o.urlKey,
		instance:   hex.EncodeToString(inst[:]),
		delBatch:   o.delBatch,
		iters:      iters,
		mem:        mem,
		seed:       maphash.MakeSeed(),
		scopeIDs:   map[string]uint64{},
		scopeNames: map[uint64]string{},
		interned:   map[byte]map[string]uint64{kindFile: {}, kindMIME: {}},
		internedBy: map[byte]map[uint64]string{kindFile: {}, kindMIME: {}},
	}
	for i := range ix.shards {
		ix.shards[i].slots = map[string]*slot{}
	}
	if err := ix.load(!o.noURLIdx); err != nil {
		db.Close()
		return nil, fmt.Errorf("dedupindex/pebble: open %s: %w", dir, err)
	}
	ix.idleStop, ix.idleDone = make(chan struct{}), make(chan struct{})
	go ix.flushIdle(o.idleFlush, o.idleFlushMin)
	return ix, nil
}

// createDir creates dir and any missing parents and fsyncs the directories
// that gained an entry, so a new index does not vanish in a power loss
// (Pebble syncs the index directory itself, not its parent).
func createDir(fs vfs.FS, dir string) error {
	var missing []string
	for d := dir; ; d = fs.PathDir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if fs.PathDir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range missing {
		parent := fs.PathDir(d)
		f, err := fs.OpenDir(parent)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", parent, err)
		}
	}
	return nil
}

// load checks the format version (writing it into a new index) and loads
// the scope and intern tables.
func (ix *Index) load(byURL bool) error {
	v, closer, err := ix.db.Get(versionKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		it, err := ix.db.NewIter(nil)
		if err != nil {
			return err
		}
		empty := !it.First()
		if err := it.Close(); err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("not a Wayside dedup index (no format version)")
		}
		b := ix.db.NewBatch()
		b.Set(versionKey, binary.AppendUvarint(nil, formatVersion), nil)
		flag := byte(0)
		if byURL {
			flag = 1
		}
		b.Set(byURLKey, []byte{flag}, nil)
		if err := ix.apply(b); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		ver, n := binary.Uvarint(v)
		closer.Close()
		if n <= 0 || ver != formatVersion {
			return fmt.Errorf("unsupported index format version %d (this build reads %d)", ver, formatVersion)
		}
	}
	v, closer, err = ix.db.Get(byURLKey)
	if err != nil {
		return fmt.Errorf("reading the by-URL setting: %w", err)
	}
	if len(v) != 1 || v[0] > 1 {
		closer.Close()
		return fmt.Errorf("bad by-URL setting %x", v)
	}
	ix.byURL = v[0] == 1
	closer.Close()
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagScope}, UpperBound: []byte{tagIntern + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		switch k[0] {
		case tagScope:
			id, n := binary.Uvarint(it.Value())
			if n <= 0 || id == 0 {
				return fmt.Errorf("bad scope table entry %q", k[1:])
			}
			ix.scopeIDs[string(k[1:])] = id
			ix.scopeNames[id] = string(k[1:])
		case tagIntern:
			if len(k) < 3 || (k[1] != kindFile && k[1] != kindMIME) {
				return fmt.Errorf("bad intern table key %x", k)
			}
			id, n := binary.Uvarint(k[2:])
			if n <= 0 || id == 0 {
				return fmt.Errorf("bad intern table key %x", k)
			}
			ix.interned[k[1]][string(it.Value())] = id
			ix.internedBy[k[1]][id] = string(it.Value())
		}
	}
	return it.Error()
}

// Dir returns the index directory.
func (ix *Index) Dir() string { return ix.dir }

// begin starts an operation that uses the database.
func (ix *Index) begin() error {
	ix.opMu.RLock()
	if ix.closed.Load() {
		ix.opMu.RUnlock()
		return dedupindex.ErrClosed
	}
	return nil
}

func (ix *Index) end() { ix.opMu.RUnlock() }

// write runs a durable write. Pebble treats a failed commit as fatal
// and panics (pebblelog.Logger.Fatalf); write turns that panic into an
// error, one line naming the cause (no space left on device), and marks
// the index failed: later writes return the same error without touching
// the store.
func (ix *Index) write(f func() error) (err error) {
	if fe := ix.fatal.Load(); fe != nil {
		return *fe
	}
	defer ix.iters.changed()
	defer func() {
		if pebblelog.Recover(recover(), &err) {
			ix.fatal.Store(&err)
		}
	}()
	return f()
}

// Close drops all pending claims, waits for operations in flight and closes
// the database.
func (ix *Index) Close() error {
	if ix.closed.Swap(true) {
		return dedupindex.ErrClosed
	}
	for i := range ix.shards {
		sh := &ix.shards[i]
		sh.mu.Lock()
		for name, s := range sh.slots {
			delete(sh.slots, name)
			close(s.done)
		}
		sh.mu.Unlock()
	}
	close(ix.idleStop)
	<-ix.idleDone
	ix.opMu.Lock()
	defer ix.opMu.Unlock()
	if fe := ix.fatal.Load(); fe != nil {
		// Pebble is in its fatal state: closing it (or its idle
		// iterators) may fail again, or panic. The store is left as a
		// crash leaves it; Open recovers.
		return fmt.Errorf("dedupindex/pebble: close after a failed write: %w", *fe)
	}
	ix.iters.closeIters()
	if err := ix.db.Close(); err != nil {
		return fmt.Errorf("dedupindex/pebble: close: %w", err)
	}
	return nil
}

// scopeID returns the id of a scope, allocating it durably when create is
// set and the scope is new. ok is false for an unknown scope.
func (ix *Index) scopeID(name string, create bool) (id uint64, ok bool, err error) {
	ix.namesMu.RLock()
	id, ok = ix.scopeIDs[name]
	ix.namesMu.RUnlock()
	if ok || !create {
		return id, ok, nil
	}
	ix.allocMu.Lock()
	defer ix.allocMu.Unlock()
	ix.namesMu.RLock()
	id, ok = ix.scopeIDs[name]
	n := uint64(len(ix.scopeIDs))
	ix.namesMu.RUnlock()
	if ok {
		return id, true, nil
	}
	id = n + 1
	if err := ix.write(func() error { return ix.setOne(scopeKey(name), binary.AppendUvarint(nil, id)) }); err != nil {
		return 0, false, fmt.Errorf("dedupindex/pebble: add scope %q: %w", name, err)
	}
	ix.namesMu.Lock()
	ix.scopeIDs[name] = id
	ix.scopeNames[id] = name
	ix.namesMu.Unlock()
	return id, true, nil
}

// maxInterned is the longest string interned; longer ones are stored inline.
const maxInterned = 256

// intern returns the id of s in the table of kind, allocating it durably.
// It returns 0 for strings stored inline (empty or too long).
func (ix *Index) intern(kind byte, s string) (uint64, error) {
	if s == "" || len(s) > maxInterned {
		return 0, nil
	}
	ix.namesMu.RLock()
	id, ok := ix.interned[kind][s]
	ix.namesMu.RUnlock()
	if ok {
		return id, nil
	}
	ix.allocMu.Lock()
	defer ix.allocMu.Unlock()
	ix.namesMu.RLock()
	id, ok = ix.interned[kind][s]
	n := uint64(len(ix.interned[kind]))
	ix.namesMu.RUnlock()
	if ok {
		return id, nil
	}
	id = n + 1
	if err := ix.write(func() error { return ix.setOne(internKey(kind, id), []byte(s)) }); err != nil {
		return 0, fmt.Errorf("dedupindex/pebble: intern %q: %w", s, err)
	}
	ix.namesMu.Lock()
	ix.interned[kind][s] = id
	ix.internedBy[kind][id] = s
	ix.namesMu.Unlock()
	return id, nil
}

func (ix *Index) internedName(kind byte, id uint64) (string, bool) {
	ix.namesMu.RLock()
	s, ok := ix.internedBy[kind][id]
	ix.namesMu.RUnlock()
	return s, ok
}

// toRecord converts o (validated) to its stored form, interning file
// names and MIME types (not URI origins: the format keeps target URIs
// whole).
func (ix *Index) toRecord(o dedupindex.Original) (*record.Record, error) {
	return record.FromOriginal(o, func(kind record.Kind, s string) (uint64, error) {
		if kind != record.KindFile && kind != record.KindMIME {
			return 0, nil
		}
		return ix.intern(byte(kind), s)
	})
}

// toOriginal converts a stored record back, resolving interned names.
func (ix *Index) toOriginal(dig string, r record.Record) (dedupindex.Original, error) {
	return r.Original(dig, func(kind record.Kind, id uint64) (string, error) {
		s, ok := ix.internedName(byte(kind), id)
		if !ok {
			return "", fmt.Errorf("unknown %s id %d", kind, id)
		}
		return s, nil
	})
}

// get reads and decodes the primary entry at key, as committed when it is
// called; a nil key is pk's primary key in scope scopeID, built in the
// iterator's buffer. It seeks with the bottom level's Bloom filters on
// (Pebble's Get skips them, tuned for lookups that hit): most dedup lookups
// are for new payloads, which the filters then answer without reading a
// data block.
func (ix *Index) get(key []byte, scopeID uint64, pk parsedKey) (dedupindex.Original, bool, error) {
	var kb [96]byte
	k := key
	if k == nil {
		k = appendPrimaryKey(kb[:0], scopeID, pk)
	}
	// Whether the key may be in a memtable, asked before the iterator's
	// generation is read (unflushed.go).
	tables := !ix.mem.holds(k)
	li, err := ix.getIter(tables)
	if err != nil {
		return dedupindex.Original{}, false, fmt.Errorf("dedupindex/pebble: get: %w", err)
	}
	if tables {
		ix.mem.skipped.Add(1)
	}
	// The iterator keeps the key it seeks: a copy in its own buffer.
	li.key = append(li.key[:0], k...)
	key = li.key
	// Decode before the iterator (and its key buffer) goes back.
	var o dedupindex.Original
	found := li.it.SeekPrefixGE(key) && bytes.Equal(li.it.Key(), key)
	var derr error
	if found {
		r, err := record.Decode(li.it.Value())
		if err == nil {
			o, err = ix.toOriginal(pk.digest(), r)
		}
		if err != nil {
			derr = fmt.Errorf("dedupindex/pebble: entry %x: %w", key, err)
		}
	}
	if err := ix.putIter(li); err != nil {
		return dedupindex.Original{}, false, fmt.Errorf("dedupindex/pebble: get: %w", err)
	}
	if derr != nil {
		return dedupindex.Original{}, false, derr
	}
	return o, found, nil
}

// Lookup returns the committed original for k.
func (ix *Index) Lookup(ctx context.Context, k dedupindex.Key) (dedupindex.Original, bool, error) {
	if err := ctx.Err(); err != nil {
		return dedupindex.Original{}, false, err
	}
	pk, err := parseKey(k)
	if err != nil {
		return dedupindex.Original{}, false, err
	}
	if err := ix.begin(); err != nil {
		return dedupindex.Original{}, false, err
	}
	defer ix.end()
	id, ok, err := ix.scopeID(pk.scope, false)
	if err != nil || !ok {
		return dedupindex.Original{}, false, err
	}
	return ix.get(nil, id, pk)
}

// ByURL returns the originals in scope whose target URI has by-URL key
// surtKey, oldest first.
func (ix *Index) ByURL(ctx context.Context, scope, surtKey string) ([]dedupindex.Original, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ix.begin(); err != nil {
		return nil, err
	}
	defer ix.end()
	if !ix.byURL {
		return nil, fmt.Errorf("dedupindex/pebble: %s: %w", ix.dir, dedupindex.ErrNoURLIndex)
	}
	id, ok, err := ix.scopeID(scope, false)
	if err != nil || !ok {
		return nil, err
	}
	surtHash := hash8(surtKey)
	prefix := secondaryPrefix(id, surtHash)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("dedupindex/pebble: by-url: %w", err)
	}
	defer it.Close()
	var out []dedupindex.Original
	for it.First(); it.Valid(); it.Next() {
		ds, err := decodeSecondaryKey(it.Key())
		if err != nil {
			return nil, fmt.Errorf("dedupindex/pebble: by-url entry %x: %w", it.Key(), err)
		}
		n := len(out)
		err = ix.scanPrimaries(ix.db, ds.primary, func(dp decodedPrimary, r record.Record) error {
			if hash8(ix.urlKey(r.TargetURI)) != surtHash {
				return nil
			}
			o, err := ix.toOriginal(dp.pk.digest(), r)
			if err != nil {
				return err
			}
			out = append(out, o)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			return nil, fmt.Errorf("dedupindex/pebble: by-url entry %x has no original (run Check)", it.Key())
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("dedupindex/pebble: by-url: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Date.Before(out[j].Date) })
	return out, nil
}

// reader is a pebble.DB or Snapshot.
type reader interface {
	NewIter(*pebble.IterOptions) (*pebble.Iterator, error)
}

// scanPrimaries calls fn for every primary entry whose key starts with
// prefix.
func (ix *Index) scanPrimaries(r reader, prefix []byte, fn func(decodedPrimary, record.Record) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("dedupindex/pebble: scan: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		dp, err := decodePrimaryKey(it.Key())
		if err != nil {
			return fmt.Errorf("dedupindex/pebble: entry %x: %w", it.Key(), err)
		}
		r, err := record.Decode(it.Value())
		if err != nil {
			return fmt.Errorf("dedupindex/pebble: entry %x: %w", it.Key(), err)
		}
		if err := fn(dp, r); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("dedupindex/pebble: scan: %w", err)
	}
	return nil
}

// Stats reports the number of originals per scope, pending claims held by
// this process and the disk space used.
func (ix *Index) Stats(ctx context.Context) (dedupindex.Stats, error) {
	if err := ctx.Err(); err != nil {
		return dedupindex.Stats{}, err
	}
	if err := ix.begin(); err != nil {
		return dedupindex.Stats{}, err
	}
	defer ix.end()
	st := dedupindex.Stats{Scopes: map[string]int64{}}
	counts, err := ix.counters()
	if err != nil {
		return dedupindex.Stats{}, err
	}
	ix.namesMu.RLock()
	for id, n := range counts {
		name, ok := ix.scopeNames[id]
		if !ok {
			name = "#" + strconv.FormatUint(id, 10)
		}
		st.Scopes[name] = n
		st.Originals += n
	}
	ix.namesMu.RUnlock()
	for i := range ix.shards {
		sh := &ix.shards[i]
		sh.mu.Lock()
		for _, s := range sh.slots {
			if s.token != 0 {
				st.Pending++
			}
		}
		sh.mu.Unlock()
	}
	st.DiskBytes = int64(ix.db.Metrics().DiskSpaceUsage())
	return st, nil
}

// counters returns the stored originals count per scope id.
func (ix *Index) counters() (map[uint64]int64, error) {
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagCounter}, UpperBound: []byte{tagCounter + 1}})
	if err != nil {
		return nil, fmt.Errorf("dedupindex/pebble: counters: %w", err)
	}
	defer it.Close()
	out := map[uint64]int64{}
	for it.First(); it.Valid(); it.Next() {
		id, n := binary.Uvarint(it.Key()[1:])
		c, m := binary.Varint(it.Value())
		if n <= 0 || m <= 0 {
			return nil, fmt.Errorf("dedupindex/pebble: bad counter %x", it.Key())
		}
		out[id] = c
	}
	return out, it.Error()
}

// Compact compacts the whole key space (used by benchmarks and after large
// imports to measure and minimise disk use).
func (ix *Index) Compact() error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	if err := ix.db.Flush(); err != nil {
		return fmt.Errorf("dedupindex/pebble: flush: %w", err)
	}
	if err := ix.db.Compact([]byte{0}, []byte{0xff}, true); err != nil {
		return fmt.Errorf("dedupindex/pebble: compact: %w", err)
	}
	return nil
}

// Sizes reports the bytes used on disk by primary and by-URL secondary
// entries, estimated from the table key ranges.
func (ix *Index) Sizes() (primary, secondary uint64, err error) {
	if err := ix.begin(); err != nil {
		return 0, 0, err
	}
	defer ix.end()
	primary, err = ix.db.EstimateDiskUsage([]byte{tagPrimary}, []byte{tagPrimary + 1})
	if err != nil {
		return 0, 0, fmt.Errorf("dedupindex/pebble: disk usage: %w", err)
	}
	secondary, err = ix.db.EstimateDiskUsage([]byte{tagSecondary}, []byte{tagSecondary + 1})
	if err != nil {
		return 0, 0, fmt.Errorf("dedupindex/pebble: disk usage: %w", err)
	}
	return primary, secondary, nil
}

// token formats a ticket token: the instance id and a sequence number.
func (ix *Index) token(seq uint64) string { return ix.instance + "." + strconv.FormatUint(seq, 10) }

func parseToken(tok string) (instance string, seq uint64, err error) {
	inst, s, ok := strings.Cut(tok, ".")
	if !ok || len(inst) != 16 {
		return "", 0, fmt.Errorf("%w: malformed token %q", dedupindex.ErrNoClaim, tok)
	}
	if _, err := hex.DecodeString(inst); err != nil {
		return "", 0, fmt.Errorf("%w: malformed token %q", dedupindex.ErrNoClaim, tok)
	}
	seq, err = strconv.ParseUint(s, 10, 64)
	if err != nil || seq == 0 {
		return "", 0, fmt.Errorf("%w: malformed token %q", dedupindex.ErrNoClaim, tok)
	}
	return inst, seq, nil
}

// counterMerger adds varint deltas.
type counterMerger struct{ sum int64 }

func newCounterMerger(_, value []byte) (pebble.ValueMerger, error) {
	m := &counterMerger{}
	return m, m.MergeNewer(value)
}

func (m *counterMerger) MergeNewer(v []byte) error {
	x, n := binary.Varint(v)
	if n <= 0 {
		return fmt.Errorf("dedupindex/pebble: bad counter operand %x", v)
	}
	m.sum += x
	return nil
}

func (m *counterMerger) MergeOlder(v []byte) error { return m.MergeNewer(v) }

func (m *counterMerger) Finish(bool) ([]byte, io.Closer, error) {
	return binary.AppendVarint(nil, m.sum), nil, nil
}
