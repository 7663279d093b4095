package dedupindex

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

// Format is an import file format.
type Format string

// Import formats.
const (
	FormatAuto Format = "auto" // by name, then by content
	FormatWARC Format = "warc" // WARC (or ARC) files, gzip-compressed or not
	FormatCDX  Format = "cdx"  // IA CDX, 9 or 11 fields (or as its " CDX" header says)
	FormatCDXJ Format = "cdxj" // pywb CDXJ
)

// ParseFormat parses a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case FormatAuto, FormatWARC, FormatCDX, FormatCDXJ:
		return f, nil
	case "":
		return FormatAuto, nil
	}
	return "", fmt.Errorf("dedupindex: unknown import format %q (want auto, warc, cdx or cdxj)", s)
}

// ImportOptions configures Import.
type ImportOptions struct {
	// Scope receives the originals (default DefaultScope).
	Scope string
	// Match must be the policy the crawl will use: under MatchURL keys
	// carry the SURT of the target URI.
	Match Match
	// Format of every file (default FormatAuto).
	Format Format
	// Strict stops at the first bad record instead of reporting it and
	// continuing.
	Strict bool
	// BatchSize is the number of originals written per durable batch
	// (default 1000).
	BatchSize int
	// Progress, when set, is called after every batch with the running
	// totals and the file being read.
	Progress func(file string, sofar ImportStats)
}

// FileStats counts what Import did with one file.
type FileStats struct {
	File      string `json:"file"`
	Format    Format `json:"format"`
	Records   int64  `json:"records"`   // records or lines read
	Originals int64  `json:"originals"` // originals added to the index
	Present   int64  `json:"present"`   // originals whose key was already indexed
	Revisits  int64  `json:"revisits"`  // revisit records or lines skipped
	Skipped   int64  `json:"skipped"`   // other records: requests, metadata, non-HTTP, empty payloads
	Bad       int64  `json:"bad"`       // unreadable records or lines
	Bytes     int64  `json:"bytes"`     // stored bytes read
}

func (s *FileStats) add(o FileStats) {
	s.Records += o.Records
	s.Originals += o.Originals
	s.Present += o.Present
	s.Revisits += o.Revisits
	s.Skipped += o.Skipped
	s.Bad += o.Bad
	s.Bytes += o.Bytes
}

// ImportStats is the result of Import: totals, per-file counts and the bad
// records found (at most maxImportErrors are kept).
type ImportStats struct {
	FileStats
	Files  []FileStats `json:"files"`
	Errors []error     `json:"-"`
}

const maxImportErrors = 1000

// ImportError locates a bad record or line.
type ImportError struct {
	File   string
	Offset int64 // byte offset in the stored file, -1 when Line is set
	Line   int   // 1-based line number for CDX/CDXJ, 0 for WARC
	Err    error
}

