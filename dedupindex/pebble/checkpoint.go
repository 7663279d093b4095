package pebble

import (
	"fmt"

	"github.com/cockroachdb/pebble"
)

// Checkpoint writes a consistent copy of the index to dir (which must not
// exist), as of one instant, while the index stays open for reads and
// writes (pebble's checkpoint: its files hard-linked where the file
// system allows, the write-ahead log flushed first). `wayside backup`
// snapshots a running daemon's index with it.
func (ix *Index) Checkpoint(dir string) error {
	if err := ix.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("pebble index: checkpoint %s: %w", dir, err)
	}
	return nil
}
