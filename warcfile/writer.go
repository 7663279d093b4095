package warcfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcio"
)

// Defaults for WriterOptions.
const (
	DefaultPrefix      = "WAYSIDE"
	DefaultMaxFileSize = 1 << 30 // 1 GiB, as Heritrix
	// OpenSuffix marks a WARC file still being written.
	OpenSuffix   = ".open"
	warcGzSuffix = ".warc.gz"
)

// WriterOptions configures a Writer.
type WriterOptions struct {
	// Dir is the directory WARC files are written to; it is created if
	// missing. The CDXJ side files and the writer's lock are kept there
	// whatever Storage says.
	Dir string
	// Storage holds the WARC files (default NewDir(Dir)).
	Storage Storage
	// Prefix starts every file name (default DefaultPrefix).
	Prefix string
	// Version is the WARC version written: Version11 (default) or Version10.
	Version string
	// MaxFileSize rotates to a new file before a record batch would make the
	// current file larger than this (default DefaultMaxFileSize). A single
	// batch larger than the limit still goes into one file.
	MaxFileSize int64
	// RotateAfter, when positive, also rotates to a new file before a
	// record batch once the current file has been open this long (by Now),
	// as Heritrix's and Zeno's time-based rotation do; a file always gets
	// at least one batch.
	RotateAfter time.Duration
	// CompressionLevel is the gzip level (1–9, default 6 via 0).
	CompressionLevel int
	// Hostname names this machine in file names and warcinfo (default
	// os.Hostname).
	Hostname string
	// Info holds extra warcinfo fields after software, format, conformsTo
	// and hostname (operator, description, isPartOf, robots, ...: see
	// InfoFields).
	Info []warcio.Field
	// NoCDXJ disables the CDXJ side file written beside each WARC file.
	NoCDXJ bool
	// Subscriber receives the wayside.Capture of every record written
	// (warcinfo records aside) once it is durable and its CDXJ line is
	// written, in the order the records are in their file. It is called
	// with the writer's lock held, so it must not block: give it a
	// wayside.Fanout, which never does. When it wants them
	// (wayside.RecordBytesWanter: a Fanout with a consumer that does), each
	// capture carries the record's uncompressed bytes in RecordBytes.
	Subscriber wayside.Subscriber
	// Scope is the dedup scope (collection) captures are filed under
	// (wayside.Capture.Scope).
	Scope string
	// MinFreeBytes is the free space kept on the WARC directory's file
	// system: a Write that would leave less fails with an error wrapping
	// fsutil.ErrLowSpace, before anything is written, so the indexes and
	// CDXJ files that may share the disk still have room and the files
	// close cleanly. 0 keeps no reserve: the write that finds the disk
	// full fails (ENOSPC) and is cut off the file.
	MinFreeBytes int64
	// Logger receives recovery reports and warnings (default: discard).
	Logger *slog.Logger
	// Now is the clock (default time.Now); tests may pin it.
	Now func() time.Time
	// CommitWindow is how long WaitDurableBatched lets records gather
	// before the fsync that makes them durable together (default
	// DefaultCommitWindow); WaitDurable never waits for it.
	CommitWindow time.Duration
}

// Group commit of WaitDurableBatched: the fsync starts CommitWindow after
// the first waiter arrives, or at once when CommitBatchRecords waiters or
// CommitBatchBytes of unsynced records have gathered.
const (
	DefaultCommitWindow = 10 * time.Millisecond
	CommitBatchRecords  = 64
	CommitBatchBytes    = 16 << 20
)

// Placement locates a written record.
type Placement struct {
	File   string // final base name (without .open)
	Offset int64
	Length int64
}

// Written is the receipt of one Write: where each record went and the
// sequence number WaitDurable waits for.
type Written struct {
	Placements []Placement
	captures   []wayside.Capture
	seq        uint64
}

// WriterStats counts what a Writer wrote.
type WriterStats struct {
	Files        int   // files opened
	Records      int64 // records written (warcinfo included)
	RawBytes     int64 // uncompressed record bytes
	StoredBytes  int64 // bytes on disk
	Syncs        int64 // fsync calls on WARC files
	RecoveryErrs int   // partial tails found on start
}