func (e *ImportError) Error() string {
	var we *warcio.Error
	if errors.As(e.Err, &we) && we.Offset == e.Offset {
		return e.Err.Error() // warcio's error already names file and offset
	}
	if e.Line > 0 {
		return fmt.Sprintf("dedupindex: import %s line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("dedupindex: import %s offset %d: %v", e.File, e.Offset, e.Err)
}

func (e *ImportError) Unwrap() error { return e.Err }

// ErrBadRecord is wrapped by ImportErrors about records or lines that are
// not usable originals for a reason other than a read error.
var ErrBadRecord = errors.New("dedupindex: bad record")

// Import seeds idx from earlier crawls: the response and resource records
// of WARC files that Deduper.SeedEntry admits (complete, of an http(s) URI,
// 2xx, non-empty: the rule the ingester applies too), or the lines of CDX
// or CDXJ indexes (2xx, with a digest; an index line cannot tell a
// truncated or damaged record, so import WARC files where possible).
// Revisits are never taken as originals; requests, metadata, warcinfo and
// non-HTTP records are skipped. Bad records are counted and reported in
// ImportStats.Errors and reading continues, unless opts.Strict. Originals
// are written in durable batches, so an error or interruption loses at most
// the batch in flight and nothing already indexed. The error is non-nil
// only when a file cannot be read at all, the index fails, the context is
// cancelled, or (Strict) a bad record is found.
func Import(ctx context.Context, idx Index, paths []string, opts ImportOptions) (ImportStats, error) {
	if opts.Scope == "" {
		opts.Scope = DefaultScope
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.Format == "" {
		opts.Format = FormatAuto
	}
	d, err := NewDeduper(idx, Policy{Scope: opts.Scope, Match: opts.Match})
	if err != nil {
		return ImportStats{}, err
	}
	im := &importer{ctx: ctx, idx: idx, opts: opts, dedup: d}
	for _, p := range paths {
		err := im.file(p)
		im.stats.Files = append(im.stats.Files, im.cur)
		im.stats.add(im.cur)
		if err != nil {
			return im.stats, err
		}
	}
	return im.stats, nil
}

type importer struct {
	ctx   context.Context
	idx   Index
	dedup *Deduper // the policy deciding which captures are originals
	opts  ImportOptions
	stats ImportStats
	cur   FileStats
	batch []Entry
}

// bad records a bad record; in strict mode it returns the error to stop.
func (im *importer) bad(e *ImportError) error {
	im.cur.Bad++
	if len(im.stats.Errors) < maxImportErrors {
		im.stats.Errors = append(im.stats.Errors, e)
	}
	if im.opts.Strict {
		return e
	}
	return nil
}

// original validates o and queues it for the index; the error is about o.
func (im *importer) original(o Original) error {
	d, err := digest.Normalize(o.Digest)
	if err != nil {
		return err
	}
	k := im.opts.Match.Key(im.opts.Scope, o.TargetURI, d)
	o, err = CheckOriginal(k, o)
	if err != nil {
		return err
	}
	im.batch = append(im.batch, Entry{Key: k, Original: o})
	return nil
}

// flushFull writes the queued originals when a batch is full.
func (im *importer) flushFull() error {
	if len(im.batch) >= im.opts.BatchSize {
		return im.flush()
	}
	return nil
}

// flush writes the queued originals.
func (im *importer) flush() error {
	if len(im.batch) == 0 {
		return nil
	}
	added, err := PutEntries(im.ctx, im.idx, im.batch)
	if err != nil {
		return fmt.Errorf("dedupindex: import %s: write to index: %w", im.cur.File, err)
	}
	for _, a := range added {
		if a {
			im.cur.Originals++
		} else {
			im.cur.Present++
		}
	}
	im.batch = im.batch[:0]
	if im.opts.Progress != nil {
		sofar := im.stats
		sofar.add(im.cur)
		im.opts.Progress(im.cur.File, sofar)
	}
	return nil
}

func (im *importer) file(path string) (err error) {
	im.cur = FileStats{File: path, Format: im.opts.Format}
	defer func() {
		// Whatever was read before an error is still indexed.
		if ferr := im.flush(); err == nil {
			err = ferr
		}
	}()
	if im.cur.Format == FormatAuto {
		f, err := detectFormat(path)
		if err != nil {
			return err
		}
		im.cur.Format = f
	}
	switch im.cur.Format {
	case FormatWARC:
		return im.warc(path)
	case FormatCDX, FormatCDXJ:
		return im.lines(path)
	}
	return fmt.Errorf("dedupindex: import %s: unknown format %q", path, im.cur.Format)
}

// detectFormat tells a file's format from its content (a WARC named
// *.bin is a WARC), else from its name.
func detectFormat(path string) (Format, error) {
	name := strings.ToLower(filepath.Base(path))
	name = strings.TrimSuffix(name, ".open")
	name = strings.TrimSuffix(name, ".gz")
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("dedupindex: import: %w", err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	if b, _ := r.(*bufio.Reader).Peek(2); len(b) == 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return "", fmt.Errorf("dedupindex: import %s: %w", path, err)
		}
		r = zr
	}
	head := make([]byte, 4096)
	n, _ := io.ReadFull(r, head)
	head = head[:n]
	line, _, _ := bytes.Cut(head, []byte("\n"))
	switch {
	case bytes.HasPrefix(head, []byte("WARC/")):
		return FormatWARC, nil
	case bytes.HasPrefix(line, []byte(" CDX ")) || bytes.HasPrefix(line, []byte("CDX ")):
		return FormatCDX, nil
	case utf8.Valid(line) && bytes.Contains(line, []byte(" {")):
		return FormatCDXJ, nil
	case warcio.StartsRecord(head):
		return FormatWARC, nil // an ARC file: warcio reads it as WARC
	// The content says nothing sure (binary data, damaged from its first
	// byte): the name says what it was meant to be, and reading it as
	// that reports what is wrong.
	case strings.HasSuffix(name, ".warc"), strings.HasSuffix(name, ".arc"):
		return FormatWARC, nil
	case strings.HasSuffix(name, ".cdxj"):
		return FormatCDXJ, nil
	case strings.HasSuffix(name, ".cdx"):
		return FormatCDX, nil
	case utf8.Valid(line) && len(bytes.Fields(line)) >= 9:
		return FormatCDX, nil
	}
	return "", fmt.Errorf("dedupindex: import %s: cannot tell the format (not WARC, CDX or CDXJ); use --format", path)
}

func (im *importer) warc(path string) error {
	rd, err := warcio.Open(path)
	if err != nil {
		return err // warcio's error names the file
	}
	defer rd.Close()
	file := strings.TrimSuffix(filepath.Base(path), ".open")
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := im.ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var we *warcio.Error
			if !errors.As(err, &we) {
				return fmt.Errorf("dedupindex: import %s: %w", path, err)
			}
			if err := im.bad(&ImportError{File: path, Offset: we.Offset, Err: err}); err != nil {
				return err
			}
			continue
		}
		im.cur.Records++
		im.cur.Bytes = rec.End()
		switch rec.Type {
		case "revisit":
			im.cur.Revisits++
			continue
		case "response", "resource":
		default:
			im.cur.Skipped++
			continue
		}
		if rec.Type == "response" && (rec.HTTP == nil || !rec.HTTP.IsResponse()) {
			if isHTTPURI(rec.TargetURI) {
				if err := im.bad(&ImportError{File: path, Offset: rec.Offset, Err: fmt.Errorf("%w: response record %s for %s holds no HTTP response", ErrBadRecord, rec.RecordID, rec.TargetURI)}); err != nil {
					return err
				}
				continue
			}
			im.cur.Skipped++ // dns:, ftp:, whois: ...
			continue
		}
		c := rec.Capture(file)
		if c.Truncated != "" {
			// An incomplete payload is a capture, never an original.
			im.cur.Skipped++
			continue
		}
		if !c.Complete() {
			// A declared digest its bytes do not bear out: the record is
			// damaged; a revisit must never point at it.
			if err := im.bad(&ImportError{File: path, Offset: rec.Offset, Err: fmt.Errorf("%w: response record %s for %s is not used as an original: its WARC-Payload-Digest %s does not match its payload (%s)", ErrBadRecord, rec.RecordID, rec.TargetURI, c.Digest, rec.PayloadDigest)}); err != nil {
				return err
			}
			continue
		}
		if c.Length <= 0 {
			// A record the reader cannot give a stored extent (a file
			// compressed as one gzip stream, not one member per record):
			// a revisit could not point at it. Were it locatable and an
			// original, it is a bad record, named, not "skipped".
			probe := c
			probe.Length = 1
			if _, ok, _ := im.dedup.SeedEntry(probe); ok {
				if err := im.bad(&ImportError{File: path, Offset: rec.Offset, Err: fmt.Errorf("%w: response record %s for %s cannot be located in the file (compressed as one gzip stream, not one gzip member per record): not used as an original; recompress the file one member per record", ErrBadRecord, rec.RecordID, rec.TargetURI)}); err != nil {
					return err
				}
				continue
			}
		}
		// The rule the ingester applies too: status and size policy.
		e, ok, err := im.dedup.SeedEntry(c)
		switch {
		case err != nil:
			if err := im.bad(&ImportError{File: path, Offset: rec.Offset, Err: fmt.Errorf("%w: %w", ErrBadRecord, err)}); err != nil {
				return err
			}
		case !ok:
			im.cur.Skipped++ // empty payload, status outside the policy
		default:
			im.batch = append(im.batch, e)
		}
		if err := im.flushFull(); err != nil {
			return err
		}
	}
}

func isHTTPURI(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// parseTimestamp parses a CDX timestamp: 14 digits, or fewer (padded with
// the earliest values, as Wayback does).
func parseTimestamp(ts string) (time.Time, error) {
	if len(ts) < 4 || len(ts) > 17 {
		return time.Time{}, fmt.Errorf("bad timestamp %q", ts)
	}
	for _, c := range []byte(ts) {
		if c < '0' || c > '9' {
			return time.Time{}, fmt.Errorf("bad timestamp %q", ts)
		}
	}
	if len(ts) > 14 { // milliseconds, as some indexes write
		ts = ts[:14] + "." + ts[14:]
	} else {
		ts += "00000101000000"[len(ts):]
	}
	layout := "20060102150405"
	if strings.Contains(ts, ".") {
		layout += ".000"[:len(ts)-14]
	}
	t, err := time.Parse(layout, ts)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad timestamp %q", ts)
	}
	return t, nil
}
