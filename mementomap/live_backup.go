package mementomap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// Backup copies the live map's files — the map file and, with CDXJ
// catch-up, the positions it covers — into dir under their own names,
// with no merge running meanwhile, so the copy is a map and the marks it
// was merged to. What the map holds only in memory is not in the copy: a
// live map opened on it catches it up from the CDXJ files after those
// marks. `wayside backup` snapshots a running daemon's map with it.
func (l *Live) Backup(dir string) error {
	l.compactMu.Lock()
	defer l.compactMu.Unlock()
	for _, p := range []string{l.path, l.statePath()} {
		err := fsutil.CopyFile(p, filepath.Join(dir, filepath.Base(p)), 0o644)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("mementomap: live: backup: %w", err)
		}
	}
	return nil
}
