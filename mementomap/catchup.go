package mementomap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

// Catching up from CDXJ files.
//
// A live map with LiveOptions.CDXJDirs knows, per WARC file, the offset of
// the last record it has counted (table "files", updated with every
// capture in the same transaction as its key), and keeps beside its file,
// in PATH.state.json, the offsets its map file covers ("marks"). Producers
// deliver captures of one WARC file in offset order and write a capture's
// CDXJ line (with file name and offset) before delivering it, so:
//
//   - a capture at or before the counted offset of its file was counted
//     already (replayed after a crash, or fed from a CDXJ file) and is
//     skipped;
//   - Resync feeds every CDXJ line after the marks. Right after OpenLive
//     (nothing counted in memory) that is exactly what the map file lacks.
//     After a Fanout dropped captures, captures counted in memory since the
//     last merge are fed again: their counts become upper bounds (marked
//     "at most" in the map), never a false negative.
//
// The marks are written in two steps around each merge: first the state
// names the next marks as in progress, then the map file is replaced, then
// the state holds the next marks. A crash between the steps leaves the
// state "uncertain": the next Resync feeds after the old marks with counts
// marked as upper bounds. The CDXJ files may be in append order or sorted:
// lines are selected by offset, not by position.

// marks maps a WARC file name to the offset of the last record covered.
type marks map[string]int64

type markState struct {
	Version int   `json:"version"`
	Marks   marks `json:"marks"`
	// Next is set while a merge is replacing the map file.
	Next marks `json:"next,omitempty"`
}

const markStateVersion = 2

type fileMark struct {
	File   string
	Offset int64
}

func (l *Live) statePath() string { return l.path + ".state.json" }

// loadMarks reads the state file and seeds the counted offsets with the
// marks. A missing state file with an existing map file, a state of an
// earlier format or one left in the middle of a merge make the next
// Resync's counts upper bounds.
func (l *Live) loadMarks() error {
	l.marks = marks{}
	b, err := os.ReadFile(l.statePath())
	switch {
	case errors.Is(err, os.ErrNotExist):
		l.uncertain = l.m != nil
	case err != nil:
		return fmt.Errorf("mementomap: live: %w", err)
	default:
		var st markState
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("mementomap: live: %s: %w", l.statePath(), err)
		}
		if st.Version == markStateVersion && st.Marks != nil {
			l.marks = st.Marks
		}
		l.uncertain = st.Version != markStateVersion || st.Next != nil
	}
	if err := fsutil.RemoveStaleTemps(l.statePath()); err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	txn := l.db.Txn(true)
	for f, off := range l.marks {
		if err := txn.Insert("files", &fileMark{File: f, Offset: off}); err != nil {
			txn.Abort()
			return fmt.Errorf("mementomap: live: %w", err)
		}
	}
	txn.Commit()
	return nil
}

// advance records that the record at off of file was counted; counted
// reports that it (or a later one) was counted already.
func (l *Live) advance(txn *memdb.Txn, file string, off int64) (counted bool, err error) {
	raw, err := txn.First("files", "id", file)
	if err != nil {
		return false, fmt.Errorf("mementomap: live: %w", err)
	}
	if raw != nil && raw.(*fileMark).Offset >= off {
		return true, nil
	}
	if err := txn.Insert("files", &fileMark{File: file, Offset: off}); err != nil {
		return false, fmt.Errorf("mementomap: live: %w", err)
	}
	return false, nil
}

// snapshotMarks returns the counted offsets of snap (nil without CDXJDirs).
func (l *Live) snapshotMarks(snap *memdb.Txn) (marks, error) {
	if len(l.opts.CDXJDirs) == 0 {
		return nil, nil
	}
	it, err := snap.Get("files", "id")
	if err != nil {
		return nil, fmt.Errorf("mementomap: live: %w", err)
	}
	m := marks{}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		fm := raw.(*fileMark)
		m[fm.File] = fm.Offset
	}
	return m, nil
}

func (l *Live) writeState(st markState) error {
	st.Version = markStateVersion
	if err := fsutil.WriteFileAtomic(l.statePath(), 0o644, func(w io.Writer) error {
		return json.NewEncoder(w).Encode(st)
	}); err != nil {
		return fmt.Errorf("mementomap: live: %w", err)
	}
	return nil
}

// beginMerge records that a merge towards next is replacing the map file.
func (l *Live) beginMerge(next marks) error {
	if next == nil {
		return nil
	}
	return l.writeState(markState{Marks: l.marks, Next: next})
}

// saveMarks records that the map file covers next.
func (l *Live) saveMarks(next marks) error {
	if next == nil || (maps.Equal(next, l.marks) && !l.uncertain) {
		return nil
	}
	if err := l.writeState(markState{Marks: next}); err != nil {
		return err
	}
	l.marks, l.uncertain = next, false
	return nil
}

// Resync catches up from the CDXJ files in LiveOptions.CDXJDirs: every line
// after the marks (the records the map file covers) is counted, and the
// counted offset of its file advances past it. It implements
// wayside.Resyncer; call it once after OpenLive (and after the producer's
// own crash recovery) before captures flow. Counts are exact when nothing
// was counted in memory since the last merge and the state is certain;
// otherwise they are marked as upper bounds.
func (l *Live) Resync(ctx context.Context) error {
	if len(l.opts.CDXJDirs) == 0 {
		return errors.New("mementomap: live: no CDXJ directories to catch up from (LiveOptions.CDXJDirs)")
	}
	l.compactMu.Lock()
	defer l.compactMu.Unlock()
	replayed := l.uncertain || l.pending.Load() > 0
	files, err := cdxj.ListSideFiles(l.opts.CDXJDirs...)
	if err != nil {
		return fmt.Errorf("mementomap: live: catch up: %w", err)
	}
	var fed int64
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := l.feedAfterMarks(p, replayed)
		if err != nil {
			return err
		}
		fed += n
	}
	if fed > 0 {
		l.opts.Logger.Info("mementomap: live: caught up from CDXJ files", "path", l.path, "captures", fed, "upper_bounds", replayed)
	}
	return nil
}

// feedAfterMarks counts the lines of the CDXJ file at p whose record lies
// after the marks of its WARC file.
func (l *Live) feedAfterMarks(p string, replayed bool) (int64, error) {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // renamed or removed meanwhile
	}
	if err != nil {
		return 0, fmt.Errorf("mementomap: live: catch up: %w", err)
	}
	defer f.Close()
	cr := cdxj.NewReader(f, p)
	return l.feedLines(cr, func(txn *memdb.Txn, c cdxj.Line) (bool, error) {
		if c.Filename == "" || c.Offset < 0 {
			return false, fmt.Errorf("mementomap: live: catch up: %s line %d: no filename and offset", p, cr.LineNumber())
		}
		if mark, ok := l.marks[c.Filename]; ok && c.Offset <= mark {
			return false, nil
		}
		if _, err := l.advance(txn, c.Filename, c.Offset); err != nil {
			return false, err
		}
		if c.URL == "" {
			return false, nil
		}
		if err := l.add(txn, c.URL, replayed); err != nil {
			// As OnCapture of the same capture would: counted as not
			// mappable, never fatal to the catch-up.
			l.opts.Logger.Warn("mementomap: live: catch up: line not mapped", "file", p, "line", cr.LineNumber(), "err", err)
			return false, nil
		}
		return true, nil
	})
}
