package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/ingest"
	"github.com/wayside-archive/wayside/internal/fsutil"
)

// Backup: a consistent snapshot of every store of the running daemon
// (POST /v1/admin/backup, `wayside backup`). The ingester stops at a
// batch boundary with its checkpoint written (as for a reload), the
// consumers' queues drain, and while nothing is ingested:
//
//   - the embedded dedup index and the capture index are checkpointed
//     (pebble's Checkpoint: one instant, files hard-linked where possible;
//     crawlers' commits over the API go on meanwhile and are in the copy
//     or not as a whole);
//   - the ingest checkpoint and the CDXJ files are copied;
//   - the live MementoMap's file and marks, and the characterization
//     store, are copied with their own writers held;
//   - the fixity directory is copied as it is (a sweep running then may be
//     partly in it: its next run completes it).
//
// Then a new ingester resumes from the checkpoint. The snapshot is laid
// out as the data directory (stores configured outside it go under
// "outside-data-dir/NAME") and written to DIR.partial-*, renamed to DIR
// when complete. To restore: stop the daemon, put the snapshot's contents
// in place of data_dir, start it. It is as the daemon was at the snapshot:
// the ingester resumes from the snapshot's checkpoint, and the consumers
// catch up from the snapshot's CDXJ files what they had not stored yet.
// A Redis or remote index is not in it (it is backed up by its own
// tools), nor the aggregator's map cache (fetched again).

const backupManifest = "BACKUP.json"

// Backup writes a snapshot of every store to dest (absolute; it must not
// exist, its parent must).
func (s *Server) Backup(ctx context.Context, dest string) (api.BackupResult, error) {
	res := api.BackupResult{Dir: dest}
	if !filepath.IsAbs(dest) {
		return res, fmt.Errorf("sidecar: backup: %s: not an absolute path", dest)
	}
	dest = filepath.Clean(dest)
	if _, err := os.Lstat(dest); err == nil {
		return res, fmt.Errorf("sidecar: backup: %s already exists", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("sidecar: backup: %w", err)
	}
	parent := filepath.Dir(dest)
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		return res, fmt.Errorf("sidecar: backup: %s: no such directory", parent)
	}
	r := &s.reload
	r.serial.Lock() // no reload meanwhile
	defer r.serial.Unlock()
	cfg := s.Live()
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dest)+".partial-*")
	if err != nil {
		return res, fmt.Errorf("sidecar: backup: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()

	// Stop the ingester at a batch boundary; its successor waits on the
	// gate until the snapshot is taken.
	r.comp.Lock()
	stop := r.ingestStop
	r.comp.Unlock()
	if stop == nil {
		return res, errors.New("sidecar: backup: the daemon is not running yet")
	}
	ic := cfg.IngestConfig(s.cons.CatchUp, s.metrics.Ingest, s.log)
	ic.ObserveBatch = func(d time.Duration) { s.metrics.ingestBatches.Observe(d.Seconds()) }
	next, err := ingest.New(ic, s.idx, s.cons.Fanout)
	if err != nil {
		return res, fmt.Errorf("sidecar: backup: %w", err)
	}
	hold := make(chan struct{})
	r.comp.Lock()
	r.hold = hold
	r.comp.Unlock()
	r.ingestNext <- next
	stop()
	r.gate.Lock() // the ingester has stopped, its checkpoint written
	err = s.snapshot(ctx, cfg, tmp, &res)
	r.gate.Unlock()
	r.comp.Lock()
	r.hold = nil
	r.comp.Unlock()
	close(hold)
	if aerr := waitAck(ctx, r.ingestAck); err == nil {
		err = aerr
	}
	if err != nil {
		return res, err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return res, fmt.Errorf("sidecar: backup: %w", err)
	}
	done = true
	if err := fsutil.SyncDir(parent); err != nil {
		return res, fmt.Errorf("sidecar: backup: %w", err)
	}
	s.log.Info("sidecar: backup written", "dir", dest, "records", res.Records, "stores", len(res.Stores))
	return res, nil
}

// snapshot copies every store into dir while nothing is ingested.
func (s *Server) snapshot(ctx context.Context, cfg Config, dir string, res *api.BackupResult) error {
	if err := s.cons.Fanout.Flush(ctx); err != nil {
		return fmt.Errorf("sidecar: backup: consumers: %w", err)
	}
	res.Time = time.Now().UTC().Format(time.RFC3339)
	st := s.ing().Status()
	res.Records, res.Files = st.Records, len(st.Files)
	in := func(name, path string) string {
		rel, err := filepath.Rel(cfg.DataDir, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			rel = filepath.Join("outside-data-dir", name)
		}
		res.Stores = append(res.Stores, api.BackupStore{Name: name, Path: path, In: rel})
		return filepath.Join(dir, rel)
	}
	mkParent := func(p string) error { return os.MkdirAll(filepath.Dir(p), 0o700) }

	if cp, ok := s.idx.(interface{ Checkpoint(string) error }); ok {
		p := in("index", cfg.Index.Path)
		if err := mkParent(p); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
		if err := cp.Checkpoint(p); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
	} else {
		res.Left = append(res.Left, "index "+cfg.Index.URL+": not an embedded index (back it up with its own tools)")
	}
	if p := cfg.Ingest.Checkpoint; p != "" && p != "-" {
		dst := in("ingest checkpoint", p)
		if err := mkParent(dst); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
		if err := fsutil.CopyFile(p, dst, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
	}
	if d := cfg.Ingest.CDXJDir; d != "" && d != "-" && exists(d) { // none before the first WARC
		if err := copyTree(d, in("cdxj", d)); err != nil {
			return fmt.Errorf("sidecar: backup: cdxj: %w", err)
		}
	}
	if s.cons.Captures != nil {
		p := in("capture index", cfg.Access.Index)
		if err := mkParent(p); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
		if err := s.cons.Captures.Checkpoint(p); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
	}
	if s.cons.Live != nil {
		p := in("live mementomap", cfg.Map.Path)
		if err := mkParent(p); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
		if err := s.cons.Live.Backup(filepath.Dir(p)); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
	}
	if s.cons.CharStore != nil {
		p := in("characterization store", cfg.Characterize.Store)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
		if err := s.cons.CharStore.Backup(p); err != nil {
			return fmt.Errorf("sidecar: backup: %w", err)
		}
	}
	if d := cfg.Fixity.Dir; d != "" && d != "-" && exists(d) {
		if err := copyTree(d, in("fixity", d)); err != nil {
			return fmt.Errorf("sidecar: backup: fixity: %w", err)
		}
	}
	if len(cfg.Aggregate.Archives) > 0 {
		res.Left = append(res.Left, "aggregator map cache: fetched again from the archives")
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, backupManifest), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("sidecar: backup: %w", err)
	}
	return fsutil.SyncDir(dir)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// copyTree copies the regular files under src to dst (created), leaving
// out temporary files (".tmp" in their name).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case !d.Type().IsRegular() || strings.Contains(d.Name(), ".tmp"):
			return nil
		}
		return fsutil.CopyFile(p, target, 0o600)
	})
}

// handleBackup is POST /v1/admin/backup {"dir": DIR}: 200 with what the
// snapshot holds, 422 naming why none was written.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var req api.BackupRequest
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &req); err != nil {
		return err
	}
	if req.Dir == "" {
		return &apiError{code: http.StatusBadRequest, msg: `"dir" is required`}
	}
	res, err := s.Backup(r.Context(), req.Dir)
	if err != nil {
		return &apiError{code: http.StatusUnprocessableEntity, msg: err.Error()}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
