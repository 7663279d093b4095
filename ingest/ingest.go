package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcfile"
)

// Config configures an Ingester.
type Config struct {
	// Dirs are watched for *.warc, *.warc.gz and their ".open" forms. A
	// directory that does not exist yet (the crawler has not created it)
	// is skipped until it appears. An entry that is a location URL
	// (s3://BUCKET/PREFIX?endpoint=…) is a prefix followed as a directory
	// is: new and grown objects are read by range, and their captures
	// carry the object's location URL as their File.
	Dirs []string
	// Locations lists and opens the remote prefixes of Dirs (nil: one of
	// its own, closed by Run).
	Locations *warcfile.Locations
	// PollInterval between directory scans (default 2s).
	PollInterval time.Duration
	// Checkpoint is the file holding the durable progress (required).
	Checkpoint string
	// CDXJDir receives one CDXJ side file per WARC, NAME.cdxj for the
	// WARC file NAME (its name without ".open"; cdxj.SideFileName); ""
	// writes none.
	CDXJDir string
	// Policy decides which complete captures seed the dedup index (scope,
	// match mode, statuses, minimum size), as for a crawl
	// (dedupindex.Deduper.SeedEntry).
	Policy dedupindex.Policy
	// CrawlLog is an optional Heritrix crawl.log to tail for capture
	// status.
	CrawlLog string
	// Recovered, when set, is called once the CDXJ files agree with the
	// checkpoint and before the first capture is produced: consumers catch
	// up from the CDXJ files there.
	Recovered func(ctx context.Context) error
	// Counters receives the ingest counters (default: new ones, see
	// Ingester.Counters).
	Counters *Counters
	// MinFreeBytes pauses ingest while a file system it writes to (the
	// checkpoint's, CDXJDir's and SpaceDirs') has less free space than
	// this, so that the index, the CDXJ files and the checkpoint are not
	// cut short by a full disk; ingest resumes by itself once space is
	// freed. 0 checks nothing beforehand. Either way a write that fails
	// for want of space (ENOSPC, EDQUOT) pauses ingest too, and the batch
	// is read again once space is freed.
	MinFreeBytes int64
	// SpaceDirs are further directories whose free space MinFreeBytes
	// guards (the embedded index's, the capture index's, ...).
	SpaceDirs []string
	// ObserveBatch, when set, is told how long each batch took to become
	// durable.
	ObserveBatch func(time.Duration)
	// Logger receives warnings and progress (default: discard).
	Logger *slog.Logger
}

// Counters are the ingester's running totals, for metrics.
type Counters struct {
	Records   atomic.Int64 // WARC records read
	Originals atomic.Int64 // originals put into the dedup index
	Revisits  atomic.Int64 // revisit records seen (never indexed)
	Bytes     atomic.Int64 // stored WARC bytes consumed
	Errors    atomic.Int64
	Truncated atomic.Int64 // finished files with a partial record at the end
	LagBytes  atomic.Int64 // bytes present in watched files but not yet ingested
	LagNanos  atomic.Int64 // age of the oldest unread bytes
}

// Ingester follows WARC directories as crawlers write them and produces a
// wayside.Capture for every complete record: originals seed the dedup
// index (never revisits), every indexed record gets a line in the WARC's
// CDXJ file, and every capture goes to the Subscriber (a wayside.Fanout).
// Progress is checkpointed durably after each batch so a restart (even
// after kill -9) neither misses nor repeats a record in the index or the
// CDXJ files; a consumer may see the captures of the batch in flight at a
// crash again (at least once, identified by File and Offset).
type Ingester struct {
	cfg   Config
	idx   dedupindex.Index
	dedup *dedupindex.Deduper
	sub   wayside.Subscriber
	ctr   *Counters
	log   *slog.Logger
	clog  *crawlLog // nil without Config.CrawlLog

	locs *warcfile.Locations

	mu        sync.Mutex
	cp        *checkpoint
	lastError string
	paused    string // why ingest waits (a full disk); "" while it runs
	down      string // the watched stores that cannot be reached; "" when all answer

	// wacz holds the WARC files listed in each WACZ file, by path, so an
	// unchanged WACZ is not opened again at every poll (only the scan
	// goroutine uses it).
	wacz map[string]waczListing
}