// Writer writes WARC records into gzip-compressed WARC files, one gzip
// member per record, with a warcinfo record at the start of every file,
// size-based rotation and Heritrix-style names
// (PREFIX-TIMESTAMP17-SERIAL-HOST.warc.gz). A file carries an ".open" suffix
// while it is written and is renamed when closed.
//
// Durability is group-committed: Write appends records; WaitDurable returns
// once an fsync covering them has completed. Concurrent waiters share one
// fsync. After each fsync the CDXJ lines of the newly durable records are
// appended to the CDXJ side file beside the WARC file (cdxj.SideFileName:
// NAME.warc.gz.cdxj), in write order.
//
// A Writer is safe for concurrent use.
type Writer struct {
	opts    WriterOptions
	log     *slog.Logger
	version string
	members *warcio.MemberPool
	// plainPool holds the buffers records are serialised and compressed
	// into, readPool the readers they are read back with.
	plainPool sync.Pool
	readPool  sync.Pool
	cdxj      bool // CDXJ files are written beside the WARC files

	mu         sync.Mutex
	cond       *sync.Cond
	st         Storage
	f          File
	name       string // final base name of the current file
	size       int64
	opened     time.Time // when the current file was created (by Now)
	warcinfoID string
	infoLen    int64
	serial     int
	written    uint64 // seq of the last written batch
	synced     uint64 // seq covered by the last completed fsync
	syncing    bool
	batched    int   // WaitDurableBatched callers waiting
	unsynced   int64 // bytes written since the last fsync started
	timer      bool  // a CommitWindow timer is armed
	failed     error
	closed     bool
	pending    []pendingLine  // captures and CDXJ lines of written, not yet durable records
	cdx        *cdxj.SideFile // side file of the current WARC file
	cdxName    string
	stats      WriterStats
	recovery   RecoveryReport
	lock       io.Closer
}

// Failpoints of the writer (package internal/failpoint): PointWrite is
// evaluated before each write(2) of a WARC file, as failpoint.Write (a
// disk filling up: only the first k bytes land, then the error);
// PointChunk between the write(2) calls of one record, so a crash test
// can kill the process inside a record. The CDXJ side file's appends are
// cdxj's point "cdxj.side-append".
const (
	PointWrite = "warcfile.write"
	PointChunk = "warcfile.between-chunks"
)

// write is f.Write through failpoint PointWrite.
func (w *Writer) write(b []byte) (int, error) {
	if k, err := failpoint.Write(PointWrite, len(b)); err != nil {
		n, _ := w.f.Write(b[:k])
		return n, err
	}
	return w.f.Write(b)
}

// pendingLine is a written record waiting for the fsync that makes it
// durable: then its CDXJ line is appended and its capture delivered.
type pendingLine struct {
	seq     uint64
	file    string
	line    []byte // with its newline; nil for records without one
	capture wayside.Capture
}

// OpenWriter prepares dir, recovers leftover ".open" files from an earlier
// crash (see Recover) and returns a Writer. Files are created lazily on the
// first Write.
func OpenWriter(opts WriterOptions) (*Writer, error) {
	if opts.Dir == "" {
		return nil, errors.New("warcfile: writer: no directory")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	switch opts.Version {
	case "":
		opts.Version = warcio.Version11
	case warcio.Version10, warcio.Version11:
	default:
		return nil, fmt.Errorf("warcfile: writer: unsupported WARC version %q (want 1.0 or 1.1)", opts.Version)
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	members, err := warcio.NewMemberPool(opts.CompressionLevel)
	if err != nil {
		return nil, fmt.Errorf("warcfile: writer: %w", err)
	}
	if opts.Hostname == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		opts.Hostname = h
	}
	opts.Hostname = sanitizeHost(opts.Hostname)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CommitWindow <= 0 {
		opts.CommitWindow = DefaultCommitWindow
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("warcfile: open warc dir: %w", err)
	}
	st, err := storageOf(opts.Storage, opts.Dir)
	if err != nil {
		return nil, err
	}
	var lock io.Closer
	if l, ok := st.(Locker); ok {
		if lock, err = l.Lock(); err != nil {
			return nil, err
		}
	}
	w := &Writer{opts: opts, log: opts.Logger, version: opts.Version, st: st, lock: lock, members: members}
	w.cond = sync.NewCond(&w.mu)
	w.plainPool.New = func() any { return new(bytes.Buffer) }
	w.readPool.New = func() any { return warcio.NewReader(bytes.NewReader(nil), "") }
	w.cdxj = !opts.NoCDXJ
	rep, err := Recover(opts.Dir, RecoverOptions{Logger: opts.Logger, NoCDXJ: opts.NoCDXJ, Storage: st})
	w.recovery = rep
	w.stats.RecoveryErrs = rep.PartialTails
	if err != nil {
		w.unlock()
		return nil, err
	}
	return w, nil
}

// Recovery returns the report of the recovery run by OpenWriter.
func (w *Writer) Recovery() RecoveryReport { return w.recovery }

// Version returns the WARC version written.
func (w *Writer) Version() string { return w.version }

// Dir returns the WARC directory.
func (w *Writer) Dir() string { return w.opts.Dir }

// Stats returns counters.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

func sanitizeHost(h string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_':
			return r
		}
		return '_'
	}, h)
}

