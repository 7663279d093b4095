package characterize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/warcfile"
	"github.com/wayside-archive/wayside/warcio"
)

// Options configure a Characterizer.
type Options struct {
	// Store receives the results (required; OpenStore("", ...) keeps them
	// in memory). The Characterizer does not close it.
	Store *Store
	// Identifier identifies payloads (default: a new Engine with
	// DefaultLimits; share one Engine between Characterizers).
	Identifier *Identifier
	// Dirs are searched for the WARC files captures name (after the
	// capture's own Dir), and read whole by Resync when there are no
	// CDXJDirs.
	Dirs []string
	// CDXJDirs hold the CDXJ files the producer writes beside its WARC
	// files (package consumers): Resync reads their lines and
	// characterizes the records the store lacks.
	CDXJDirs []string
	// Workers is the number of identification goroutines (default
	// GOMAXPROCS); Queue how many captures may wait for them (default 64
	// per worker). OnCapture blocks while the queue is full: behind a
	// Fanout that only ever delays this consumer.
	Workers, Queue int
	// RecordBudget bounds the bytes of Capture.RecordBytes held by
	// captures waiting for a worker (default wayside.DefaultRecordBudget;
	// negative: none are kept). A capture that arrives with its record
	// bytes (from the crawl writer, through a Fanout) is characterized from
	// them; one that does not fit, or comes without them, is read back
	// from its WARC file.
	RecordBudget int64
	// CatchUp runs Resync once in the background at start: records the
	// Characterizer had not stored before a crash or while it was off are
	// characterized.
	CatchUp bool
	// OnCommit is called with the records of each durable batch, after
	// the store has them (acknowledgement).
	OnCommit func([]Record)
	// Logger receives failures and catch-up reports.
	Logger *slog.Logger
}

// Stats count a Characterizer's work.
type Stats struct {
	// Queued captures wait for a worker or for their batch's commit.
	Queued int64 `json:"queued"`
	// Records were characterized and stored; Bytes is their payload bytes.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// ReadBack counts the records read back from their WARC files (the
	// others came with their bytes, Capture.RecordBytes, or from a file
	// scan).
	ReadBack int64 `json:"read_back"`
	// Failed counts captures that could not be read (or stored);
	// LastError is the last such failure.
	Failed    int64  `json:"failed"`
	LastError string `json:"last_error,omitempty"`
}

// Characterizer is the consumer of captures that identifies their
// payloads: a wayside.Subscriber (add it to the Fanout of `wayside crawl`
// or `wayside serve`) and a wayside.Resyncer (it catches up by reading the
// WARC files in Dirs). Identification runs on its own workers, off the
// write path; results go to the Store in durable batches.
type Characterizer struct {
	opts  Options
	id    *Identifier
	store *Store
	log   *slog.Logger

	jobs   chan job
	commit chan done
	bufs   bufPool
	budget *wayside.RecordBudget
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // workers
	cwg    sync.WaitGroup // committer
	bg     sync.WaitGroup // catch-up

	closeMu sync.RWMutex
	closed  bool

	mu       sync.Mutex
	inflight int64
	idle     chan struct{} // closed when inflight drops to 0
	failed   error         // the store failed: nothing more can be stored
	st       Stats
}

// job is one capture to characterize: read from its WARC file (rec nil) or
// already read by a file scan.
type job struct {
	c    wayside.Capture
	rec  *warcio.Record
	done func(error)
}

// done is a worker's result on its way to the committer.
type done struct {
	r   Record
	ok  bool
	err error
	j   job
}

