package captureindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/internal/pebblelog"
)

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("captureindex: closed")

// DefaultScope is the collection captures without a Scope are filed under.
const DefaultScope = "default"

// Index is the capture index of an archive. It is safe for concurrent use;
// only one process may open a directory at a time.
type Index struct {
	db       *pebble.DB
	dir      string
	log      *slog.Logger
	scope    string
	cdxjDirs []string

	closed atomic.Bool
	dirty  atomic.Bool   // writes since the last sync
	stop   chan struct{} // ends the syncer
	synced sync.WaitGroup
	opMu   sync.RWMutex // shared by operations, exclusive in Close
	wmu    sync.Mutex   // serialises writers (id allocation, counters)

	nmu      sync.RWMutex
	ids      map[byte]map[string]uint64
	names    map[byte]map[uint64]string
	next     map[byte]uint64
	counters map[uint64]map[byte]int64

	delBatch int // changes per durable batch of Delete (0: deleteBatch; crash tests set it)
}

var (
	_ wayside.Subscriber = (*Index)(nil)
	_ wayside.Resyncer   = (*Index)(nil)
)

type options struct {
	log      *slog.Logger
	scope    string
	cdxjDirs []string
	fs       vfs.FS
	sync     time.Duration
}

// Option configures Open.
type Option func(*options)

// WithLogger sets the logger (Pebble's messages at debug level, skipped
// CDXJ lines at warn level).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithScope sets the collection captures without a Scope (and every line
// read back from CDXJ files) are filed under. Default DefaultScope.
func WithScope(s string) Option {
	return func(o *options) {
		if s != "" {
			o.scope = s
		}
	}
}

// WithCDXJDirs names the directories holding the CDXJ files written beside
// the WARCs (by the crawler or the ingester): Resync reads them to catch up
// on captures the index missed — after the Fanout dropped some, and at
// start, so a crash between a record's CDXJ line and its index entry loses
// nothing.
func WithCDXJDirs(dirs ...string) Option {
	return func(o *options) { o.cdxjDirs = append(o.cdxjDirs, dirs...) }
}

// WithSyncInterval sets how often writes are made durable (fsync of the
// write-ahead log; default 1s, negative: only at Close). Between syncs a
// power loss can take the newest entries, which Resync at start recovers from
// the CDXJ files.
func WithSyncInterval(d time.Duration) Option { return func(o *options) { o.sync = d } }

// withFS runs the index on another file system (crash tests).
func withFS(fs vfs.FS) Option { return func(o *options) { o.fs = fs } }

// Open opens or creates the capture index in dir. It does not catch up:
// call Resync once the producer has recovered its CDXJ files and before
// captures flow (consumers.Set.CatchUp does).
func Open(dir string, opts ...Option) (*Index, error) {
	o := options{log: slog.New(slog.DiscardHandler), scope: DefaultScope, sync: time.Second}
	for _, f := range opts {
		f(&o)
	}
	popts := &pebble.Options{Logger: pebblelog.Logger{L: o.log, Owner: "captureindex"}}
	if o.fs != nil {
		popts.FS = o.fs
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("captureindex: open %s: %w", dir, err)
		}
		if err := fsutil.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, fmt.Errorf("captureindex: open %s: %w", dir, err)
		}
	}
	popts.Levels = make([]pebble.LevelOptions, 7)
	for i := range popts.Levels {
		// Zstd on the large bottom levels: captures of one URL sit side
		// by side and share most of their bytes.
		popts.Levels[i] = pebble.LevelOptions{BlockSize: 32 << 10, Compression: pebble.SnappyCompression}
		if i >= 5 {
			popts.Levels[i].Compression = pebble.ZstdCompression
		}
	}
	popts.EnsureDefaults()
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("captureindex: open %s: %w", dir, err)
	}
	ix := &Index{db: db, dir: dir, log: o.log, scope: o.scope, cdxjDirs: o.cdxjDirs,
		ids: map[byte]map[string]uint64{}, names: map[byte]map[uint64]string{}, next: map[byte]uint64{},
		counters: map[uint64]map[byte]int64{}}
	if err := ix.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("captureindex: open %s: %w", dir, err)
	}
	ix.stop = make(chan struct{})
	if o.sync > 0 {
		ix.synced.Add(1)
		go ix.syncer(o.sync)
	}
	return ix, nil
}

// syncer makes the writes of the last interval durable.
func (ix *Index) syncer(every time.Duration) {
	defer ix.synced.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ix.stop:
			return
		case <-t.C:
		}
		if !ix.dirty.Swap(false) || ix.begin() != nil {
			continue
		}
		if err := ix.db.LogData(nil, pebble.Sync); err != nil {
			ix.log.Warn("captureindex: sync", "err", err)
			ix.dirty.Store(true)
		}
		ix.end()
	}
}

