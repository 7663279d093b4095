package crawl

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/wayside-archive/wayside/dedupindex"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
)

// IndexSubdir is where a Session keeps its embedded dedup index when no
// index directory is given: inside the WARC directory, so the index and the
// records it points at travel together.
const IndexSubdir = "dedup-index"

// Config configures a Session: a WARC writer, an embedded pebble dedup
// index with its policy, and a Recorder wired to both.
type Config struct {
	// WARCDir is where WARC and CDXJ files go (required).
	WARCDir string
	// IndexDir is the pebble dedup index directory (default
	// WARCDir/dedup-index).
	IndexDir string
	// NoDedup disables deduplication (no index is opened).
	NoDedup bool
	// Policy is the dedup policy (zero: URL-agnostic, 2xx, non-empty).
	Policy dedupindex.Policy
	// Writer configures the WARC writer; Dir is set from WARCDir.
	Writer WriterOptions
	// Recorder configures the recorder; Writer and Dedup are set here.
	Recorder Options
}

// Session is an open recording setup. Close it to finalise the WARC files.
type Session struct {
	Writer   *Writer
	Index    dedupindex.Index // nil with NoDedup
	Deduper  *dedupindex.Deduper
	Recorder *Recorder
}

// Open opens (and recovers) the WARC directory and the dedup index and
// returns a Session whose Recorder is ready for use as an http.RoundTripper.
func Open(cfg Config) (*Session, error) {
	if cfg.WARCDir == "" {
		return nil, errors.New("crawl: no WARC directory given")
	}
	wo := cfg.Writer
	wo.Dir = cfg.WARCDir
	if wo.Logger == nil {
		wo.Logger = cfg.Recorder.Logger
	}
	w, err := OpenWriter(wo)
	if err != nil {
		return nil, err
	}
	s := &Session{Writer: w}
	ro := cfg.Recorder
	ro.Writer = w
	if !cfg.NoDedup {
		dir := cfg.IndexDir
		if dir == "" {
			dir = filepath.Join(cfg.WARCDir, IndexSubdir)
		}
		var popts []dipebble.Option
		if ro.Logger != nil {
			popts = append(popts, dipebble.WithLogger(ro.Logger))
		}
		ix, err := dipebble.Open(dir, popts...)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("crawl: open dedup index %s: %w", dir, err)
		}
		d, err := dedupindex.NewDeduper(ix, cfg.Policy)
		if err != nil {
			ix.Close()
			w.Close()
			return nil, fmt.Errorf("crawl: dedup policy: %w", err)
		}
		s.Index, s.Deduper = ix, d
		ro.Dedup = d
	}
	r, err := NewRecorder(ro)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Recorder = r
	return s, nil
}

// Close closes idle connections, finalises the WARC files (fsync, rename)
// and closes the index.
func (s *Session) Close() error {
	if s.Recorder != nil {
		s.Recorder.CloseIdleConnections()
	}
	err := s.Writer.Close()
	if s.Index != nil {
		if ierr := s.Index.Close(); err == nil && ierr != nil {
			err = fmt.Errorf("crawl: close dedup index: %w", ierr)
		}
	}
	return err
}
