package s3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/internal/failpoint"
)

// Mirror copies the closed WARC files of a local directory (a crawl's
// WARC directory) to a bucket, each with its CDXJ side file, and removes
// the local copies once the remote ones are proved (Upload reads them back
// whole), unless KeepLocal. The dedup ordering rule is untouched: the
// crawler writes and fsyncs locally as always; the mirror only ever sees
// files the writer has closed (no ".open" suffix).
//
// Its state is on disk and derived: a closed WARC file still in the
// directory has not been proved remote (or is kept), and NAME.uploaded
// beside a kept file records the proof (URL, size, SHA-256). After a
// crash, Sync uploads what is left; an upload cut off half way is simply
// done again.
type Mirror struct {
	Dir       string
	Bucket    *Bucket
	KeepLocal bool
	Logger    *slog.Logger
}

// UploadedSuffix names the proof file of a file kept locally.
const UploadedSuffix = ".uploaded"

// SyncReport counts one Sync.
type SyncReport struct {
	Uploaded []Upload
	// Failed names the files that could not be uploaded (kept locally).
	Failed []string
}

// warcFile reports whether name is a closed WARC (or ARC) file.
func warcFile(name string) bool {
	for _, ext := range []string{".warc.gz", ".warc", ".arc.gz", ".arc"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// sideFiles are the CDXJ side files of a WARC file, under either naming.
func sideFiles(dir, name string) []string {
	var out []string
	base := strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".warc")
	for _, c := range []string{name + ".cdxj", base + ".cdxj"} {
		if _, err := os.Stat(filepath.Join(dir, c)); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// Sync uploads every closed WARC file not yet proved remote. A failed
// file is reported and kept; the others go on.
func (m *Mirror) Sync(ctx context.Context) (SyncReport, error) {
	var rep SyncReport
	ents, err := os.ReadDir(m.Dir)
	if err != nil {
		return rep, fmt.Errorf("s3: mirror %s: %w", m.Dir, err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && warcFile(e.Name()) {
			if _, err := os.Stat(filepath.Join(m.Dir, e.Name()+UploadedSuffix)); err == nil {
				continue // kept locally, already proved
			}
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	log := m.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		up, err := m.one(ctx, name)
		if err != nil {
			log.Warn("s3: mirror: upload failed; the local file is kept", "file", name, "err", err)
			rep.Failed = append(rep.Failed, name+": "+err.Error())
			continue
		}
		rep.Uploaded = append(rep.Uploaded, up)
	}
	return rep, nil
}

func (m *Mirror) one(ctx context.Context, name string) (Upload, error) {
	p := filepath.Join(m.Dir, name)
	// The side files first: a WARC file in the bucket always has its
	// index there.
	for _, sf := range sideFiles(m.Dir, name) {
		b, err := os.ReadFile(filepath.Join(m.Dir, sf))
		if err != nil {
			return Upload{}, err
		}
		if err := m.Bucket.Put(ctx, sf, b); err != nil {
			return Upload{}, err
		}
	}
	up, err := m.Bucket.Upload(ctx, p, name)
	if err != nil {
		return up, err
	}
	if m.KeepLocal {
		b, _ := json.Marshal(struct {
			Upload
			At time.Time `json:"at"`
		}{up, time.Now().UTC()})
		if err := os.WriteFile(p+UploadedSuffix, append(b, '\n'), 0o644); err != nil {
			return up, err
		}
		return up, nil
	}
	// Proved remote: the local copies may go.
	if err := failpoint.Inject("s3.mirror-before-remove"); err != nil {
		return up, err
	}
	for _, sf := range sideFiles(m.Dir, name) {
		if err := os.Remove(filepath.Join(m.Dir, sf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return up, err
		}
	}
	if err := failpoint.Inject("s3.mirror-between-removes"); err != nil {
		return up, err
	}
	if err := os.Remove(p); err != nil {
		return up, err
	}
	return up, nil
}

// Run syncs every interval until ctx ends, then once more with a fresh
// context bounded by final (the files closed last), and returns the
// report of that last sync.
func (m *Mirror) Run(ctx context.Context, interval, final time.Duration) (SyncReport, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), final)
			defer cancel()
			return m.Sync(fctx)
		case <-t.C:
			if _, err := m.Sync(ctx); err != nil && ctx.Err() == nil {
				return SyncReport{}, err
			}
		}
	}
}