// load checks the format version (writing it into a new index) and reads
// the interned names and counters.
func (ix *Index) load() error {
	v, closer, err := ix.db.Get(versionKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if err := ix.db.Set(versionKey, binary.AppendUvarint(nil, formatVersion), pebble.Sync); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		ver, n := binary.Uvarint(v)
		closer.Close()
		if n <= 0 || ver != formatVersion {
			return fmt.Errorf("unsupported capture index format %d (this build reads %d)", ver, formatVersion)
		}
	}
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagID}, UpperBound: []byte{tagID + 1}})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) < 3 {
			it.Close()
			return fmt.Errorf("bad name key %x", k)
		}
		id, n := binary.Uvarint(k[2:])
		if n <= 0 {
			it.Close()
			return fmt.Errorf("bad name key %x", k)
		}
		ix.remember(k[1], string(it.Value()), id)
	}
	if err := it.Close(); err != nil {
		return err
	}
	it, err = ix.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagCounter}, UpperBound: []byte{tagCounter + 1}})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		scope, n := binary.Uvarint(k[1:])
		c, m := binary.Varint(it.Value())
		if n <= 0 || len(k) != 1+n+1 || m <= 0 {
			it.Close()
			return fmt.Errorf("bad counter %x", k)
		}
		ix.counter(scope)[k[len(k)-1]] = c
	}
	return it.Close()
}

func (ix *Index) remember(kind byte, name string, id uint64) {
	if ix.ids[kind] == nil {
		ix.ids[kind] = map[string]uint64{}
		ix.names[kind] = map[uint64]string{}
	}
	ix.ids[kind][name] = id
	ix.names[kind][id] = name
	if id >= ix.next[kind] {
		ix.next[kind] = id + 1
	}
}

func (ix *Index) counter(scope uint64) map[byte]int64 {
	m := ix.counters[scope]
	if m == nil {
		m = map[byte]int64{}
		ix.counters[scope] = m
	}
	return m
}

// lookupID returns the id of an interned name.
func (ix *Index) lookupID(kind byte, name string) (uint64, bool) {
	ix.nmu.RLock()
	defer ix.nmu.RUnlock()
	id, ok := ix.ids[kind][name]
	return id, ok
}

// name returns an interned name.
func (ix *Index) name(kind byte, id uint64) (string, bool) {
	ix.nmu.RLock()
	defer ix.nmu.RUnlock()
	n, ok := ix.names[kind][id]
	return n, ok
}

// intern returns the id of name, allocating one in b (under wmu) when new;
// ids start at 1 (0 means "none" in values).
func (ix *Index) intern(b *pebble.Batch, pending map[byte]map[string]uint64, kind byte, name string) uint64 {
	if id, ok := ix.lookupID(kind, name); ok {
		return id
	}
	if id, ok := pending[kind][name]; ok {
		return id
	}
	ix.nmu.Lock()
	id := max(ix.next[kind], 1)
	ix.next[kind] = id + 1
	ix.nmu.Unlock()
	if pending[kind] == nil {
		pending[kind] = map[string]uint64{}
	}
	pending[kind][name] = id
	b.Set(nameKey(kind, name), binary.AppendUvarint(nil, id), nil)
	b.Set(idKey(kind, id), []byte(name), nil)
	return id
}

// begin guards an operation against a concurrent Close.
func (ix *Index) begin() error {
	ix.opMu.RLock()
	if ix.closed.Load() {
		ix.opMu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (ix *Index) end() { ix.opMu.RUnlock() }

// Close syncs and closes the index.
func (ix *Index) Close() error {
	if ix.stop != nil {
		select {
		case <-ix.stop:
		default:
			close(ix.stop)
		}
		ix.synced.Wait()
	}
	ix.opMu.Lock()
	defer ix.opMu.Unlock()
	if ix.closed.Swap(true) {
		return nil
	}
	err := ix.db.LogData(nil, pebble.Sync)
	if cerr := ix.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("captureindex: close: %w", err)
	}
	return nil
}

// Scopes returns the collections the index holds captures of, sorted.
func (ix *Index) Scopes() []string {
	ix.nmu.RLock()
	defer ix.nmu.RUnlock()
	var out []string
	for n := range ix.ids[kindScope] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DefaultScope returns the collection captures without a Scope go to.
func (ix *Index) DefaultScope() string { return ix.scope }