// batchSize is the number of records indexed per durable batch.
const batchSize = 512

// New returns an Ingester writing originals to idx and captures to sub
// (nil: none). It touches no file before Run.
func New(cfg Config, idx dedupindex.Index, sub wayside.Subscriber) (*Ingester, error) {
	if cfg.Checkpoint == "" && len(cfg.Dirs) > 0 {
		return nil, errors.New("ingest: no checkpoint file")
	}
	if idx == nil {
		return nil, errors.New("ingest: no index")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Counters == nil {
		cfg.Counters = &Counters{}
	}
	d, err := dedupindex.NewDeduper(idx, cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if sub == nil {
		sub = wayside.SubscriberFunc(func(context.Context, wayside.Capture) error { return nil })
	}
	for i, d := range cfg.Dirs {
		if warcfile.IsURL(d) {
			if err := warcfile.CheckLocation(d); err != nil {
				return nil, fmt.Errorf("ingest: watch entry %d: %w", i, err)
			}
		}
	}
	in := &Ingester{cfg: cfg, idx: idx, dedup: d, sub: sub, ctr: cfg.Counters, log: cfg.Logger.With("component", "ingest"), locs: cfg.Locations}
	if in.locs == nil {
		in.locs = warcfile.NewLocations(nil)
	}
	if cfg.CrawlLog != "" {
		in.clog = newCrawlLog(cfg.CrawlLog)
	}
	return in, nil
}

// Counters returns the running totals.
func (in *Ingester) Counters() *Counters { return in.ctr }

// Status reports progress per file.
func (in *Ingester) Status() Status {
	in.updateLag()
	in.mu.Lock()
	defer in.mu.Unlock()
	st := Status{
		Dirs:      append([]string{}, in.cfg.Dirs...),
		Records:   in.ctr.Records.Load(),
		Originals: in.ctr.Originals.Load(),
		Revisits:  in.ctr.Revisits.Load(),
		Bytes:     in.ctr.Bytes.Load(),
		Errors:    in.ctr.Errors.Load(),
		LagBytes:  in.ctr.LagBytes.Load(),
		LastError: in.lastError,
		Paused:    strings.TrimPrefix(strings.Join([]string{in.paused, in.down}, "; "), "; "),
		Files:     []FileProgress{},
	}
	if in.cp == nil {
		return st
	}
	for _, fs := range in.cp.Files {
		st.Files = append(st.Files, FileProgress{
			Name: fs.Name, Path: fs.Path, Size: fs.Size, Offset: fs.Offset, Records: fs.Records,
			Open: fs.Open, Done: fs.Done, Truncated: fs.Truncated, TruncatedAt: fs.TruncatedAt, Error: fs.Error,
		})
	}
	sort.Slice(st.Files, func(i, j int) bool { return st.Files[i].Name < st.Files[j].Name })
	return st
}

// CrawlLog summarises the tailed crawl.log (nil without one).
func (in *Ingester) CrawlLog() *CrawlLogStatus { return in.clog.status() }

// Run follows the directories until ctx is cancelled. The batch in
// progress when ctx ends is finished and checkpointed before Run returns.
// It returns an error only when progress can no longer be recorded (the
// index or the checkpoint cannot be written).
func (in *Ingester) Run(ctx context.Context) error {
	if in.cfg.Locations == nil {
		defer in.locs.Close()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if in.clog != nil {
		wg.Add(1)
		go func() { defer wg.Done(); in.clog.run(ctx, in.cfg.PollInterval) }()
	}
	if len(in.cfg.Dirs) == 0 {
		if err := in.recovered(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
	cp, err := loadCheckpoint(in.cfg.Checkpoint)
	if err != nil {
		return err
	}
	if err := in.restoreCDXJ(cp); err != nil {
		return err
	}
	in.mu.Lock()
	in.cp = cp
	in.mu.Unlock()
	if err := in.recovered(ctx); err != nil || ctx.Err() != nil {
		return err // stopped during the catch-up: no file is read
	}
	t := time.NewTicker(in.cfg.PollInterval)
	defer t.Stop()
	for {
		if err := in.scan(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// recovered calls Config.Recovered (the consumers' catch-up). One that
// ctx's end stopped (an orderly shutdown during start-up) is no failure:
// nothing is lost, the consumers catch up from the CDXJ files at the
// next start.
func (in *Ingester) recovered(ctx context.Context) error {
	if in.cfg.Recovered == nil {
		return nil
	}
	err := in.cfg.Recovered(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		in.log.Info("ingest: stopped before the consumers caught up from the CDXJ files; they catch up at the next start")
		return nil
	}
	return err
}

// warcBaseName returns the name a WARC file has once closed, and whether
// the file is a WARC at all.
func warcBaseName(name string) (base string, open, ok bool) {
	base, open = strings.CutSuffix(name, ".open")
	if strings.HasPrefix(base, ".") {
		return "", false, false
	}
	return base, open, strings.HasSuffix(base, ".warc") || strings.HasSuffix(base, ".warc.gz")
}

type seenFile struct {
	path     string // the local path, or the location URL of a remote file
	dir      string // the watched directory holding a local file
	base     string
	member   bool // a WARC file stored in a WACZ (path: warcio.JoinMember)
	open     bool
	size     int64
	mtime    time.Time
	dev, ino uint64
	// remote is set for an object under a watched prefix URL (watch);
	// version is its ETag.
	remote  bool
	watch   string
	version string
}

// list returns the WARC files of the watched directories and prefixes; a
// prefix whose store cannot be listed is left out, its error in down.
func (in *Ingester) list(ctx context.Context) ([]seenFile, []error, error) {
	var out []seenFile
	var down []error
	waczSeen := map[string]bool{}
	defer func() {
		for p := range in.wacz {
			if !waczSeen[p] {
				delete(in.wacz, p) // gone: forget its listing
			}
		}
	}()
	for _, dir := range in.cfg.Dirs {
		if warcfile.IsURL(dir) {
			objs, err := in.locs.List(ctx, dir)
			if err != nil {
				down = append(down, remoteError{dir, err})
				continue
			}
			for _, o := range objs {
				base, open, ok := warcBaseName(o.Name)
				if !ok {
					continue
				}
				out = append(out, seenFile{path: o.Loc, base: base, open: open, size: o.Size, mtime: o.ModTime,
					remote: true, watch: dir, version: o.Version})
			}
			continue
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // not created yet by the crawler
			}
			return nil, nil, fmt.Errorf("ingest: read dir: %w", err)
		}
		for _, e := range ents {
			if isWACZName(e.Name()) && e.Type().IsRegular() {
				waczSeen[filepath.Join(dir, e.Name())] = true
				files, err := in.waczFiles(dir, e.Name())
				if err != nil {
					in.noteError(err)
				}
				out = append(out, files...)
				continue
			}
			base, open, ok := warcBaseName(e.Name())
			if !ok || e.IsDir() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			fi, err := os.Stat(p)
			if err != nil {
				continue // renamed between ReadDir and Stat: seen next scan
			}
			sf := seenFile{path: p, dir: dir, base: base, open: open, size: fi.Size(), mtime: fi.ModTime()}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				sf.dev, sf.ino = uint64(st.Dev), uint64(st.Ino)
			}
			out = append(out, sf)
		}
	}
	// A file seen both as X.open and X during a rename: keep the final name.
	sort.Slice(out, func(i, j int) bool {
		if out[i].base != out[j].base {
			return out[i].base < out[j].base
		}
		return !out[i].open && out[j].open
	})
	dedup := out[:0]
	for i, f := range out {
		if i > 0 && out[i-1].base == f.base {
			continue
		}
		dedup = append(dedup, f)
	}
	return dedup, down, nil
}

func (in *Ingester) scan(ctx context.Context) error {
	files, down, err := in.list(ctx)
	if err != nil {
		in.noteError(err)
		return nil
	}
	defer in.updateLag()
	failed := map[string]bool{} // watched prefixes whose store failed in this scan
	for _, e := range down {
		failed[e.(remoteError).watch] = true
	}
	defer func() { in.noteDown(down) }()
	for _, f := range files {
		if ctx.Err() != nil {
			return nil
		}
		if f.remote && failed[f.watch] {
			continue
		}
		if err := in.lowSpace(); err != nil {
			in.pause(err)
			return nil
		}
		if err := in.ingestFile(ctx, f); err != nil {
			if fsutil.IsDiskFull(err) {
				// Nothing half-written is kept: the CDXJ file is cut back
				// to its checkpointed size and the batch is read again.
				in.pause(err)
				return nil
			}
			if isFatal(err) {
				return err
			}
			var re remoteError
			if errors.As(err, &re) {
				failed[re.watch] = true
				down = append(down, re)
				continue
			}
			in.noteError(err)
		}
	}
	if err := in.lowSpace(); err != nil {
		in.pause(err)
		return nil
	}
	in.resume()
	return nil
}

// spaceDirs are the directories ingest writes to.
func (in *Ingester) spaceDirs() []string {
	dirs := append([]string{filepath.Dir(in.cfg.Checkpoint)}, in.cfg.SpaceDirs...)
	if in.cfg.CDXJDir != "" {
		dirs = append(dirs, in.cfg.CDXJDir)
	}
	return dirs
}

// lowSpace returns an error when a file system ingest writes to has less
// than MinFreeBytes free.
func (in *Ingester) lowSpace() error {
	for _, d := range in.spaceDirs() {
		if err := fsutil.CheckFree(d, in.cfg.MinFreeBytes, 0); err != nil {
			return err
		}
	}
	return nil
}

// pause records why ingest waits; it tries again on the next poll.
func (in *Ingester) pause(cause error) {
	msg := fmt.Sprintf("disk full: %v; ingest resumes once space is freed", cause)
	in.mu.Lock()
	was := in.paused
	in.paused = msg
	in.mu.Unlock()
	if was == "" {
		in.log.Error("ingest paused", "cause", cause)
	}
}

// resume clears a pause once ingest made progress again.
func (in *Ingester) resume() {
	in.mu.Lock()
	was := in.paused
	in.paused = ""
	in.mu.Unlock()
	if was != "" {
		in.log.Info("ingest resumed: space was freed")
	}
}

// noteDown records the watched stores a scan could not reach (Status.Paused
// names them); ingest of their files resumes, from the checkpoint, on the
// first scan that reaches them again.
func (in *Ingester) noteDown(down []error) {
	var msgs []string
	for _, e := range down {
		re := e.(remoteError)
		msgs = append(msgs, fmt.Sprintf("%s cannot be read (%v); ingest of it resumes once the store answers", re.watch, re.err))
	}
	msg := strings.Join(msgs, "; ")
	in.mu.Lock()
	was := in.down
	in.down = msg
	in.mu.Unlock()
	switch {
	case msg != "" && was == "":
		in.ctr.Errors.Add(1)
		in.log.Error("ingest paused: object storage unreachable", "cause", msg)
	case msg == "" && was != "":
		in.log.Info("ingest resumed: object storage answers again")
	}
}

// fatalError stops the ingester: the index or the checkpoint cannot be
// written, so continuing could lose track of what was stored.
type fatalError struct{ err error }

func (f fatalError) Error() string { return f.err.Error() }
func (f fatalError) Unwrap() error { return f.err }

func isFatal(err error) bool {
	var f fatalError
	return errors.As(err, &f)
}

func (in *Ingester) noteError(err error) {
	in.ctr.Errors.Add(1)
	in.mu.Lock()
	in.lastError = err.Error()
	in.mu.Unlock()
	in.log.Warn("ingest error", "err", err)
}

func (in *Ingester) state(f seenFile) *fileState {
	in.mu.Lock()
	defer in.mu.Unlock()
	st := in.cp.Files[f.base]
	if st == nil {
		st = &fileState{Name: f.base, Path: f.path, Dev: f.dev, Ino: f.ino, Version: f.version}
		in.cp.Files[f.base] = st
		return st
	}
	if (st.Dev != f.dev || st.Ino != f.ino || st.Version != f.version) && f.size < st.Offset {
		// A different, shorter file took the name: start it afresh.
		in.log.Warn("ingest: file replaced, re-reading from the start", "file", f.base, "old_offset", st.Offset, "size", f.size)
		*st = fileState{Name: f.base, Path: f.path, Dev: f.dev, Ino: f.ino, Version: f.version}
	}
	st.Dev, st.Ino, st.Path, st.Version = f.dev, f.ino, f.path, f.version
	return st
}

func (in *Ingester) ingestFile(ctx context.Context, f seenFile) error {
	st := in.state(f)
	in.mu.Lock()
	st.Size, st.Open = f.size, f.open
	unread := f.size > st.Offset
	if st.Done && !unread {
		in.mu.Unlock()
		return nil
	}
	if unread && st.pendingSince.IsZero() {
		st.pendingSince = time.Now()
	}
	in.mu.Unlock()
	if !unread {
		if !f.open && !st.Done && in.quiet(f) {
			return in.finish(st, false)
		}
		return nil
	}
	return in.readFile(ctx, f, st)
}

// quiet reports whether a file written without ".open" (wget and other
// tools write under the final name) has stopped changing for a few poll
// intervals: only then is reaching its end taken as the file being done.
func (in *Ingester) quiet(f seenFile) bool {
	return time.Since(f.mtime) >= 3*in.cfg.PollInterval
}

// finish records that a closed WARC file has been read to its end (or to
// a partial record at its end, truncated): its CDXJ file, appended in
// durable order while the WARC grew, is rewritten sorted (crash-safe), then
// the checkpoint says Done. A crash in between sorts it again on restart.
// A file that grows after all is read on and finished again.
func (in *Ingester) finish(st *fileState, truncated bool) error {
	in.mu.Lock()
	name := st.Name
	in.mu.Unlock()
	if in.cfg.CDXJDir != "" {
		if err := cdxj.SortSideFile(in.cdxjPath(name)); err != nil {
			return fatalError{fmt.Errorf("ingest: %w", err)}
		}
	}
	in.mu.Lock()
	st.Done = !truncated
	if !truncated {
		st.Truncated, st.TruncatedAt = false, 0
	}
	in.mu.Unlock()
	return in.save()
}

// updateLag recomputes the lag gauges.
func (in *Ingester) updateLag() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cp == nil {
		return
	}
	var lag int64
	var oldest time.Time
	for _, st := range in.cp.Files {
		if st.Size > st.Offset && !st.Truncated {
			lag += st.Size - st.Offset
			if !st.pendingSince.IsZero() && (oldest.IsZero() || st.pendingSince.Before(oldest)) {
				oldest = st.pendingSince
			}
		}
	}
	in.ctr.LagBytes.Store(lag)
	if oldest.IsZero() {
		in.ctr.LagNanos.Store(0)
	} else {
		in.ctr.LagNanos.Store(int64(time.Since(oldest)))
	}
}

func (in *Ingester) save() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.cp.save(in.cfg.Checkpoint); err != nil {
		return fatalError{err}
	}
	return nil
}

// restoreCDXJ cuts every CDXJ file back to its checkpointed size: lines
// written by a batch whose checkpoint did not make it to disk are dropped
// (the batch is read again).
func (in *Ingester) restoreCDXJ(cp *checkpoint) error {
	if in.cfg.CDXJDir == "" {
		return nil
	}
	for _, st := range cp.Files {
		p := in.cdxjPath(st.Name)
		cut, err := cdxj.CutBack(p, st.CDXJSize)
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		if cut {
			in.log.Info("ingest: dropped CDXJ lines of an unfinished batch", "file", p, "checkpoint", st.CDXJSize)
		}
	}
	return nil
}

func fileIno(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