// encoded is one record as it goes to its file.
type encoded struct {
	// member is the gzip member written.
	member []byte
	// rec is the record read back from its serialised bytes (nil for
	// warcinfo records).
	rec *warcio.Record
	// raw is the serialised record, kept (not recycled) for the
	// Subscriber's Capture.RecordBytes; nil when not kept.
	raw []byte
}

// compress serialises and gzips each record into its own member, and reads
// each serialised record back with warcio (the payload digest is not
// recomputed when one is declared: the declared one is the digest rule's
// answer), so its Capture and CDXJ line come from the one converter,
// warcio.Record.Capture, over the exact bytes written. With keep, each
// record is serialised into a buffer of its own, kept as encoded.raw.
func (w *Writer) compress(recs []*warcio.Draft, warcinfoID string, keep bool, raw *int64) ([]encoded, error) {
	mw := w.members.Get()
	defer w.members.Put(mw)
	rd := w.readPool.Get().(*warcio.Reader)
	defer w.readPool.Put(rd)
	pooled := w.plainPool.Get().(*bytes.Buffer)
	z := w.plainPool.Get().(*bytes.Buffer)
	defer func() {
		for _, b := range []*bytes.Buffer{pooled, z} {
			if b.Cap() <= 4<<20 { // a huge record's buffer is not kept
				w.plainPool.Put(b)
			}
		}
	}()
	out := make([]encoded, len(recs))
	for i, r := range recs {
		plain := pooled
		plain.Reset()
		if keep && !r.IsWarcinfo() {
			plain = bytes.NewBuffer(make([]byte, 0, len(r.Block)+headroom(r)))
		}
		r.MarshalInFile(plain, w.version, warcinfoID)
		*raw += int64(plain.Len())
		if !r.IsWarcinfo() {
			// A declared payload digest is what the digest rule takes: no
			// need to hash the payload again. Without one it is computed.
			skip := r.Get("WARC-Payload-Digest") != ""
			rd.Reset(smallBuf{bytes.NewReader(plain.Bytes())}, r.ID, warcio.Options{SkipPayloadDigest: skip})
			rec, err := rd.Next()
			if err != nil {
				return nil, fmt.Errorf("warcfile: record %s does not read back: %w", r.ID, err)
			}
			out[i].rec = rec
			if plain != pooled {
				out[i].raw = plain.Bytes()
			}
		}
		z.Reset()
		from := 0 // where already compressed bytes start in plain (0: none)
		if k := r.IncompressibleFrom; k > 0 && len(r.Block)-k >= minStored {
			from = plain.Len() - len(warcio.RecordEnd) - len(r.Block) + k
		}
		if _, err := mw.WriteMemberStoring(z, plain.Bytes(), from); err != nil {
			return nil, fmt.Errorf("warcfile: gzip record: %w", err)
		}
		// Compressed into a recycled buffer, then copied to one of the
		// exact size: how much a record compresses is not known before.
		out[i].member = bytes.Clone(z.Bytes())
	}
	return out, nil
}

// minStored is the smallest already compressed stretch of a record
// stored as it is rather than deflated (Draft.IncompressibleFrom): below,
// the saving is not worth a second deflate block.
const minStored = 512

// headroom is room enough for r's serialised header: its fields plus the
// fixed ones the encoder adds.
func headroom(r *warcio.Draft) int {
	n := 512
	for _, f := range r.Fields {
		n += len(f.Name) + len(f.Value) + 4
	}
	return n
}

