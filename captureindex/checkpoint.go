package captureindex

import (
	"fmt"

	"github.com/cockroachdb/pebble"
)

// Checkpoint writes a consistent copy of the capture index to dir (which
// must not exist), as of one instant, while the index stays open
// (pebble's checkpoint: files hard-linked where the file system allows,
// the write-ahead log flushed first). Its catch-up mark is in the copy:
// a daemon started on it catches up from the CDXJ files after that mark.
// `wayside backup` snapshots a running daemon's capture index with it.
func (ix *Index) Checkpoint(dir string) error {
	if err := ix.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("captureindex: checkpoint %s: %w", dir, err)
	}
	return nil
}
