package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/internal/fsutil"
	"github.com/wayside-archive/wayside/warcfile"
)

// readFile ingests the complete records of f from st.Offset on, in durable
// batches. A partial record at the end stops it: in a growing (".open")
// file it is read on a later scan; in a finished file it is reported as a
// truncated tail (and read if the file grows after all).
func (in *Ingester) readFile(ctx context.Context, f seenFile, st *fileState) error {
	in.mu.Lock()
	start, skip := st.Offset, st.DataSkip
	in.mu.Unlock()
	var (
		it   *recordIter
		sync func() error // makes the file's bytes durable (nil: remote, stored already)
		src  *stickyReader
	)
	if f.remote {
		fh, err := in.locs.Open(ctx, f.path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed since it was listed
			}
			return remoteError{f.watch, err}
		}
		defer fh.Close()
		fi, _ := fh.Stat()
		src = &stickyReader{r: io.NewSectionReader(fh, start, max(fi.Size()-start, 0))}
		it = newRecordIter(src, "", f.path, start)
	} else if f.member {
		// A WARC file stored in a WACZ: opened by its name as replay
		// opens it (warcfile.Locations), read by range through the zip.
		locs := warcfile.NewLocations([]string{f.dir})
		fh, err := locs.Open(ctx, f.base)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed since it was listed
			}
			return fmt.Errorf("ingest: %w", err)
		}
		defer fh.Close()
		fi, err := fh.Stat()
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		it = newRecordIter(io.NewSectionReader(fh, start, max(fi.Size()-start, 0)), f.dir, f.base, start)
		if s, ok := fh.(interface{ Sync() error }); ok {
			sync = s.Sync // the WACZ holding it
		}
	} else {
		fh, err := os.Open(f.path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // renamed away (.open → final) between list and open
			}
			return fmt.Errorf("ingest: %w", err)
		}
		defer fh.Close()
		if _, err := fh.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("ingest: seek %s to %d: %w", f.base, start, err)
		}
		it, sync = newRecordIter(fh, f.dir, f.base, start), fh.Sync
	}
	var readErr error // the remote file could not be read on (not a bad record)
	var batch []ingested
	next, nextSkip := start, skip
	truncatedAt := int64(-1)
	// Shared gzip members holding records that would be indexed, in file
	// order, with how many such records each holds (reported, not indexed).
	var shared []struct{ offset, n int64 }
	for {
		if ctx.Err() != nil {
			break
		}
		rec, err := it.Next()
		if src != nil && src.err != nil {
			// The store failed (unreachable, the object changed): what
			// was read whole is kept, the rest is read again later.
			readErr = remoteError{f.watch, fmt.Errorf("%s offset %d: %w", f.path, next, src.err)}
			break
		}
		if err == io.EOF {
			// Every member read complete: the file is consumed to its
			// end (a one-stream gzip file, junk after the last record),
			// and is not read again unless it grows.
			if end := it.consumed(); end > next || nextSkip > 0 {
				next, nextSkip = end, 0
			}
			break
		}
		if err != nil {
			if isTruncated(err) {
				truncatedAt = truncatedOffset(err, next)
				break
			}
			// A corrupt record: the reader resynchronises on the next one.
			in.noteError(fmt.Errorf("ingest: %w", err))
			continue
		}
		if rec.dataStart < skip {
			continue // ingested by an earlier read of its gzip member
		}
		batch = append(batch, rec)
		if rec.unaddressable {
			if len(shared) == 0 || shared[len(shared)-1].offset != rec.c.Offset {
				shared = append(shared, struct{ offset, n int64 }{rec.c.Offset, 0})
			}
			shared[len(shared)-1].n++
		}
		if rec.shared {
			next, nextSkip = start, rec.dataEnd
		} else {
			next, nextSkip = rec.c.Offset+rec.c.Length, 0
		}
		if len(batch) >= batchSize {
			if err := in.flush(ctx, sync, f, st, batch, next, nextSkip); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 || next != start || nextSkip != skip {
		if err := in.flush(ctx, sync, f, st, batch, next, nextSkip); err != nil {
			return err
		}
	}
	for _, m := range shared {
		// One report per member, not per record (a one-stream file is
		// one member holding thousands).
		in.noteError(fmt.Errorf("ingest: %s offset %d: the gzip member there holds %d records that share it with another record; they cannot be located by offset and length and are not indexed (as `wayside cdxj` skips them): recompress the file one gzip member per record", f.path, m.offset, m.n))
	}
	if readErr != nil {
		return readErr
	}
	in.mu.Lock()
	finish, truncated, changed := false, false, false
	switch {
	case truncatedAt >= 0 && !f.open && time.Since(f.mtime) < 3*in.cfg.PollInterval:
		// A file written without ".open" (wget, some tools) may still be
		// growing: report a partial tail only once it has been quiet.
	case truncatedAt >= 0 && !f.open:
		if !st.Truncated || st.TruncatedAt != truncatedAt {
			st.Truncated, st.TruncatedAt = true, truncatedAt
			in.ctr.Truncated.Add(1)
			in.log.Warn("ingest: finished WARC ends in a partial record", "file", f.path, "offset", truncatedAt, "size", f.size)
			finish, truncated = true, true
		}
	case truncatedAt < 0 && ctx.Err() == nil:
		if st.Truncated {
			st.Truncated, st.TruncatedAt = false, 0
			changed = true
		}
		finish = !f.open && !st.Done && in.quiet(f)
		st.pendingSince = time.Time{}
	}
	in.mu.Unlock()
	switch {
	case finish:
		return in.finish(st, truncated)
	case changed:
		return in.save()
	}
	return nil
}

// flush makes one batch durable in order: the WARC bytes (fsync of the
// crawler's file, so no index entry can outlive a power loss of the record
// it points at), the index entries, the CDXJ lines, and last the checkpoint.
// A crash between steps repeats the batch on restart: index Puts of the same
// original are no-ops and the CDXJ file is cut back to its checkpointed size.
func (in *Ingester) flush(ctx context.Context, sync func() error, f seenFile, st *fileState, batch []ingested, next, nextSkip int64) error {
	if in.cfg.ObserveBatch != nil {
		defer func(start time.Time) { in.cfg.ObserveBatch(time.Since(start)) }(time.Now())
	}
	if sync == nil {
		// A remote file: the store holds it durably already.
	} else if err := sync(); err != nil && !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.EINVAL) {
		// EROFS/EINVAL: a read-only or sync-less file system holds nothing
		// this process could make more durable.
		return fatalError{fmt.Errorf("ingest: fsync %s: %w", f.path, err)}
	}
	var entries []dedupindex.Entry
	revisits := 0
	for _, r := range batch {
		if r.c.IsRevisit() {
			revisits++
			continue
		}
		e, ok, err := in.dedup.SeedEntry(r.c)
		if err != nil {
			// A record the index cannot point at (odd date, digest...):
			// it stays in the CDXJ, it is not a dedup original.
			in.noteError(fmt.Errorf("ingest: %s offset %d: not indexed: %w", f.base, r.c.Offset, err))
		}
		if ok {
			entries = append(entries, e)
		}
	}
	// The batch is finished even when shutdown has begun (nothing is left
	// half-done), but a Put waiting on a crawler's pending claim is given
	// up after a while: the batch is not checkpointed and is read again.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	added, err := dedupindex.PutEntries(pctx, in.idx, entries)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("ingest: index %s: waiting for a pending claim: %w (batch will be read again)", f.base, err)
		}
		return fatalError{fmt.Errorf("ingest: index %s: %w", f.base, err)}
	}
	originals := 0 // added: a digest already indexed keeps its first original
	for _, a := range added {
		if a {
			originals++
		}
	}
	in.mu.Lock()
	cdxjSize := st.CDXJSize
	in.mu.Unlock()
	if len(batch) > 0 {
		var err error
		if cdxjSize, err = in.appendCDXJ(f.base, cdxjSize, batch); err != nil {
			return fatalError{err}
		}
	}
	for _, r := range batch {
		if r.unaddressable {
			// No CDXJ line, so no capture: the capture index must equal
			// what a rebuild from the CDXJ files gives, and every entry
			// must be readable at its offset and length.
			continue
		}
		if err := in.sub.OnCapture(context.WithoutCancel(ctx), r.c); err != nil {
			in.log.Warn("ingest: capture not delivered to its consumers", "file", f.base, "offset", r.c.Offset, "err", err)
		}
	}
	in.mu.Lock()
	consumed := max(next-st.Offset, 0)
	st.Offset, st.DataSkip = next, nextSkip
	st.CDXJSize = cdxjSize
	st.Records += int64(len(batch))
	st.Originals += int64(originals)
	st.Updated = time.Now().UTC()
	err = in.cp.save(in.cfg.Checkpoint)
	in.mu.Unlock()
	if err != nil {
		return fatalError{err}
	}
	in.ctr.Records.Add(int64(len(batch)))
	in.ctr.Bytes.Add(consumed)
	in.ctr.Originals.Add(int64(originals))
	in.ctr.Revisits.Add(int64(revisits))
	return nil
}