// smallBuf makes warcio size its read buffer for a header, not for the
// whole record: the block is in memory already and is read through once.
type smallBuf struct{ *bytes.Reader }

func (smallBuf) Size() int64 { return 16 << 10 }

// Write appends recs, in order, to the current file (all to the same file)
// and returns where they went. The records are not durable before
// WaitDurable returns.
func (w *Writer) Write(recs ...*warcio.Draft) (Written, error) {
	if len(recs) == 0 {
		return Written{}, nil
	}
	w.mu.Lock()
	infoID := w.warcinfoID
	w.mu.Unlock()
	var raw int64
	keep := w.opts.Subscriber != nil && wayside.WantsRecordBytes(w.opts.Subscriber)
	enc, err := w.compress(recs, infoID, keep, &raw)
	if err != nil {
		return Written{}, err
	}
	total := int64(0)
	for _, e := range enc {
		total += int64(len(e.member))
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return Written{}, errors.New("warcfile: writer is closed")
	}
	if w.failed != nil {
		return Written{}, w.failed
	}
	if err := fsutil.CheckFree(w.opts.Dir, w.opts.MinFreeBytes, total); err != nil {
		return Written{}, err // it names the directory
	}
	for w.f != nil && w.size > w.infoLen && (w.size+total > w.opts.MaxFileSize || w.expiredLocked()) {
		if err := w.closeFileLocked(w.name); err != nil {
			return Written{}, err
		}
		if w.failed != nil {
			return Written{}, w.failed
		}
	}
	if w.f == nil {
		if err := w.openFileLocked(); err != nil {
			return Written{}, err
		}
	}
	if w.warcinfoID != infoID {
		raw = 0
		if enc, err = w.compress(recs, w.warcinfoID, keep, &raw); err != nil {
			return Written{}, err
		}
	}
	start := w.size
	wr := Written{Placements: make([]Placement, len(recs))}
	chunks := make([][]byte, len(enc))
	for i, e := range enc {
		chunks[i] = e.member
	}
	if len(enc) > 1 && total <= writeChunk {
		// A small batch (a request and its response) goes in one write(2).
		batch := make([]byte, 0, total)
		for _, e := range enc {
			batch = append(batch, e.member...)
		}
		chunks = [][]byte{batch}
	}
	for _, c := range chunks {
		if err := w.writeChunked(c); err != nil {
			w.undoLocked(start, err)
			return Written{}, fmt.Errorf("warcfile: write %s: %w", w.name+OpenSuffix, err)
		}
	}
	off := start
	for i, e := range enc {
		wr.Placements[i] = Placement{File: w.name, Offset: off, Length: int64(len(e.member))}
		off += int64(len(e.member))
	}
	w.size = off
	w.written++
	wr.seq = w.written
	w.unsynced += w.size - start
	w.stats.Records += int64(len(recs))
	w.stats.RawBytes += raw
	w.stats.StoredBytes += w.size - start
	for i, e := range enc {
		rec := e.rec
		if rec == nil {
			continue
		}
		rec.Relocate(wr.Placements[i].Offset, wr.Placements[i].Length, true)
		c := rec.Capture(w.name)
		c.Dir, c.Scope = w.opts.Dir, w.opts.Scope
		wr.captures = append(wr.captures, c)
		// Only the Subscriber gets the bytes: the receipt's captures go
		// back to the caller.
		c.RecordBytes = e.raw
		p := pendingLine{seq: wr.seq, file: w.name, capture: c}
		if w.cdxj && cdxj.HasLine(rec) {
			l := cdxj.FromCapture(c)
			p.line = l.Format(nil)
		}
		w.pending = append(w.pending, p)
	}
	return wr, nil
}

// expiredLocked reports whether the current file has been open for
// RotateAfter.
func (w *Writer) expiredLocked() bool {
	return w.opts.RotateAfter > 0 && w.opts.Now().Sub(w.opened) >= w.opts.RotateAfter
}

// InfoFields returns the warcinfo fields operator, description and
// isPartOf (the WARC 1.1 §6.5 names), leaving out empty ones, for
// WriterOptions.Info.
func InfoFields(operator, description, isPartOf string) []warcio.Field {
	var out []warcio.Field
	for _, f := range []warcio.Field{{Name: "operator", Value: operator}, {Name: "description", Value: description}, {Name: "isPartOf", Value: isPartOf}} {
		if f.Value != "" {
			out = append(out, f)
		}
	}
	return out
}

