package characterize

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// Backup copies the store's files (snapshot and logs) into dir, which
// must exist, with no write or compaction running meanwhile: the copy
// opens as the store was at that instant. `wayside backup` snapshots a
// running daemon's characterization store with it.
func (s *Store) Backup(dir string) error {
	if s.dir == "" {
		return nil
	}
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStoreClosed
	}
	if s.f != nil {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("characterize: store: backup: %w", err)
		}
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("characterize: store: backup: %w", err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.Contains(e.Name(), ".tmp") {
			continue
		}
		if err := fsutil.CopyFile(filepath.Join(s.dir, e.Name()), filepath.Join(dir, e.Name()), 0o644); err != nil {
			return fmt.Errorf("characterize: store: backup: %w", err)
		}
	}
	return nil
}
