package characterize

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

// StoreOptions tune a Store.
type StoreOptions struct {
	// CompactAt is the log size in bytes beyond which the log is folded
	// into a new snapshot (default 64 MiB).
	CompactAt int64
	// Logger receives reports of damaged lines and compactions.
	Logger *slog.Logger
}

// ErrStoreClosed is returned by a closed Store.
var ErrStoreClosed = errors.New("characterize: store is closed")

// Store holds characterization results: one Record per capture, aggregates
// per WARC file and format, and file summaries, in go-memdb tables indexed
// by container (file) and by format (PUID). With a directory, every change
// is appended to a checksummed log and fsynced before it is applied, so an
// acknowledged result survives kill -9; the log is folded into a snapshot
// as it grows. Everything in it can be rebuilt from the WARC files.
type Store struct {
	dir  string
	opts StoreOptions
	log  *slog.Logger
	db   *memdb.MemDB

	mu      sync.Mutex // serialises writers: log order is apply order
	f       *os.File   // current log (nil in memory)
	gen     uint64     // its generation
	size    int64      // its size
	failed  error      // a write that could not be undone: the store refuses more
	closed  bool
	damaged []string // damaged lines found at open

	compacting    sync.WaitGroup
	compactMu     sync.Mutex // one compaction at a time
	compactQueued bool       // a compaction the log's size asked for has not begun; guarded by mu
}

// OpenStore opens the store in dir, creating it if needed, and replays its
// snapshot and logs. dir "" keeps everything in memory only.
func OpenStore(dir string, opts StoreOptions) (*Store, error) {
	if opts.CompactAt <= 0 {
		opts.CompactAt = 64 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("characterize: store: %w", err)
	}
	s := &Store{dir: dir, opts: opts, log: opts.Logger, db: db}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("characterize: store: %w", err)
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// load replays the snapshot and the logs, cuts a torn tail off the last
// log and opens a fresh log generation.
func (s *Store) load() error {
	removeTemps(s.dir)
	txn := s.db.Txn(true)
	defer txn.Abort()
	first := uint64(0)
	snap := filepath.Join(s.dir, snapshotName)
	sawHead := false
	_, bad, torn, err := readEntries(snap, func(e entry) error {
		if e.Head != nil {
			if e.Head.Version != storeVersion {
				return fmt.Errorf("store version %d, this program reads %d", e.Head.Version, storeVersion)
			}
			first, sawHead = e.Head.Gen, true
			return nil
		}
		return s.applyEntry(txn, e)
	})
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("characterize: store %s: %w", s.dir, err)
	case !sawHead:
		return fmt.Errorf("characterize: store %s: snapshot has no header line", s.dir)
	}
	if torn != nil {
		// The snapshot is written whole and renamed: a bad last line is
		// damage, not a torn write.
		bad = append(bad, *torn)
	}
	gens, err := listLogs(s.dir)
	if err != nil {
		return fmt.Errorf("characterize: store: %w", err)
	}
	next := first
	for i, g := range gens {
		p := filepath.Join(s.dir, logName(g))
		if g < first {
			// Folded into the snapshot by a compaction that did not get
			// to remove it.
			os.Remove(p)
			continue
		}
		end, lbad, ltorn, err := readEntries(p, func(e entry) error { return s.applyEntry(txn, e) })
		if err != nil {
			return fmt.Errorf("characterize: store %s: %w", s.dir, err)
		}
		bad = append(bad, lbad...)
		if ltorn != nil {
			if i != len(gens)-1 {
				bad = append(bad, *ltorn)
			} else {
				// A write cut short by a crash: never acknowledged.
				s.log.Warn("characterize: store: cutting an incomplete last entry", "file", p, "offset", ltorn.offset)
				if err := truncateSync(p, end); err != nil {
					return fmt.Errorf("characterize: store: %w", err)
				}
			}
		}
		next = g + 1
	}
	for _, d := range bad {
		s.damaged = append(s.damaged, d.Error())
		s.log.Warn("characterize: store: damaged entry skipped; rescan the WARC files to restore it", "at", d.Error(), "err", d.err)
	}
	if len(bad) > 0 {
		// What the damaged lines held is unknown: let Resync read every
		// file again.
		if err := clearScans(txn); err != nil {
			return err
		}
	}
	txn.Commit()
	return s.openLog(next)
}

func removeTemps(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "."+snapshotName+".tmp-") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