// writeChunk is the largest single write(2) issued: a big record goes to
// the file in several writes, as when streaming, so a crash can leave a
// partial record that recovery must (and does) handle.
const writeChunk = 16 << 10

func (w *Writer) writeChunked(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), writeChunk)
		if _, err := w.write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		if len(b) > 0 {
			if err := failpoint.Inject(PointChunk); err != nil {
				return err
			}
		}
	}
	return nil
}

// undoLocked cuts a failed partial write off the file so later records stay
// readable; if that fails too the writer refuses further writes.
func (w *Writer) undoLocked(start int64, cause error) {
	if err := w.f.Truncate(start); err == nil {
		if _, err := w.f.Seek(start, io.SeekStart); err == nil {
			w.size = start
			return
		}
	}
	w.failed = fmt.Errorf("warcfile: %s is unusable after a failed write: %w", w.name+OpenSuffix, cause)
}

// WaitDurable blocks until the records of wr are on stable storage (an fsync
// covering them completed) and their CDXJ lines are appended, then returns
// their captures (records written with capture metadata only).
func (w *Writer) WaitDurable(ctx context.Context, wr Written) ([]wayside.Capture, error) {
	if wr.seq == 0 {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.synced < wr.seq {
		if w.failed != nil {
			return nil, w.failed
		}
		if w.syncing {
			w.cond.Wait()
			continue
		}
		if err := w.syncLocked(); err != nil {
			return nil, err
		}
	}
	return wr.captures, nil
}

// WaitDurableBatched is WaitDurable for callers that need not wait in
// line (a crawler that hands the wait off and fetches on): the fsync
// covering wr does not start at once but CommitWindow after the first
// such waiter, or as soon as CommitBatchRecords waiters or
// CommitBatchBytes of unsynced records have gathered, so one fsync makes
// many records durable. The durability order is WaitDurable's: it returns
// only once an fsync covering wr completed and the CDXJ lines are
// appended.
func (w *Writer) WaitDurableBatched(ctx context.Context, wr Written) ([]wayside.Capture, error) {
	if wr.seq == 0 {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.batched++
	defer func() { w.batched-- }()
	for w.synced < wr.seq {
		if w.failed != nil {
			return nil, w.failed
		}
		if w.syncing {
			w.cond.Wait()
			continue
		}
		if w.batched >= CommitBatchRecords || w.unsynced >= CommitBatchBytes || w.closed {
			if err := w.syncLocked(); err != nil {
				return nil, err
			}
			continue
		}
		if !w.timer {
			w.timer = true
			time.AfterFunc(w.opts.CommitWindow, w.commitTimer)
		}
		w.cond.Wait()
	}
	return wr.captures, nil
}

// commitTimer runs the fsync the CommitWindow timer was armed for; records
// written meanwhile that still have waiters arm it again.
func (w *Writer) commitTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = false
	for w.syncing {
		w.cond.Wait()
	}
	if w.failed != nil || w.synced >= w.written {
		w.cond.Broadcast()
		return
	}
	w.syncLocked() // an error is in w.failed, which the waiters return
}

// syncLocked makes everything written so far durable. It drops the lock
// around the fsync so writers keep appending (group commit).
func (w *Writer) syncLocked() error {
	w.syncing = true
	target := w.written
	f := w.f
	var lines []pendingLine
	n := 0
	for n < len(w.pending) && w.pending[n].seq <= target {
		n++
	}
	lines = append(lines, w.pending[:n]...)
	w.pending = append(w.pending[:0:0], w.pending[n:]...)
	w.unsynced = 0
	w.mu.Unlock()
	var err error
	if f != nil {
		err = f.Sync()
	}
	w.mu.Lock()
	w.syncing = false
	w.stats.Syncs++
	defer w.cond.Broadcast()
	if err != nil {
		w.failed = fmt.Errorf("warcfile: fsync %s: %w", w.name+OpenSuffix, err)
		return w.failed
	}
	w.synced = target
	if err := w.appendCDXJLocked(lines); err != nil {
		w.failed = err
		return err
	}
	w.deliverLocked(lines)
	return nil
}

// deliverLocked hands the captures of newly durable records to the
// subscriber, in file order (concurrent fetches finish in any order; the
// fsync that covers them does not), after their CDXJ lines are written.
func (w *Writer) deliverLocked(lines []pendingLine) {
	if w.opts.Subscriber == nil {
		return
	}
	for _, l := range lines {
		if err := w.opts.Subscriber.OnCapture(context.Background(), l.capture); err != nil {
			w.log.Warn("warcfile: capture not delivered to its consumers", "uri", l.capture.URI, "file", l.file, "offset", l.capture.Offset, "err", err)
		}
	}
}

// appendCDXJLocked appends lines to the CDXJ side files of their WARC
// files, in durable order. The side file is on the durable path: it is
// what consumers catch up from, so a failure to write it stops the writer
// (the WARC file stays ".open" and recovery rebuilds its side file from the
// records; the append left no torn line).
func (w *Writer) appendCDXJLocked(lines []pendingLine) error {
	var buf bytes.Buffer
	flush := func() error {
		if buf.Len() == 0 {
			return nil
		}
		err := w.cdx.Append(buf.Bytes())
		buf.Reset()
		if err != nil {
			return fmt.Errorf("warcfile: %w", err)
		}
		return nil
	}
	for _, l := range lines {
		if l.line == nil {
			continue
		}
		name := cdxj.SideFileName(l.file)
		if name != w.cdxName {
			if err := flush(); err != nil {
				return err
			}
			if err := w.openCDXJLocked(name); err != nil {
				return err
			}
		}
		buf.Write(l.line)
	}
	return flush()
}

func (w *Writer) openCDXJLocked(name string) error {
	if w.cdx != nil {
		w.cdx.Close()
	}
	w.cdx, w.cdxName = nil, name
	f, err := cdxj.OpenSideFile(filepath.Join(w.opts.Dir, name))
	if err != nil {
		return fmt.Errorf("warcfile: %w", err)
	}
	w.cdx = f
	return nil
}

func (w *Writer) openFileLocked() error {
	now := w.opts.Now().UTC()
	var f File
	var name string
	for tries := 0; ; tries++ {
		name = fmt.Sprintf("%s-%s-%05d-%s%s", w.opts.Prefix, now.Format("20060102150405")+fmt.Sprintf("%03d", now.Nanosecond()/1e6),
			w.serial, w.opts.Hostname, warcGzSuffix)
		w.serial++
		var err error
		f, err = w.st.Create(name + OpenSuffix)
		if err == nil {
			if _, err := w.st.Stat(name); err == nil {
				f.Close()
				w.st.Remove(name + OpenSuffix)
				continue
			}
			break
		}
		if !errors.Is(err, fs.ErrExist) || tries > 1000 {
			return fmt.Errorf("warcfile: create warc file: %w", err)
		}
	}
	info := warcio.NewWarcinfo(name, w.version, w.opts.Hostname, now, w.opts.Info)
	var raw int64
	enc, err := w.compress([]*warcio.Draft{info}, "", false, &raw)
	if err == nil {
		_, err = f.Write(enc[0].member)
	}
	if err != nil {
		f.Close()
		w.st.Remove(name + OpenSuffix)
		return fmt.Errorf("warcfile: write warcinfo to %s: %w", name+OpenSuffix, err)
	}
	// The new directory entry must survive a crash before any record in it
	// is reported durable.
	if err := w.st.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("warcfile: sync warc dir: %w", err)
	}
	w.f, w.name, w.size, w.warcinfoID = f, name, int64(len(enc[0].member)), info.ID
	w.infoLen = w.size
	w.opened = now
	w.stats.Files++
	w.stats.Records++
	w.stats.RawBytes += raw
	w.stats.StoredBytes += w.size
	w.log.Debug("warcfile: opened WARC file", "file", name+OpenSuffix)
	return nil
}

