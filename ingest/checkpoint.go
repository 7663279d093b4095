package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

// fileState is the durable ingest progress of one WARC file, keyed by its
// base name without ".open" (a rename from X.warc.gz.open to X.warc.gz keeps
// its progress). Dev and Ino detect a different file reusing a name.
type fileState struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	// Version is a remote file's ETag (Path is then its location URL).
	Version string `json:"version,omitempty"`
	Size    int64  `json:"size"`
	// Offset is the position after the last complete record ingested;
	// when that record is in a gzip member holding several (or the file
	// is one gzip stream), the position where reading resumes (the start
	// of the stretch read last), and DataSkip the uncompressed bytes from
	// there that are ingested already.
	Offset   int64 `json:"offset"`
	DataSkip int64 `json:"data_skip,omitempty"`
	// CDXJSize is the size of this file's CDXJ output at Offset; a restart
	// truncates the CDXJ file back to it so no line is written twice.
	CDXJSize    int64     `json:"cdxj_size"`
	Records     int64     `json:"records"`
	Originals   int64     `json:"originals"`
	Open        bool      `json:"open"`
	Done        bool      `json:"done"`
	Truncated   bool      `json:"truncated,omitempty"`
	TruncatedAt int64     `json:"truncated_at,omitempty"`
	Error       string    `json:"error,omitempty"`
	Updated     time.Time `json:"updated"`

	pendingSince time.Time // first time unread bytes were seen (not persisted)
}

// checkpoint is the ingest progress of every file, saved atomically
// (write to a temporary file, fsync, rename, fsync the directory).
type checkpoint struct {
	Version int                   `json:"version"`
	Files   map[string]*fileState `json:"files"`
}

func loadCheckpoint(path string) (*checkpoint, error) {
	cp := &checkpoint{Version: 1, Files: map[string]*fileState{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ingest: checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, cp); err != nil {
		return nil, fmt.Errorf("ingest: checkpoint %s: %w", path, err)
	}
	if cp.Version != 1 {
		return nil, fmt.Errorf("ingest: checkpoint %s: unknown version %d", path, cp.Version)
	}
	if cp.Files == nil {
		cp.Files = map[string]*fileState{}
	}
	return cp, nil
}

// save writes the checkpoint atomically (encoding/json sorts map keys, so
// the file is stable for a given state).
func (cp *checkpoint) save(path string) error {
	// A crash here: the batch's index entries and CDXJ lines (or the
	// sorted CDXJ file) are durable, its checkpoint is not (TestCrashKill).
	if err := failpoint.Inject("ingest.before-checkpoint"); err != nil {
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	b, err := json.MarshalIndent(cp, "", " ")
	if err != nil {
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// writeFileAtomic replaces path (mode 0600, creating its directory) with b
// so that a crash leaves either the old or the new content, never a mix.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("ingest: write %s: %w", path, err)
	}
	if err := fsutil.WriteFileAtomic(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}