// New starts a Characterizer.
func New(opts Options) (*Characterizer, error) {
	if opts.Store == nil {
		return nil, errors.New("characterize: no store")
	}
	if opts.Identifier == nil {
		e, err := NewEngine()
		if err != nil {
			return nil, err
		}
		opts.Identifier = NewIdentifier(e, Limits{})
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Queue <= 0 {
		opts.Queue = 64 * opts.Workers
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RecordBudget == 0 {
		opts.RecordBudget = wayside.DefaultRecordBudget
	}
	c := &Characterizer{opts: opts, id: opts.Identifier, store: opts.Store, log: opts.Logger,
		jobs: make(chan job, opts.Queue), commit: make(chan done, opts.Queue),
		budget: wayside.NewRecordBudget(opts.RecordBudget)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for range opts.Workers {
		c.wg.Add(1)
		go c.work()
	}
	c.cwg.Add(1)
	go c.committer()
	if opts.CatchUp {
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			if err := c.Resync(c.ctx); err != nil && c.ctx.Err() == nil {
				c.log.Warn("characterize: catch-up incomplete", "err", err)
			}
		}()
	}
	return c, nil
}

// Store returns the store results go to.
func (c *Characterizer) Store() *Store { return c.store }

// Identifier returns the identifier in use.
func (c *Characterizer) Identifier() *Identifier { return c.id }

// OnCapture queues a durable capture for characterization and returns once
// it is queued (not yet characterized: OnCommit and Flush tell when it is
// stored). Records that are not captures (request, warcinfo, metadata) are
// ignored. A capture carrying its record's bytes (Capture.RecordBytes) is
// characterized from them, within Options.RecordBudget; any other is read
// back from its WARC file. It implements wayside.Subscriber.
func (c *Characterizer) OnCapture(ctx context.Context, cp wayside.Capture) error {
	if !cp.IsCapture() {
		return nil
	}
	if cp.IsRevisit() {
		cp.RecordBytes = nil // never read: the store resolves revisits
	}
	return c.enqueue(ctx, job{c: cp})
}

// WantsRecordBytes reports that the Characterizer uses
// Capture.RecordBytes (wayside.RecordBytesWanter): the crawl writer then
// hands each record's bytes along, and no record is read back.
func (c *Characterizer) WantsRecordBytes() bool { return c.opts.RecordBudget > 0 }

func (c *Characterizer) enqueue(ctx context.Context, j job) error {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return errors.New("characterize: closed")
	}
	c.mu.Lock()
	if c.failed != nil {
		err := c.failed
		c.mu.Unlock()
		return err
	}
	c.inflight++
	c.st.Queued = c.inflight
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	c.mu.Unlock()
	held := c.budget.Take(&j.c)
	select {
	case c.jobs <- j:
		return nil
	case <-ctx.Done():
		c.budget.Release(held)
		c.finish(1)
		return ctx.Err()
	case <-c.ctx.Done():
		c.budget.Release(held)
		c.finish(1)
		return c.ctx.Err()
	}
}

// finish marks n queued captures as handled.
func (c *Characterizer) finish(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight -= n
	c.st.Queued = c.inflight
	if c.inflight == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// Flush waits until every capture queued before the call is stored (or
// failed), or ctx ends.
func (c *Characterizer) Flush(ctx context.Context) error {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	if idle == nil {
		return c.err()
	}
	select {
	case <-idle:
		return c.err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Characterizer) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// Stats returns the counters.
func (c *Characterizer) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

func (c *Characterizer) work() {
	defer c.wg.Done()
	rd := &reader{files: map[string]warcfile.ReadFile{}, r: new(warcio.Reader), locs: warcfile.NewLocations(nil)}
	defer func() {
		for _, f := range rd.files {
			f.Close()
		}
		rd.locs.Close()
	}()
	for j := range c.jobs {
		d := done{j: j}
		rec, cp := j.rec, j.c
		if rec == nil && (cp.Type == "" || !cp.IsRevisit()) {
			rec, d.err = c.read(rd, cp)
			if d.err == nil && cp.Type == "" {
				// Located by a CDXJ line only: the record tells the rest.
				cp = rec.Capture(cp.File)
			}
		}
		if d.err == nil && cp.IsCapture() {
			d.r, d.ok = c.id.Capture(rec, cp), true
		}
		// Results never point into the payload: recycle its buffer.
		if rec != nil {
			c.bufs.put(rec.Payload)
			rec.Payload = nil
		}
		c.budget.Release(int64(len(j.c.RecordBytes)))
		d.j.rec, d.j.c.RecordBytes = nil, nil
		c.commit <- d
	}
}

// reader is a worker's means of reading records: the WARC files it read
// from recently, one warcio.Reader reused for every record, and the
// Locations it opens files through (its backends kept for reuse).
type reader struct {
	files map[string]warcfile.ReadFile
	r     *warcio.Reader
	locs  *warcfile.Locations
}

// read returns a capture's record: parsed from the bytes it carries, or
// read back from its WARC file.
func (c *Characterizer) read(rd *reader, cp wayside.Capture) (*warcio.Record, error) {
	// The capture carries the digest: not computed again (nor used to
	// share results between identical payloads on this path).
	opts := c.readOptions()
	opts.SkipPayloadDigest = true
	if cp.RecordBytes != nil {
		rd.r.Reset(bytes.NewReader(cp.RecordBytes), cp.File, opts)
		rec, err := rd.r.Next()
		if err != nil {
			return nil, fmt.Errorf("characterize: %s offset %d: record bytes: %w", cp.File, cp.Offset, err)
		}
		rec.Offset = cp.Offset
		return rec, nil
	}
	c.mu.Lock()
	c.st.ReadBack++
	c.mu.Unlock()
	files := rd.files
	f := files[cp.File]
	if f == nil {
		dirs := c.opts.Dirs
		if cp.Dir != "" {
			dirs = append([]string{cp.Dir}, dirs...)
		}
		rd.locs.Dirs = dirs
		var err error
		if f, err = rd.locs.Open(context.Background(), cp.File); err != nil { // a WARC file, one in a WACZ, a remote one
			return nil, fmt.Errorf("characterize: %w", err)
		}
		if len(files) >= 4 {
			for k, old := range files {
				old.Close()
				delete(files, k)
			}
		}
		files[cp.File] = f
	}
	rec, err := rd.r.ReadRecordAt(f, cp.File, cp.Offset, cp.Length, opts)
	if err != nil {
		return nil, fmt.Errorf("characterize: %w", err)
	}
	return rec, nil
}

// readOptions read records with their payloads, in recycled buffers.
func (c *Characterizer) readOptions() warcio.Options {
	return warcio.Options{KeepPayload: int(c.id.lim.MaxObject), PayloadBuffer: c.bufs.get}
}

// commitLinger is how long the committer waits for more results before
// writing a batch: one log write, fsync and memdb transaction for all
// that arrive meanwhile. During a crawl results trickle in one by one;
// 50 ms makes batches of tens of records for a delay no reader notices.
const commitLinger = 50 * time.Millisecond

// committer stores the workers' results in batches: one log write and
// fsync for whatever has accumulated.
func (c *Characterizer) committer() {
	defer c.cwg.Done()
	for d := range c.commit {
		// Group commit: gather what arrives within commitLinger (one log
		// write and fsync for the lot).
		batch := []done{d}
		linger := time.NewTimer(commitLinger)
	more:
		for len(batch) < 1024 {
			select {
			case d, ok := <-c.commit:
				if !ok {
					break more
				}
				batch = append(batch, d)
			case <-linger.C:
				break more
			}
		}
		linger.Stop()
		c.store1(batch)
	}
}

func (c *Characterizer) store1(batch []done) {
	recs := make([]Record, 0, len(batch))
	for _, d := range batch {
		if d.ok {
			recs = append(recs, d.r)
		}
	}
	serr := c.store.Put(recs...)
	c.mu.Lock()
	for _, d := range batch {
		err := d.err
		if err == nil && serr != nil {
			err = serr
		}
		if err != nil {
			c.st.Failed++
			c.st.LastError = err.Error()
			continue
		}
		if !d.ok {
			continue // not a capture
		}
		c.st.Records++
		c.st.Bytes += d.r.Size
	}
	if serr != nil && c.failed == nil {
		c.failed = serr
	}
	c.mu.Unlock()
	if serr != nil {
		c.log.Warn("characterize: results not stored", "records", len(recs), "err", serr)
	} else if c.opts.OnCommit != nil && len(recs) > 0 {
		c.opts.OnCommit(recs)
	}
	for _, d := range batch {
		if d.err != nil {
			c.log.Warn("characterize: capture not characterized", "file", d.j.c.File, "offset", d.j.c.Offset, "uri", d.j.c.URI, "err", d.err)
		}
		if d.j.done != nil {
			err := d.err
			if err == nil {
				err = serr
			}
			d.j.done(err)
		}
	}
	c.finish(int64(len(batch)))
}

// Close stops the catch-up, lets the queued captures be characterized and
// stored, and stops the workers. It does not close the Store. It returns
// the store failure, if any.
func (c *Characterizer) Close() error {
	c.closeMu.Lock()
	if c.closed {
		c.closeMu.Unlock()
		return c.err()
	}
	c.closed = true
	c.closeMu.Unlock()
	c.cancel()
	c.bg.Wait()
	close(c.jobs)
	c.wg.Wait()
	close(c.commit)
	c.cwg.Wait()
	return c.err()
}

// FileStats is what scanning one WARC file did.
type FileStats struct {
	File string `json:"file"`
	// Records were read; Captures characterized (or found already stored,
	// Skipped); RawBytes is the stored size read.
	Records  int64 `json:"records"`
	Captures int64 `json:"captures"`
	Skipped  int64 `json:"skipped,omitempty"`
	RawBytes int64 `json:"raw_bytes"`
	// Problems lists what could not be read (file and offset) and
	// captures that could not be stored.
	Problems []error `json:"-"`
}

// ScanFile reads the WARC file at path and characterizes every capture in
// it (with skipStored, only those the store does not hold yet), on the
// workers, returning once all of them are stored. A closed file read to
// its end is marked scanned. Unreadable records are listed in
// FileStats.Problems; the error is for failures that stop the scan.
func (c *Characterizer) ScanFile(ctx context.Context, path string, skipStored bool, progress func(rawBytes int64)) (FileStats, error) {
	name := strings.TrimSuffix(filepath.Base(path), warcio.OpenSuffix)
	st := FileStats{File: name}
	size, err := warcio.Size(path) // a file, or a WARC file in a WACZ
	if err != nil {
		return st, fmt.Errorf("characterize: %w", err)
	}
	r, err := warcio.Open(path, c.readOptions())
	if err != nil {
		return st, fmt.Errorf("characterize: %w", err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	var pmu sync.Mutex
	var problems []error
	onDone := func(err error) {
		if err != nil {
			pmu.Lock()
			problems = append(problems, err)
			pmu.Unlock()
		}
		wg.Done()
	}
	complete := false
	var scanErr error
	for {
		if err := ctx.Err(); err != nil {
			scanErr = err
			break
		}
		rec, err := r.Next()
		if err == io.EOF {
			complete = true
			break
		}
		if err != nil {
			pmu.Lock()
			problems = append(problems, err)
			pmu.Unlock()
			if errors.Is(err, warcio.ErrTruncated) {
				break
			}
			continue // a corrupt record: Next resynchronises (or ends)
		}
		st.Records++
		st.RawBytes += rec.Length
		if progress != nil {
			progress(rec.Length)
		}
		cp := rec.Capture(name)
		if !cp.IsCapture() {
			c.bufs.put(rec.Payload)
			continue
		}
		if rec.Length == 0 {
			pmu.Lock()
			problems = append(problems, fmt.Errorf("characterize: %s offset %d: record shares a gzip member with another record: it cannot be located and is not characterized", name, rec.Offset))
			pmu.Unlock()
			continue
		}
		if skipStored && c.store.Has(name, cp.Offset) {
			c.bufs.put(rec.Payload)
			st.Skipped++
			continue
		}
		st.Captures++
		wg.Add(1)
		if err := c.enqueue(ctx, job{c: cp, rec: rec, done: onDone}); err != nil {
			wg.Done()
			scanErr = err
			break
		}
	}
	wg.Wait()
	st.Problems = problems
	if scanErr != nil {
		return st, scanErr
	}
	open := strings.HasSuffix(path, warcio.OpenSuffix)
	if complete && !open && len(problems) == 0 {
		if err := c.store.MarkScanned(name, size); err != nil {
			return st, err
		}
	}
	return st, nil
}

// warcFile is a WARC file found in Dirs.
type warcFile struct {
	path, name string
	size       int64
	open       bool
}

// listWARCs lists the WARC files in dirs (".open" ones too; a file seen
// under both names counts once, under its final name).
func listWARCs(dirs []string) ([]warcFile, error) {
	var out []warcFile
	seen := map[string]bool{}
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("characterize: %w", err)
		}
		for _, e := range ents {
			n := e.Name()
			base, open := strings.CutSuffix(n, warcio.OpenSuffix)
			if e.IsDir() || strings.HasPrefix(base, ".") || !(strings.HasSuffix(base, ".warc") || strings.HasSuffix(base, ".warc.gz")) {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			out = append(out, warcFile{path: filepath.Join(dir, n), name: base, size: fi.Size(), open: open})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return !out[i].open && out[j].open
	})
	kept := out[:0]
	for _, f := range out {
		if !seen[f.name] {
			seen[f.name] = true
			kept = append(kept, f)
		}
	}
	return kept, nil
}

// Resync characterizes what the store lacks. With CDXJDirs it reads the
// CDXJ files there and characterizes each record whose line names a file
// and offset the store does not hold; otherwise it reads every WARC file in
// Dirs not marked scanned at its current size, characterizing the captures
// the store does not hold. It implements wayside.Resyncer.
func (c *Characterizer) Resync(ctx context.Context) error {
	if len(c.opts.CDXJDirs) > 0 {
		return c.resyncCDXJ(ctx)
	}
	files, err := listWARCs(c.opts.Dirs)
	if err != nil {
		return err
	}
	var errs []error
	n := 0
	for _, f := range files {
		if !f.open {
			if sum, _, ok := c.store.Container(f.name); ok && sum.ScannedSize == f.size {
				continue
			}
		}
		st, err := c.ScanFile(ctx, f.path, true, nil)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		n += int(st.Captures)
		for _, p := range st.Problems {
			if !errors.Is(p, warcio.ErrTruncated) || !f.open {
				errs = append(errs, p)
			}
		}
	}
	if n > 0 {
		c.log.Info("characterize: caught up", "captures", n)
	}
	return errors.Join(errs...)
}

var _ wayside.Subscriber = (*Characterizer)(nil)
var _ wayside.Resyncer = (*Characterizer)(nil)

// resyncCDXJ characterizes the records named by lines of the CDXJ files in
// CDXJDirs that the store does not hold, and waits until they are stored.
func (c *Characterizer) resyncCDXJ(ctx context.Context) error {
	paths, err := cdxj.ListSideFiles(c.opts.CDXJDirs...)
	if err != nil {
		return fmt.Errorf("characterize: %w", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	onDone := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		wg.Done()
	}
	n := 0
	for _, p := range paths {
		if err := c.feedCDXJ(ctx, p, &wg, onDone, &n); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			if ctx.Err() != nil {
				break
			}
		}
	}
	wg.Wait()
	if n > 0 {
		c.log.Info("characterize: caught up from the CDXJ files", "records", n)
	}
	return errors.Join(errs...)
}

func (c *Characterizer) feedCDXJ(ctx context.Context, path string, wg *sync.WaitGroup, onDone func(error), n *int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("characterize: %w", err)
	}
	defer f.Close()
	r := cdxj.NewReader(f, path)
	for {
		l, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("characterize: %w", err)
		}
		if l.Filename == "" || l.Offset < 0 || c.store.Has(l.Filename, l.Offset) {
			continue
		}
		wg.Add(1)
		*n++
		if err := c.enqueue(ctx, job{c: wayside.Capture{File: l.Filename, Offset: l.Offset, Length: max(l.Length, 0)}, done: onDone}); err != nil {
			wg.Done()
			return err
		}
	}
}