func (s *Store) openLog(gen uint64) error {
	p := filepath.Join(s.dir, logName(gen))
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("characterize: store: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = fsutil.SyncDir(s.dir)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("characterize: store: %w", err)
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.gen, s.size = f, gen, fi.Size()
	return nil
}

// Damaged lists the damaged entries skipped at open (file and offset).
func (s *Store) Damaged() []string { return append([]string(nil), s.damaged...) }

// Put stores the records durably (logged and fsynced) and then applies
// them: a record replaces an earlier one at the same file and offset; a
// revisit inherits the identification of its original when one is stored
// (by WARC-Refers-To, else by payload digest), and unresolved revisits are
// resolved when their original arrives. When Put returns nil, the records
// survive a crash.
func (s *Store) Put(recs ...Record) error {
	es := make([]entry, len(recs))
	for i := range recs {
		r := recs[i]
		es[i] = entry{Rec: &r}
	}
	return s.write(es)
}

// MarkScanned records that file was read whole at size bytes: Resync
// skips it while its size stays the same.
func (s *Store) MarkScanned(file string, size int64) error {
	return s.write([]entry{{Scan: &scanMark{File: file, Size: size}}})
}

func (s *Store) write(es []entry) error {
	if len(es) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStoreClosed
	}
	if s.failed != nil {
		return s.failed
	}
	if s.f != nil {
		var buf []byte
		var err error
		for _, e := range es {
			if buf, err = appendEntry(buf, e); err != nil {
				return err
			}
		}
		if err := s.appendLocked(buf); err != nil {
			return err
		}
	}
	txn := s.db.Txn(true)
	for _, e := range es {
		if err := s.applyEntry(txn, e); err != nil {
			txn.Abort()
			// Logged but not applied: the store no longer matches its log.
			s.failed = fmt.Errorf("characterize: store: apply: %w", err)
			return s.failed
		}
	}
	txn.Commit()
	if s.f != nil && s.size >= s.opts.CompactAt && !s.compactQueued {
		// One compaction at a time is asked for; Close waits for it
		// (it runs even if Close began meanwhile, so the snapshot the
		// log's size called for is written).
		s.compactQueued = true
		s.compacting.Add(1)
		go func() {
			defer s.compacting.Done()
			if err := s.compact(true); err != nil {
				s.log.Warn("characterize: store: compaction failed (the log keeps growing; retried later)", "err", err)
			}
		}()
	}
	return nil
}

// appendLocked writes buf at the end of the log and fsyncs it. On failure
// the log is cut back to where it was, so a later entry never follows a
// partial one; if even that fails the store refuses further writes.
func (s *Store) appendLocked(buf []byte) error {
	// Failpoints (tests): a write that puts k bytes on disk and fails, a
	// failing fsync.
	k, err := failpoint.Write("characterize.log-write", len(buf))
	if _, werr := s.f.Write(buf[:k]); werr != nil {
		err = werr
	}
	if err == nil {
		err = failpoint.Inject("characterize.log-sync")
	}
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		werr := fmt.Errorf("characterize: store: write %s: %w", logName(s.gen), err)
		if terr := s.f.Truncate(s.size); terr != nil {
			s.failed = fmt.Errorf("%w (and the partial entry could not be removed: %v)", werr, terr)
			return s.failed
		}
		return werr
	}
	s.size += int64(len(buf))
	return nil
}

// Compact writes a snapshot of everything stored and removes the logs it
// replaces. Writers go on, into a new log generation, while it runs.
func (s *Store) Compact() error { return s.compact(false) }

// compact is Compact; queued is set for the compaction write asked for,
// which Close waits for before it closes the log, so it runs even when
// Close has begun.
func (s *Store) compact(queued bool) error {
	if s.dir == "" {
		return nil
	}
	if queued {
		if err := failpoint.Inject("characterize.compact-queued"); err != nil {
			return err
		}
	}
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.mu.Lock()
	if queued {
		s.compactQueued = false
	}
	if s.closed && !queued {
		s.mu.Unlock()
		return ErrStoreClosed
	}
	old := s.gen
	if err := s.openLog(old + 1); err != nil {
		s.mu.Unlock()
		return err
	}
	snap := s.db.Txn(false) // consistent: every entry of the logs before old+1
	s.mu.Unlock()

	err := failpoint.Inject("characterize.snapshot-write")
	if err == nil {
		err = fsutil.WriteFileAtomic(filepath.Join(s.dir, snapshotName), 0o644, func(w io.Writer) error {
			return writeSnapshot(w, snap, old+1)
		})
	}
	if err != nil {
		return fmt.Errorf("characterize: store: snapshot: %w", err)
	}
	gens, err := listLogs(s.dir)
	if err != nil {
		return fmt.Errorf("characterize: store: %w", err)
	}
	for _, g := range gens {
		if g <= old {
			if err := os.Remove(filepath.Join(s.dir, logName(g))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("characterize: store: %w", err)
			}
		}
	}
	s.log.Info("characterize: store compacted", "dir", s.dir, "gen", old+1)
	return fsutil.SyncDir(s.dir)
}