// closeFileLocked makes the current file durable, appends its remaining
// CDXJ lines and renames it to its final name. name is the file the caller
// means to close; if another goroutine rotated it meanwhile, nothing is done.
func (w *Writer) closeFileLocked(name string) error {
	// Everything written to the file must be durable, with its CDXJ line,
	// before it is finished. Each fsync drops the lock, and records written
	// meanwhile need one more, so loop until none is left; from then on
	// the lock is held to the rename.
	for {
		if w.f == nil || w.name != name {
			return nil // closed by another goroutine meanwhile
		}
		if w.failed != nil {
			// Left ".open": the next OpenWriter recovers it and rebuilds
			// its CDXJ from the records.
			return w.failed
		}
		if w.syncing {
			w.cond.Wait()
			continue
		}
		if w.synced < w.written {
			if err := w.syncLocked(); err != nil {
				return err
			}
			continue
		}
		break
	}
	if err := w.finishCDXJLocked(); err != nil {
		w.failed = err
		return err
	}
	if err := w.f.Close(); err != nil {
		w.failed = fmt.Errorf("warcfile: close %s: %w", w.name+OpenSuffix, err)
		return w.failed
	}
	w.f = nil
	if err := w.st.Rename(w.name+OpenSuffix, w.name); err != nil {
		w.failed = fmt.Errorf("warcfile: rename %s: %w", filepath.Join(w.opts.Dir, w.name+OpenSuffix), err)
		return w.failed
	}
	if err := w.st.Sync(); err != nil {
		w.failed = fmt.Errorf("warcfile: sync warc dir: %w", err)
		return w.failed
	}
	w.log.Debug("warcfile: closed WARC file", "file", w.name)
	w.name, w.size, w.warcinfoID = "", 0, ""
	return nil
}

