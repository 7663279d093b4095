package crawl

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/dedupindex"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	"github.com/wayside-archive/wayside/warcfile"
)

// IndexSubdir is where a Session keeps its embedded dedup index when no
// index directory is given: inside the WARC directory, so the index and the
// records it points at travel together.
const IndexSubdir = "dedup-index"

// Config configures a Session: a WARC writer, a dedup index with its
// policy, and a Recorder wired to both.
type Config struct {
	// WARCDir is where WARC and CDXJ files go (required).
	WARCDir string
	// Index is the dedup index (any backend; dedupindex.OpenURL opens one
	// by URL in a program that links the backend). The Session does not
	// close an index it was given. When nil, the Session opens (and
	// closes) the embedded pebble index in WARCDir/dedup-index.
	Index dedupindex.Index
	// NoDedup disables deduplication (no index is opened).
	NoDedup bool
	// Policy is the dedup policy (zero: URL-agnostic, 2xx, non-empty).
	Policy dedupindex.Policy
	// Writer configures the WARC writer; Dir is set from WARCDir.
	Writer warcfile.WriterOptions
	// Recorder configures the recorder; Writer and Dedup are set here.
	Recorder Options
	// Subscriber receives the capture of every record once durable, in
	// file order (WriterOptions.Subscriber): give it the wayside.Fanout of
	// the crawl's consumers (package consumers).
	Subscriber wayside.Subscriber
}

// Session is an open recording setup. Close it to finalise the WARC files.
type Session struct {
	Writer   *warcfile.Writer
	Index    dedupindex.Index // nil with NoDedup
	Deduper  *dedupindex.Deduper
	Recorder *Recorder
	ownIndex bool // opened here: closed by Close
}

// Open opens (and recovers) the WARC directory and the dedup index and
// returns a Session whose Recorder is ready for use as an http.RoundTripper.
func Open(cfg Config) (*Session, error) {
	if cfg.WARCDir == "" {
		return nil, errors.New("crawl: no WARC directory given")
	}
	wo := cfg.Writer
	wo.Dir = cfg.WARCDir
	if cfg.Subscriber != nil {
		wo.Subscriber = cfg.Subscriber
	}
	if wo.Scope == "" && !cfg.NoDedup {
		wo.Scope = cfg.Policy.Scope
		if wo.Scope == "" {
			wo.Scope = dedupindex.DefaultScope
		}
	}
	if wo.Logger == nil {
		wo.Logger = cfg.Recorder.Logger
	}
	w, err := warcfile.OpenWriter(wo)
	if err != nil {
		return nil, err
	}
	s := &Session{Writer: w}
	ro := cfg.Recorder
	ro.Writer = w
	if !cfg.NoDedup {
		ix := cfg.Index
		if ix == nil {
			dir := filepath.Join(cfg.WARCDir, IndexSubdir)
			l := ro.Logger
			if l == nil {
				l = slog.New(slog.DiscardHandler)
			}
			if ix, err = dipebble.Open(dir, dipebble.WithLogger(l)); err != nil {
				w.Close()
				abs, _ := filepath.Abs(dir)
				return nil, fmt.Errorf("crawl: open index pebble://%s: %w", abs, err)
			}
			s.ownIndex = true
		}
		d, err := dedupindex.NewDeduper(ix, cfg.Policy)
		if err != nil {
			if s.ownIndex {
				ix.Close()
			}
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
	if s.Index != nil && s.ownIndex {
		if ierr := s.Index.Close(); err == nil && ierr != nil {
			err = fmt.Errorf("crawl: close dedup index: %w", ierr)
		}
	}
	return err
}