func writeSnapshot(w io.Writer, txn *memdb.Txn, gen uint64) error {
	buf, err := appendEntry(nil, entry{Head: &snapHead{Version: storeVersion, Gen: gen}})
	if err != nil {
		return err
	}
	it, err := txn.Get(tabRecords, "id")
	if err != nil {
		return err
	}
	for o := it.Next(); o != nil; o = it.Next() {
		if buf, err = appendEntry(buf, entry{Rec: o.(*Record)}); err != nil {
			return err
		}
		if len(buf) > 256<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	fit, err := txn.Get(tabFiles, "id")
	if err != nil {
		return err
	}
	for o := fit.Next(); o != nil; o = fit.Next() {
		if f := o.(*FileSummary); f.ScannedSize > 0 {
			if buf, err = appendEntry(buf, entry{Scan: &scanMark{File: f.File, Size: f.ScannedSize}}); err != nil {
				return err
			}
		}
	}
	_, err = w.Write(buf)
	return err
}

// Close waits for a running compaction and closes the log.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.compacting.Wait()
	s.compactMu.Lock() // a Compact called directly
	defer s.compactMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		err := s.f.Close()
		s.f = nil
		if err != nil {
			return fmt.Errorf("characterize: store: %w", err)
		}
	}
	return nil
}

// applyEntry applies one logged entry to the tables.
func (s *Store) applyEntry(txn *memdb.Txn, e entry) error {
	switch {
	case e.Rec != nil:
		return applyRecord(txn, *e.Rec)
	case e.Scan != nil:
		f, err := fileRow(txn, e.Scan.File)
		if err != nil {
			return err
		}
		f.ScannedSize = e.Scan.Size
		return txn.Insert(tabFiles, f)
	}
	return nil
}

func clearScans(txn *memdb.Txn) error {
	it, err := txn.Get(tabFiles, "id")
	if err != nil {
		return err
	}
	var rows []*FileSummary
	for o := it.Next(); o != nil; o = it.Next() {
		if f := o.(*FileSummary); f.ScannedSize != 0 {
			rows = append(rows, f)
		}
	}
	for _, f := range rows {
		c := *f
		c.ScannedSize = 0
		if err := txn.Insert(tabFiles, &c); err != nil {
			return err
		}
	}
	return nil
}

// applyRecord stores r, keeping aggregates and revisit inheritance right.
func applyRecord(txn *memdb.Txn, r Record) error {
	old, err := txn.First(tabRecords, "id", r.File, r.Offset)
	if err != nil {
		return err
	}
	if old != nil {
		if err := account(txn, old.(*Record), -1); err != nil {
			return err
		}
	}
	if r.IsRevisit() {
		if err := resolve(txn, &r); err != nil {
			return err
		}
	}
	if err := txn.Insert(tabRecords, &r); err != nil {
		return err
	}
	if err := account(txn, &r, +1); err != nil {
		return err
	}
	if r.IsRevisit() || r.Digest == "" || r.PUID == "" {
		return nil
	}
	// Revisits of this payload: the unresolved ones get an original now,
	// and one resolved before may have a better one in r (the record its
	// WARC-Refers-To or Refers-To-Target-URI and -Date name, or an earlier
	// record with the digest), so every revisit's inheritance is what
	// resolve gives against all the originals stored, whatever the order
	// they arrived in.
	it, err := txn.Get(tabRecords, "revisit_digest", r.Digest)
	if err != nil {
		return err
	}
	var revisits []*Record
	for o := it.Next(); o != nil; o = it.Next() {
		revisits = append(revisits, o.(*Record))
	}
	for _, w := range revisits {
		c := *w
		if err := resolve(txn, &c); err != nil {
			return err
		}
		if c.Original == w.Original && c.Unresolved == w.Unresolved && reflect.DeepEqual(c.Result, w.Result) {
			continue
		}
		if err := account(txn, w, -1); err != nil {
			return err
		}
		if err := txn.Insert(tabRecords, &c); err != nil {
			return err
		}
		if err := account(txn, &c, +1); err != nil {
			return err
		}
	}
	return nil
}