// finishCDXJLocked closes the CDXJ file of the file being closed and
// rewrites it sorted (crash-safe: temporary file, fsync, rename). It runs
// before the WARC file loses its ".open" suffix, so a closed WARC file
// always has a sorted, durable CDXJ file; a crash before that leaves the
// WARC file ".open", and recovery rebuilds its CDXJ.
func (w *Writer) finishCDXJLocked() error {
	if !w.cdxj {
		return nil
	}
	if w.cdx != nil {
		err := w.cdx.Close()
		w.cdx, w.cdxName = nil, ""
		if err != nil {
			return fmt.Errorf("warcfile: close CDXJ of %s: %w", w.name, err)
		}
	}
	// No side file: no record of this file is indexed.
	if err := cdxj.SortSideFile(filepath.Join(w.opts.Dir, cdxj.SideFileName(w.name))); err != nil {
		return fmt.Errorf("warcfile: %w", err)
	}
	return nil
}

// Rotate closes the current file (making it durable and renaming it); the
// next Write opens a new one.
func (w *Writer) Rotate() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closeFileLocked(w.name)
}

// Close makes everything durable, closes and renames the current file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	err := w.closeFileLocked(w.name)
	if w.f != nil { // failed: the file stays ".open" for recovery
		w.f.Close()
		w.f = nil
	}
	if w.cdx != nil {
		w.cdx.Close()
		w.cdx = nil
	}
	w.closed = true
	w.cond.Broadcast()
	w.unlock()
	return err
}

func (w *Writer) unlock() {
	if w.lock != nil {
		w.lock.Close() // releases the flock
		w.lock = nil
	}
}

// Check verifies the writer's invariants (bbolt style): the open file on
// disk is exactly as long as the bytes written to it and scans as complete
// records up to that length, durable sequence numbers never run ahead of
// written ones, and every CDXJ line still queued belongs to a record that is
// not yet durable. It returns nil or an error listing every violation.
func (w *Writer) Check() error {
	w.mu.Lock()
	for w.syncing {
		w.cond.Wait()
	}
	defer w.mu.Unlock()
	var errs []error
	if w.synced > w.written {
		errs = append(errs, fmt.Errorf("synced seq %d ahead of written seq %d", w.synced, w.written))
	}
	for _, l := range w.pending {
		if l.seq <= w.synced {
			errs = append(errs, fmt.Errorf("CDXJ line of durable seq %d still queued", l.seq))
			break
		}
	}
	if w.f != nil {
		path := filepath.Join(w.opts.Dir, w.name+OpenSuffix)
		fi, err := w.f.Stat()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("stat %s: %w", path, err))
		case fi.Size() != w.size:
			errs = append(errs, fmt.Errorf("%s is %d bytes, writer wrote %d", path, fi.Size(), w.size))
		default:
			var end int64
			serr := warcio.ScanMembers(io.NewSectionReader(w.f, 0, w.size), func(off, length int64, _ http.Header, _ []byte) { end = off + length })
			if serr != nil || end != w.size {
				errs = append(errs, fmt.Errorf("%s: complete records end at %d of %d bytes: %v", path, end, w.size, serr))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("warcfile: writer check: %w", err)
	}
	return nil
}
