package captureindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/internal/failpoint"
)

// Sync makes every write so far durable (an fsync of the write-ahead
// log): for captures that no CDXJ file beside a WARC holds, which the
// catch-up at start could not read back (index lines POSTed to the
// daemon, OutbackCDX style).
func (ix *Index) Sync() error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	if err := ix.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("captureindex: sync: %w", err)
	}
	ix.dirty.Store(false)
	return nil
}

// Remove removes exactly the captures named — by collection (Scope, ""
// the default), URI, date (to the second), file and offset, the fields an
// index line carries — in one durable batch: all of them or, after a
// crash or an error, none. Captures the index does not hold are ignored
// (OutbackCDX's delete). Revisits kept whose original is removed become
// unresolved and are looked for again, as Delete does them. It reports
// how many captures it removed.
//
// Finding those revisits walks every capture once.
func (ix *Index) Remove(ctx context.Context, cs ...wayside.Capture) (int64, error) {
	if len(cs) == 0 {
		return 0, nil
	}
	if err := ix.begin(); err != nil {
		return 0, err
	}
	defer ix.end()
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	want := map[string]bool{}
	for _, c := range cs {
		scope := c.Scope
		if scope == "" {
			scope = ix.scope
		}
		sid, ok := ix.lookupID(kindScope, scope)
		if !ok {
			continue
		}
		fid, ok := ix.lookupID(kindFile, c.File)
		if !ok {
			continue
		}
		want[string(captureKey(sid, URLKey(c.URI), c.Date, fid, c.Offset))] = true
	}
	if len(want) == 0 {
		return 0, nil
	}
	plan, err := ix.plan(ctx, func(_, _ string, k parsedKey, _ value) bool {
		return want[string(captureKey(k.scope, k.urlkey, time.Unix(k.seconds, 0), k.file, k.offset))]
	})
	if err != nil {
		return 0, fmt.Errorf("captureindex: remove: %w", err)
	}
	n, err := ix.deleteBatchLocked(plan)
	if err != nil {
		return 0, fmt.Errorf("captureindex: remove: %w", err)
	}
	if err := ix.resolveMarked(ctx, [][]byte{{tagUnresolved}}); err != nil {
		return n, err
	}
	return n, nil
}

// ErrLocationHeld is returned by Relocate when a new location already
// names captures of its own.
var ErrLocationHeld = errors.New("captureindex: the new location already holds captures")

// Relocate changes where WARC files are: every capture stored in file
// old (and every revisit whose original is there) is afterwards in
// moves[old], at the same offsets. Files are interned, so this rewrites
// one name per file, not the captures: all moves are one durable batch,
// and a crash leaves every file either at its old location or at its new
// one. A file the index does not name is skipped (a relocation run again
// after a crash finds the files already moved); a new location the index
// already names is refused (ErrLocationHeld), as are two files moved to
// one place. It reports how many files it moved.
func (ix *Index) Relocate(ctx context.Context, moves map[string]string) (int, error) {
	if err := ix.begin(); err != nil {
		return 0, err
	}
	defer ix.end()
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	b := ix.db.NewBatch()
	defer b.Close()
	type renamed struct {
		id       uint64
		old, new string
	}
	var done []renamed
	seen := map[string]string{}
	olds := make([]string, 0, len(moves))
	for o := range moves {
		olds = append(olds, o)
	}
	sort.Strings(olds)
	for _, old := range olds {
		to := moves[old]
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if to == old {
			continue
		}
		if to == "" {
			return 0, fmt.Errorf("captureindex: relocate %s: no new location", old)
		}
		if prev, ok := seen[to]; ok {
			return 0, fmt.Errorf("captureindex: relocate: %s and %s both moved to %s", prev, old, to)
		}
		seen[to] = old
		id, ok := ix.lookupID(kindFile, old)
		if !ok {
			continue
		}
		if _, held := ix.lookupID(kindFile, to); held {
			return 0, fmt.Errorf("%w: relocate %s to %s", ErrLocationHeld, old, to)
		}
		b.Delete(nameKey(kindFile, old), nil)
		b.Set(nameKey(kindFile, to), binary.AppendUvarint(nil, id), nil)
		b.Set(idKey(kindFile, id), []byte(to), nil)
		done = append(done, renamed{id, old, to})
	}
	if len(done) == 0 {
		return 0, nil
	}
	if err := failpoint.Inject("captureindex.relocate-before-commit"); err != nil {
		return 0, fmt.Errorf("captureindex: relocate: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("captureindex: relocate: %w", err)
	}
	ix.nmu.Lock()
	for _, r := range done {
		delete(ix.ids[kindFile], r.old)
		ix.remember(kindFile, r.new, r.id)
	}
	ix.nmu.Unlock()
	return len(done), nil
}