// resolve gives a revisit its original's identification: the record its
// WARC-Refers-To names, else the record its WARC-Refers-To-Target-URI and
// -Date name, else the first record (by file and offset) with the same
// payload digest.
func resolve(txn *memdb.Txn, r *Record) error {
	var orig any
	var err error
	if r.RefersTo != "" {
		if orig, err = txn.First(tabRecords, "original_id", r.RefersTo); err != nil {
			return err
		}
	}
	if orig == nil && r.RefersToURI != "" && !r.RefersToDate.IsZero() {
		if orig, err = txn.First(tabRecords, "original_uri_date", uriDateKey(r.RefersToURI, r.RefersToDate)); err != nil {
			return err
		}
	}
	if orig == nil && r.Digest != "" {
		if orig, err = txn.First(tabRecords, "original_digest", r.Digest); err != nil {
			return err
		}
	}
	if orig == nil {
		r.Result, r.Original, r.Unresolved = Result{}, "", true
		return nil
	}
	inherit(r, orig.(*Record))
	return nil
}

func inherit(r *Record, orig *Record) {
	r.Result = orig.Result
	r.Original = fmt.Sprintf("%s %d", orig.File, orig.Offset)
	r.Unresolved = false
}

func fileRow(txn *memdb.Txn, file string) (*FileSummary, error) {
	o, err := txn.First(tabFiles, "id", file)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return &FileSummary{File: file}, nil
	}
	c := *o.(*FileSummary)
	return &c, nil
}

// account adds (sign +1) or removes (-1) a record's contribution to the
// file summary and the aggregates.
func account(txn *memdb.Txn, r *Record, sign int64) error {
	f, err := fileRow(txn, r.File)
	if err != nil {
		return err
	}
	f.Records += sign
	adds := map[string]Aggregate{}
	add := func(puid string, a Aggregate, fm Format) {
		if puid == "" {
			return
		}
		cur, ok := adds[puid]
		if !ok {
			cur = Aggregate{Name: fm.Name, Version: fm.Version}
		}
		cur.add(a)
		adds[puid] = cur
	}
	noted := r.Note != ""
	switch {
	case r.IsRevisit():
		f.Revisits += sign
		if r.Unresolved {
			f.Unresolved += sign
		} else {
			add(r.PUID, Aggregate{Revisits: sign}, r.Format)
		}
	default:
		f.Bytes += sign * r.Size
		if r.Size == 0 {
			f.Empty += sign
		}
		add(r.PUID, Aggregate{Objects: sign, Bytes: sign * r.Size}, r.Format)
		f.Nested += sign * int64(len(r.Nested))
		for _, n := range r.Nested {
			add(n.PUID, Aggregate{NestedObjects: sign, NestedBytes: sign * n.Size}, n.Format)
			noted = noted || n.Note != ""
		}
	}
	if noted {
		f.Noted += sign
	}
	if f.Records == 0 && f.ScannedSize == 0 {
		if err := deleteIfPresent(txn, tabFiles, f); err != nil {
			return err
		}
	} else if err := txn.Insert(tabFiles, f); err != nil {
		return err
	}
	for puid, a := range adds {
		o, err := txn.First(tabAggs, "id", r.File, puid)
		if err != nil {
			return err
		}
		row := Aggregate{File: r.File, PUID: puid, Name: a.Name, Version: a.Version}
		if o != nil {
			row = *o.(*Aggregate)
		}
		row.add(a)
		if row.zero() {
			if o != nil {
				if err := txn.Delete(tabAggs, o); err != nil {
					return err
				}
			}
			continue
		}
		if err := txn.Insert(tabAggs, &row); err != nil {
			return err
		}
	}
	return nil
}

func deleteIfPresent(txn *memdb.Txn, table string, obj any) error {
	if err := txn.Delete(table, obj); err != nil && !errors.Is(err, memdb.ErrNotFound) {
		return err
	}
	return nil
}

// Get returns the record stored for file and offset.
func (s *Store) Get(file string, offset int64) (Record, bool) {
	o, err := s.db.Txn(false).First(tabRecords, "id", file, offset)
	if err != nil || o == nil {
		return Record{}, false
	}
	return *o.(*Record), true
}

// Has reports whether a record is stored for file and offset.
func (s *Store) Has(file string, offset int64) bool {
	o, err := s.db.Txn(false).First(tabRecords, "id", file, offset)
	return err == nil && o != nil
}

