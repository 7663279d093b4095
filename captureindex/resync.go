package captureindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/cockroachdb/pebble"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
)

// resyncBatch is how many CDXJ lines go into one write.
const resyncBatch = 1024

// Resync catches up from the CDXJ files in the directories given to
// WithCDXJDirs (wayside.Resyncer): every *.cdxj file whose size or
// modification time changed since the index last read it is read again and
// its captures are added (those already held are left alone). Lines that do
// not parse are skipped and logged with file and line number. Then
// revisits added before their originals are resolved where possible.
func (ix *Index) Resync(ctx context.Context) error {
	if err := ix.begin(); err != nil {
		return err
	}
	files, err := ix.cdxjFiles()
	ix.end()
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := ix.resyncFile(ctx, f); err != nil {
			return err
		}
	}
	return ix.retryUnresolved(ctx)
}

func (ix *Index) cdxjFiles() ([]string, error) {
	files, err := cdxj.ListSideFiles(ix.cdxjDirs...)
	if err != nil {
		return nil, fmt.Errorf("captureindex: resync: %w", err)
	}
	out := make([]string, len(files))
	for i, p := range files {
		if out[i], err = filepath.Abs(p); err != nil {
			return nil, fmt.Errorf("captureindex: resync: %w", err)
		}
	}
	sort.Strings(out)
	return out, nil
}

// watermark is what the index knew of a CDXJ file when it last read it.
type watermark struct{ size, mtime int64 }

func (ix *Index) watermark(path string) (watermark, bool) {
	v, closer, err := ix.db.Get(resyncKey(path))
	if err != nil {
		return watermark{}, false
	}
	defer closer.Close()
	size, n := binary.Varint(v)
	mt, m := binary.Varint(v[max(n, 0):])
	if n <= 0 || m <= 0 {
		return watermark{}, false
	}
	return watermark{size, mt}, true
}

func (ix *Index) resyncFile(ctx context.Context, path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // renamed or removed since the listing
	}
	if err != nil {
		return fmt.Errorf("captureindex: resync: %w", err)
	}
	now := watermark{fi.Size(), fi.ModTime().UnixNano()}
	if err := ix.begin(); err != nil {
		return err
	}
	old, ok := ix.watermark(path)
	ix.end()
	if ok && old == now {
		return nil
	}
	var batch []wayside.Capture
	added, bad := 0, 0
	var addErr error
	flush := func() error {
		n, err := ix.Add(ctx, batch...)
		added += n
		batch = batch[:0]
		return err
	}
	// Only the complete lines present when the file was examined: a
	// producer may be appending (a partial last line is read once it is
	// complete).
	err = cdxj.ReplaySideFile(path, now.size, func(line string, lineNo int) error {
		l, err := cdxj.Parse(line)
		var c wayside.Capture
		if err == nil {
			c, err = l.Capture()
		}
		if err == nil && (c.File == "" || c.Offset < 0 || c.Length < 0) {
			err = errors.New("no filename, offset or length")
		}
		if err != nil {
			if bad++; bad <= 10 {
				ix.log.Warn("captureindex: resync: line skipped", "file", path, "line", lineNo, "err", err)
			}
			return nil
		}
		c.Scope = ix.scope
		batch = append(batch, c)
		if len(batch) >= resyncBatch {
			addErr = flush()
			return addErr
		}
		return nil
	})
	if addErr != nil {
		return addErr
	}
	if err != nil {
		return fmt.Errorf("captureindex: resync: %w", err)
	}
	if err := flush(); err != nil {
		return err
	}
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	v := binary.AppendVarint(binary.AppendVarint(nil, now.size), now.mtime)
	if err := ix.db.Set(resyncKey(path), v, pebble.Sync); err != nil {
		return fmt.Errorf("captureindex: resync %s: %w", path, err)
	}
	if added > 0 || bad > 0 {
		ix.log.Info("captureindex: caught up from CDXJ", "file", path, "added", added, "bad_lines", bad)
	}
	return nil
}

// retryUnresolved looks again for the originals of every revisit that was
// added before them.
func (ix *Index) retryUnresolved(ctx context.Context) error {
	if err := ix.begin(); err != nil {
		return err
	}
	defer ix.end()
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return ix.resolveMarked(ctx, [][]byte{{tagUnresolved}})
}

// resolveMarked retries the unresolved revisits whose markers start with
// one of prefixes; the caller holds wmu.
func (ix *Index) resolveMarked(ctx context.Context, prefixes [][]byte) error {
	b := ix.db.NewBatch()
	defer b.Close()
	delta := map[uint64]int64{}
	for _, p := range prefixes {
		if err := ix.resolvePrefix(ctx, b, p, delta); err != nil {
			return fmt.Errorf("captureindex: resolve: %w", err)
		}
	}
	if len(delta) == 0 {
		return nil
	}
	for scope, n := range delta {
		b.Set(counterKey(scope, ctrUnresolved), binary.AppendVarint(nil, ix.counter(scope)[ctrUnresolved]+n), nil)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("captureindex: resolve: %w", err)
	}
	ix.dirty.Store(true)
	for scope, n := range delta {
		ix.counter(scope)[ctrUnresolved] += n
	}
	return nil
}

func (ix *Index) resolvePrefix(ctx context.Context, b *pebble.Batch, prefix []byte, delta map[uint64]int64) error {
	it, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: prefix, UpperBound: upperBound(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		pk := append([]byte{tagCapture}, it.Key()[1:]...)
		raw, closer, err := ix.db.Get(pk)
		if errors.Is(err, pebble.ErrNotFound) {
			continue // reported by Check
		}
		if err != nil {
			return err
		}
		v, err := decodeValue(raw)
		closer.Close()
		if err != nil {
			return fmt.Errorf("entry %x: %w", clipKey(pk), err)
		}
		k, err := parseCaptureKey(pk)
		if err != nil {
			return err
		}
		o, err := ix.findOriginal(ix.db, k.scope, revisitOf(v.uri, timeOf(k, v), v))
		if err != nil {
			return err
		}
		if o == nil {
			continue
		}
		v.orig = &origRef{file: o.fileID, offset: o.Offset, length: o.Length}
		b.Set(pk, v.encode(nil), nil)
		b.Delete(it.Key(), nil)
		delta[k.scope]--
	}
	return it.Error()
}
