package postdedup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/warcio"
)

// IndexUpdater is an index that names the files Replace swaps (a dedup
// index, a capture index): it is told, right after each swap, where the
// file's records are now. An update must be idempotent: after a crash
// Replace runs again and tells it again.
type IndexUpdater interface {
	// Name names the index in messages.
	Name() string
	// Replaced is called after the swap of one file, with every record
	// of every file of the run as it is after the swap (a revisit of a
	// record in another file of the run can be followed).
	Replaced(ctx context.Context, file string, run *RunCaptures) error
}

// RunCaptures are the records of the validated outputs of one Replace,
// as captures filed under their input's base name.
type RunCaptures struct {
	// ByFile lists each file's captures in order.
	ByFile map[string][]wayside.Capture
	// byID finds a record by WARC-Record-ID.
	byID map[string]wayside.Capture
}

// ByID returns the capture with WARC-Record-ID id.
func (rc *RunCaptures) ByID(id string) (wayside.Capture, bool) {
	c, ok := rc.byID[id]
	return c, ok
}

// readRunCaptures reads every validated output (at its input path when
// already swapped) into captures filed under the input's base name.
func readRunCaptures(ctx context.Context, outDir string, s Stamp, done []bool) (*RunCaptures, error) {
	rc := &RunCaptures{ByFile: map[string][]wayside.Capture{}, byID: map[string]wayside.Capture{}}
	for i, f := range s.Files {
		path := filepath.Join(outDir, f.Output)
		if done[i] {
			path = f.Input
		}
		name := filepath.Base(f.Input)
		r, err := warcio.Open(path, warcio.Options{})
		if err != nil {
			return nil, err
		}
		var cs []wayside.Capture
		for {
			if err := ctx.Err(); err != nil {
				r.Close()
				return nil, err
			}
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				r.Close()
				// A validated output reads whole; anything else changed it.
				return nil, fmt.Errorf("validated output %s: %w", path, err)
			}
			c := rec.Capture(name)
			cs = append(cs, c)
			if c.RecordID != "" {
				rc.byID[c.RecordID] = c
			}
		}
		r.Close()
		rc.ByFile[name] = cs
	}
	return rc, nil
}

// DedupIndexUpdater keeps a dedup index right across Replace: each
// original in a swapped file moves to its record's new offset, or — when
// the record became a revisit — to the record the revisit refers to;
// an original whose record is gone from the run is deleted.
//
// The index is scanned once, for every file of the run, at the first
// call (a networked index is read whole by a scan).
type DedupIndexUpdater struct {
	Label string
	Index dedupindex.Maintainer

	byFile map[string][]dedupindex.Entry // the originals of each run file, read at the first call
}

// Name implements IndexUpdater.
func (u *DedupIndexUpdater) Name() string { return "dedup index " + u.Label }

// Replaced implements IndexUpdater.
func (u *DedupIndexUpdater) Replaced(ctx context.Context, file string, rc *RunCaptures) error {
	if u.byFile == nil {
		files := make([]string, 0, len(rc.ByFile))
		for f := range rc.ByFile {
			files = append(files, f)
		}
		u.byFile = map[string][]dedupindex.Entry{}
		err := u.Index.Scan(ctx, dedupindex.Selector{Files: files}, func(e dedupindex.Entry) error {
			b := filepath.Base(e.Original.File)
			u.byFile[b] = append(u.byFile[b], e)
			return nil
		})
		if err != nil {
			u.byFile = nil
			return err
		}
	}
	var moves []dedupindex.Move
	var gone []dedupindex.Entry
	for _, e := range u.byFile[filepath.Base(file)] {
		c, ok := rc.ByID(e.Original.RecordID)
		for hops := 0; ok && c.IsRevisit() && hops < 4; hops++ {
			if c.RevisitOf == nil || c.RevisitOf.RecordID == "" {
				ok = false
				break
			}
			c, ok = rc.ByID(c.RevisitOf.RecordID)
		}
		if !ok || c.IsRevisit() || c.Length <= 0 {
			gone = append(gone, e)
			continue
		}
		to := e.Original
		if c.RecordID != to.RecordID {
			to = dedupindex.Original{Digest: e.Original.Digest, TargetURI: c.URI, Date: c.Date, RecordID: c.RecordID,
				PayloadLength: c.PayloadLength, Status: c.Status, MIME: c.MIME}
		}
		to.File, to.Offset, to.Length = c.File, c.Offset, c.Length
		if to != e.Original {
			moves = append(moves, dedupindex.Move{Key: e.Key, From: e.Original.RecordID, To: to})
		}
	}
	for len(moves) > 0 {
		part := moves[:min(len(moves), 1000)]
		moves = moves[len(part):]
		if _, err := u.Index.Update(ctx, part); err != nil {
			return err
		}
	}
	for _, e := range gone {
		// No record of the run holds it: drop the original (a later
		// capture of the payload is stored in full, never a revisit of
		// nothing). Selected as narrowly as a selector can.
		o := e.Original
		sel := dedupindex.Selector{Scope: e.Key.Scope, Files: []string{o.File}, URLPrefix: o.TargetURI,
			From: o.Date, To: o.Date.Add(time.Nanosecond)}
		if _, err := u.Index.Delete(ctx, sel); err != nil && !errors.Is(err, dedupindex.ErrEmptySelector) {
			return err
		}
	}
	return nil
}

// CaptureReplacer is a capture index (captureindex.Index, or the daemon's
// through client.Client).
type CaptureReplacer interface {
	ReplaceFiles(ctx context.Context, files map[string][]wayside.Capture) (removed, added int, err error)
}

// CaptureIndexUpdater keeps a capture index right across Replace: the
// swapped file's rows are replaced by its records now, in one atomic step.
type CaptureIndexUpdater struct {
	Label string
	Index CaptureReplacer
}

// Name implements IndexUpdater.
func (u CaptureIndexUpdater) Name() string { return "capture index " + u.Label }

// Replaced implements IndexUpdater.
func (u CaptureIndexUpdater) Replaced(ctx context.Context, file string, rc *RunCaptures) error {
	_, _, err := u.Index.ReplaceFiles(ctx, map[string][]wayside.Capture{file: rc.ByFile[file]})
	return err
}

// updateIndexes tells every updater about one swapped file.
func updateIndexes(ctx context.Context, ups []IndexUpdater, file string, rc *RunCaptures) error {
	for _, u := range ups {
		if err := u.Replaced(ctx, file, rc); err != nil {
			return fmt.Errorf("postdedup: replace: %s is swapped but the %s is not updated yet (run the same command again to finish): %w", file, u.Name(), err)
		}
	}
	return nil
}