// Records returns the records of file in offset order; with puids, only
// those whose payload or a nested object is of one of them.
func (s *Store) Records(file string, puids ...string) []Record {
	want := setOf(puids)
	var out []Record
	it, err := s.db.Txn(false).Get(tabRecords, "id_prefix", file)
	if err != nil {
		return nil
	}
	for o := it.Next(); o != nil; o = it.Next() {
		r := o.(*Record)
		if len(want) == 0 || holds(r, want) {
			out = append(out, *r)
		}
	}
	return out
}

func holds(r *Record, want map[string]bool) bool {
	if want[r.PUID] {
		return true
	}
	for _, n := range r.Nested {
		if want[n.PUID] {
			return true
		}
	}
	return false
}

func setOf(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			m[s] = true
		}
	}
	return m
}

// Formats returns, for each PUID given, the files holding it, with their
// counts (by PUID, then file).
func (s *Store) Formats(puids ...string) []Aggregate {
	txn := s.db.Txn(false)
	var out []Aggregate
	for _, p := range sortedKeys(setOf(puids)) {
		it, err := txn.Get(tabAggs, "format_prefix", p)
		if err != nil {
			continue
		}
		for o := it.Next(); o != nil; o = it.Next() {
			out = append(out, *o.(*Aggregate))
		}
	}
	return out
}

// Container returns a file's summary and the formats it holds (by PUID).
func (s *Store) Container(file string) (FileSummary, []Aggregate, bool) {
	txn := s.db.Txn(false)
	o, err := txn.First(tabFiles, "id", file)
	if err != nil || o == nil {
		return FileSummary{}, nil, false
	}
	var aggs []Aggregate
	it, err := txn.Get(tabAggs, "id_prefix", file)
	if err == nil {
		for a := it.Next(); a != nil; a = it.Next() {
			aggs = append(aggs, *a.(*Aggregate))
		}
	}
	return *o.(*FileSummary), aggs, true
}

// RiskHit is a file holding formats from a risk list.
type RiskHit struct {
	File    string      `json:"file"`
	Formats []Aggregate `json:"formats"`
}

// Risk returns the files holding any of the PUIDs (top level, nested or
// through revisits), by file.
func (s *Store) Risk(puids ...string) []RiskHit {
	by := map[string][]Aggregate{}
	for _, a := range s.Formats(puids...) {
		by[a.File] = append(by[a.File], a)
	}
	out := make([]RiskHit, 0, len(by))
	for _, f := range sortedKeys(by) {
		out = append(out, RiskHit{File: f, Formats: by[f]})
	}
	return out
}

// Files returns every file's summary, by name.
func (s *Store) Files() []FileSummary {
	var out []FileSummary
	it, err := s.db.Txn(false).Get(tabFiles, "id")
	if err != nil {
		return nil
	}
	for o := it.Next(); o != nil; o = it.Next() {
		out = append(out, *o.(*FileSummary))
	}
	return out
}

// Totals returns the aggregates summed over files, one per PUID (File is
// empty), by PUID.
func (s *Store) Totals() []Aggregate {
	by := map[string]*Aggregate{}
	it, err := s.db.Txn(false).Get(tabAggs, "format")
	if err != nil {
		return nil
	}
	for o := it.Next(); o != nil; o = it.Next() {
		a := o.(*Aggregate)
		t, ok := by[a.PUID]
		if !ok {
			t = &Aggregate{PUID: a.PUID, Name: a.Name, Version: a.Version}
			by[a.PUID] = t
		}
		t.add(*a)
	}
	out := make([]Aggregate, 0, len(by))
	for _, p := range sortedKeys(by) {
		out = append(out, *by[p])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ContainerReport is what one WARC file holds: its summary, its formats
// and (when asked for) its records.
type ContainerReport struct {
	Summary FileSummary `json:"summary"`
	Formats []Aggregate `json:"formats"`
	Records []Record    `json:"records,omitempty"`
}

// Report returns file's ContainerReport, with its records (only those
// holding one of puids, when given) when withRecords is set.
func (s *Store) Report(file string, withRecords bool, puids ...string) (ContainerReport, bool) {
	sum, aggs, ok := s.Container(file)
	if !ok {
		return ContainerReport{}, false
	}
	rep := ContainerReport{Summary: sum, Formats: aggs}
	if withRecords {
		rep.Records = s.Records(file, puids...)
	}
	return rep, true
}
