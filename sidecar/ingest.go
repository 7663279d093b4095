package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/sidecar/api"
)

// Ingester watches WARC directories and indexes complete records as they
// land: originals into the dedup index (never revisits), every record into a
// per-WARC CDXJ file, and every capture to the server's subscribers (the
// live MementoMap). Progress is checkpointed durably after each batch so a
// restart (even after kill -9) neither misses nor repeats a record.
type Ingester struct {
	cfg     Config
	idx     dedupindex.Index
	metrics *Metrics
	log     *slog.Logger
	emit    func(ctx context.Context, c wayside.Capture)

	// restored is called once the checkpoint is loaded and the CDXJ files
	// are cut back to it, with the CDXJ size per WARC (the live map feeds
	// what it had not merged).
	restored func(sizes map[string]int64) error

	flushMu   sync.Mutex // held while a batch goes to the index, CDXJ, subscribers and checkpoint
	mu        sync.Mutex
	cp        *checkpoint
	lastError string
	loaded    bool
}

// batchSize is the number of records indexed per durable batch.
const batchSize = 512

func newIngester(cfg Config, idx dedupindex.Index, m *Metrics, log *slog.Logger, emit func(context.Context, wayside.Capture)) *Ingester {
	return &Ingester{cfg: cfg, idx: idx, metrics: m, log: log.With("component", "ingest"), emit: emit}
}

// IngestStatus is the wire form of the ingest progress.
type IngestStatus = api.IngestStatus

// Status reports progress per file.
func (in *Ingester) Status() IngestStatus {
	in.mu.Lock()
	defer in.mu.Unlock()
	st := IngestStatus{
		Dirs:      append([]string{}, in.cfg.Ingest.Dirs...),
		Records:   in.metrics.IngestRecords.Load(),
		Originals: in.metrics.IngestOriginals.Load(),
		Revisits:  in.metrics.IngestRevisits.Load(),
		Bytes:     in.metrics.IngestBytes.Load(),
		Errors:    in.metrics.IngestErrors.Load(),
		LagBytes:  in.metrics.IngestLagBytes.Load(),
		LastError: in.lastError,
		Files:     []api.FileProgress{},
	}
	if in.cp == nil {
		return st
	}
	for _, fs := range in.cp.Files {
		st.Files = append(st.Files, api.FileProgress{
			Name: fs.Name, Path: fs.Path, Size: fs.Size, Offset: fs.Offset, Records: fs.Records,
			Open: fs.Open, Done: fs.Done, Truncated: fs.Truncated, TruncatedAt: fs.TruncatedAt, Error: fs.Error,
		})
	}
	sort.Slice(st.Files, func(i, j int) bool { return st.Files[i].Name < st.Files[j].Name })
	return st
}

// Run polls the directories until ctx is cancelled. The batch in progress
// when ctx ends is finished and checkpointed before Run returns.
func (in *Ingester) Run(ctx context.Context) error {
	if len(in.cfg.Ingest.Dirs) == 0 {
		<-ctx.Done()
		return nil
	}
	cp, err := loadCheckpoint(in.cfg.Ingest.Checkpoint)
	if err != nil {
		return err
	}
	if err := in.restoreCDXJ(cp); err != nil {
		return err
	}
	in.mu.Lock()
	in.cp = cp
	in.mu.Unlock()
	if in.restored != nil {
		if err := in.restored(in.cdxjSizes()); err != nil {
			return err
		}
	}
	t := time.NewTicker(in.cfg.Ingest.PollInterval)
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
	path     string
	base     string
	open     bool
	size     int64
	mtime    time.Time
	dev, ino uint64
}

func (in *Ingester) list() ([]seenFile, error) {
	var out []seenFile
	for _, dir := range in.cfg.Ingest.Dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // not created yet by the crawler
			}
			return nil, fmt.Errorf("sidecar: ingest: read dir: %w", err)
		}
		for _, e := range ents {
			base, open, ok := warcBaseName(e.Name())
			if !ok || e.IsDir() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			fi, err := os.Stat(p)
			if err != nil {
				continue // renamed between ReadDir and Stat: seen next scan
			}
			sf := seenFile{path: p, base: base, open: open, size: fi.Size(), mtime: fi.ModTime()}
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
	return dedup, nil
}