// stickyReader keeps the first error of r (a remote file): the WARC
// reader would take a failed read for a damaged record and resynchronise
// past it, while it is the store that failed and the bytes must be read
// again.
type stickyReader struct {
	r   io.Reader
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// remoteError is a watched prefix (s3://…) whose store cannot be listed
// or read: ingest of it waits (Status.Paused says why) and resumes by
// itself once the store answers.
type remoteError struct {
	watch string
	err   error
}

func (r remoteError) Error() string { return "ingest: " + r.err.Error() }
func (r remoteError) Unwrap() error { return r.err }

// cdxjPath is the CDXJ side file of a WARC (cdxj.SideFileName).
func (in *Ingester) cdxjPath(base string) string {
	return filepath.Join(in.cfg.CDXJDir, cdxj.SideFileName(base))
}

// appendCDXJ writes the batch's lines at offset size of the WARC's CDXJ file
// (cutting off anything after it: lines of a batch that was not
// checkpointed) and fsyncs; it returns the new size.
func (in *Ingester) appendCDXJ(base string, size int64, batch []ingested) (int64, error) {
	if in.cfg.CDXJDir == "" {
		return 0, nil
	}
	var buf []byte
	for _, r := range batch {
		if r.indexed {
			l := cdxj.FromCapture(r.c)
			buf = l.Format(buf)
		}
	}
	if err := os.MkdirAll(in.cfg.CDXJDir, 0o755); err != nil {
		return size, fmt.Errorf("ingest: cdxj: %w", err)
	}
	sf, err := cdxj.OpenSideFile(in.cdxjPath(base))
	if err != nil {
		return size, fmt.Errorf("ingest: %w", err)
	}
	defer sf.Close()
	// Written after the checkpointed size (lines past it are of a batch
	// that was not checkpointed); a partial write (a full disk) or a failed
	// fsync leaves no torn line behind: the file is cut back to that size
	// (and would be at the next start anyway).
	if err := sf.AppendAt(size, buf); err != nil {
		return size, fmt.Errorf("ingest: %w", err)
	}
	if err := sf.Sync(size); err != nil {
		return size, fmt.Errorf("ingest: %w", err)
	}
	if size == 0 {
		if err := fsutil.SyncDir(in.cfg.CDXJDir); err != nil {
			return size, fmt.Errorf("ingest: %w", err)
		}
	}
	return size + int64(len(buf)), nil
}