func (in *Ingester) scan(ctx context.Context) error {
	files, err := in.list()
	if err != nil {
		in.noteError(err)
		return nil
	}
	for _, f := range files {
		if ctx.Err() != nil {
			return nil
		}
		if err := in.ingestFile(ctx, f); err != nil {
			if isFatal(err) {
				return err
			}
			in.noteError(err)
		}
	}
	in.updateLag()
	return nil
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
	in.metrics.IngestErrors.Add(1)
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
		st = &fileState{Name: f.base, Path: f.path, Dev: f.dev, Ino: f.ino}
		in.cp.Files[f.base] = st
		return st
	}
	if (st.Dev != f.dev || st.Ino != f.ino) && f.size < st.Offset {
		// A different, shorter file took the name: start it afresh.
		in.log.Warn("ingest: file replaced, re-reading from the start", "file", f.base, "old_offset", st.Offset, "size", f.size)
		*st = fileState{Name: f.base, Path: f.path, Dev: f.dev, Ino: f.ino}
	}
	st.Dev, st.Ino, st.Path = f.dev, f.ino, f.path
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
		if !f.open && !st.Done {
			in.mu.Lock()
			st.Done, st.Truncated = true, false
			in.mu.Unlock()
			return in.save()
		}
		return nil
	}
	return in.readFile(ctx, f, st)
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
	in.metrics.IngestLagBytes.Store(lag)
	if oldest.IsZero() {
		in.metrics.IngestLagNanos.Store(0)
	} else {
		in.metrics.IngestLagNanos.Store(int64(time.Since(oldest)))
	}
}

func (in *Ingester) save() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.cp.save(in.cfg.Ingest.Checkpoint); err != nil {
		return fatalError{err}
	}
	return nil
}

// isOriginal reports whether a capture is an original the dedup index and
// the CDX endpoint may point revisits at.
func (in *Ingester) isOriginal(c wayside.Capture) bool {
	if c.Type != "response" && c.Type != "resource" {
		return false
	}
	if c.Digest == "" || c.Digest == digest.EmptySHA1 || c.PayloadLength < in.cfg.Ingest.MinPayload {
		return false
	}
	if c.Type == "response" && (c.Status < 200 || c.Status > 299) {
		return false
	}
	return c.URI != "" && c.RecordID != "" && !c.Date.IsZero() && c.Length > 0
}

// restoreCDXJ cuts every CDXJ file back to its checkpointed size: lines
// written by a batch whose checkpoint did not make it to disk are dropped
// (the batch is read again).
func (in *Ingester) restoreCDXJ(cp *checkpoint) error {
	if in.cfg.Ingest.CDXJDir == "-" {
		return nil
	}
	for _, st := range cp.Files {
		p := in.cdxjPath(st.Name)
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.Size() > st.CDXJSize {
			in.log.Info("ingest: dropping CDXJ lines of an unfinished batch", "file", p, "size", fi.Size(), "checkpoint", st.CDXJSize)
			if err := os.Truncate(p, st.CDXJSize); err != nil {
				return fmt.Errorf("sidecar: ingest: %w", err)
			}
		}
	}
	return nil
}

// cdxjSizes returns the checkpointed CDXJ size per WARC base name.
func (in *Ingester) cdxjSizes() map[string]int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	sizes := map[string]int64{}
	if in.cp == nil || in.cfg.Ingest.CDXJDir == "-" {
		return sizes
	}
	for name, st := range in.cp.Files {
		if st.CDXJSize > 0 {
			sizes[name] = st.CDXJSize
		}
	}
	return sizes
}

// quiesced runs fn while no batch is in flight, with the CDXJ sizes every
// capture delivered so far is covered by.
func (in *Ingester) quiesced(fn func(sizes map[string]int64) error) error {
	in.flushMu.Lock()
	defer in.flushMu.Unlock()
	return fn(in.cdxjSizes())
}

func ioSection(f *os.File, off, n int64) io.Reader { return io.NewSectionReader(f, off, n) }

func newTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

func fileIno(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
