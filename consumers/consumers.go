package consumers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	wayside "github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/mementomap"
)

// Config says which consumers run beside a producer. The zero value runs
// none (the Fanout still reports what it delivered).
type Config struct {
	// CDXJDirs are the directories where the producer writes the CDXJ
	// files beside its WARC files (the crawl's WARC directory, the
	// sidecar's ingest.cdxj_dir): the source every consumer catches up
	// from (wayside.Resyncer).
	CDXJDirs []string
	// LiveMap configures the live MementoMap; a zero Path runs none.
	LiveMap LiveMapConfig
	// Characterize configures format characterization; a zero Store runs
	// none.
	Characterize CharacterizeConfig
	// CaptureIndex configures the capture index (what the access routes
	// answer from); a zero Dir runs none.
	CaptureIndex CaptureIndexConfig
	// Extra consumers are added after the built-in ones, in order
	// (programs embedding Wayside, tests).
	Extra []Named
	// QueueSize is each consumer's queue (default: the Fanout's).
	QueueSize int
	// DrainTimeout bounds how long Close waits for consumers to finish
	// their queues (default: the Fanout's).
	DrainTimeout time.Duration
	// RecordBudget bounds, per consumer that wants them, the bytes of
	// Capture.RecordBytes held in its Fanout queue, and those held by the
	// characterizer's own queue (0: wayside.DefaultRecordBudget, 64 MiB;
	// negative: no record bytes are handed on, consumers read records
	// back). See wayside.WithRecordBudget.
	RecordBudget int64
	// Logger receives consumer failures (default: discard).
	Logger *slog.Logger
}

// LiveMapConfig configures the live MementoMap consumer (mementomap.Live).
type LiveMapConfig struct {
	// Path of the map file ("": no live map). Its catch-up state is kept
	// beside it in PATH.state.json.
	Path string
	// Name is the archive name written in a new map's !meta header.
	Name string
	// MergeInterval is how often captures held in memory are merged into
	// the map file (default 1 minute).
	MergeInterval time.Duration
	// Compact compacts the map on every merge with weight Weight for host
	// and path roll-ups.
	Compact bool
	Weight  float64
}

// CharacterizeConfig configures the characterization consumer
// (characterize).
type CharacterizeConfig struct {
	// Store is the results directory ("": no characterization).
	Store string
	// WARCDirs are where the producer's WARC files are (records are read
	// back from them).
	WARCDirs []string
	// Workers identify payloads in parallel (default: GOMAXPROCS).
	Workers int
	// Limits bound the unpacking of containers (zero fields: defaults).
	Limits characterize.Limits
}

// CaptureIndexConfig configures the capture index consumer
// (captureindex.Index).
type CaptureIndexConfig struct {
	// Dir of the index ("": no capture index).
	Dir string
	// Scope is the collection captures without a scope (and CDXJ lines
	// caught up from) are filed under (default captureindex.DefaultScope).
	Scope string
}

// CaptureIndexSubdir is where a crawl keeps the capture index of its WARC
// directory by default.
const CaptureIndexSubdir = "capture-index"

// Named is a consumer with the name it has in logs and stats.
type Named struct {
	Name string
	Sub  wayside.Subscriber
}

// Consumer names of the built-in consumers.
const (
	NameLiveMap      = "live-map"
	NameCharacterize = "characterize"
	NameCaptureIndex = "capture-index"
)

// Set is the running consumers of one producer: the Fanout the producer
// delivers to, and the consumers it owns.
type Set struct {
	// Fanout is what the producer delivers captures to (its Subscriber).
	Fanout *wayside.Fanout
	// Live is the live MementoMap (nil without one).
	Live *mementomap.Live
	// Characterizer and CharStore are the characterization consumer and
	// its results (nil without one).
	Characterizer *characterize.Characterizer
	CharStore     *characterize.Store
	// Captures is the capture index (nil without one).
	Captures *captureindex.Index

	log      *slog.Logger
	subs     []Named
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mergeErr error
	closed   bool
}

// Open builds the consumers cfg names and a Fanout delivering to each. It
// does not catch them up: call CatchUp once the producer has recovered its
// CDXJ files and before it produces.
func Open(cfg Config) (*Set, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Set{log: cfg.Logger}
	if cfg.LiveMap.Path != "" {
		l, err := openLiveMap(cfg.LiveMap, cfg.CDXJDirs, cfg.Logger)
		if err != nil {
			return nil, err
		}
		s.Live = l
		s.subs = append(s.subs, Named{NameLiveMap, l})
	}
	if cfg.Characterize.Store != "" {
		if err := s.openCharacterize(cfg.Characterize, cfg.CDXJDirs, cfg.RecordBudget, cfg.Logger); err != nil {
			if s.Live != nil {
				s.Live.Close()
			}
			return nil, err
		}
		s.subs = append(s.subs, Named{NameCharacterize, s.Characterizer})
	}
	if cfg.CaptureIndex.Dir != "" {
		ix, err := captureindex.Open(cfg.CaptureIndex.Dir, captureindex.WithScope(cfg.CaptureIndex.Scope),
			captureindex.WithCDXJDirs(cfg.CDXJDirs...), captureindex.WithLogger(cfg.Logger.With("consumer", NameCaptureIndex)))
		if err != nil {
			if s.Live != nil {
				s.Live.Close()
			}
			if s.Characterizer != nil {
				s.Characterizer.Close()
				s.CharStore.Close()
			}
			return nil, fmt.Errorf("consumers: %w", err)
		}
		s.Captures = ix
		s.subs = append(s.subs, Named{NameCaptureIndex, ix})
	}
	s.subs = append(s.subs, cfg.Extra...)
	opts := []wayside.FanoutOption{wayside.WithLogger(cfg.Logger)}
	if cfg.QueueSize > 0 {
		opts = append(opts, wayside.WithQueueSize(cfg.QueueSize))
	}
	if cfg.DrainTimeout > 0 {
		opts = append(opts, wayside.WithDrainTimeout(cfg.DrainTimeout))
	}
	if cfg.RecordBudget != 0 {
		opts = append(opts, wayside.WithRecordBudget(cfg.RecordBudget))
	}
	s.Fanout = wayside.NewFanout(opts...)
	for _, n := range s.subs {
		s.Fanout.Add(n.Name, n.Sub)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if s.Live != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.mergeErr = s.Live.Run(ctx)
		}()
	}
	return s, nil
}

func openLiveMap(cfg LiveMapConfig, cdxjDirs []string, log *slog.Logger) (*mementomap.Live, error) {
	if len(cdxjDirs) == 0 {
		return nil, errors.New("consumers: a live map needs the CDXJ directories of its producer to catch up from")
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o755); err != nil {
		return nil, fmt.Errorf("consumers: live map: %w", err)
	}
	opts := mementomap.LiveOptions{Name: cfg.Name, Interval: cfg.MergeInterval, CDXJDirs: cdxjDirs,
		Logger: log.With("consumer", NameLiveMap)}
	if cfg.Compact {
		opts.Compact = &mementomap.CompactOptions{Wh: cfg.Weight, Wp: cfg.Weight}
	}
	l, err := mementomap.OpenLive(cfg.Path, opts)
	if err != nil {
		return nil, fmt.Errorf("consumers: live map: %w", err)
	}
	return l, nil
}

func (s *Set) openCharacterize(cfg CharacterizeConfig, cdxjDirs []string, budget int64, log *slog.Logger) error {
	log = log.With("consumer", NameCharacterize)
	eng, err := characterize.NewEngine()
	if err != nil {
		return fmt.Errorf("consumers: %w", err)
	}
	st, err := characterize.OpenStore(cfg.Store, characterize.StoreOptions{Logger: log})
	if err != nil {
		return fmt.Errorf("consumers: %w", err)
	}
	c, err := characterize.New(characterize.Options{Store: st, Identifier: characterize.NewIdentifier(eng, cfg.Limits),
		Dirs: cfg.WARCDirs, CDXJDirs: cdxjDirs, Workers: cfg.Workers, RecordBudget: budget, Logger: log})
	if err != nil {
		st.Close()
		return fmt.Errorf("consumers: %w", err)
	}
	s.Characterizer, s.CharStore = c, st
	return nil
}

// CatchUp lets every consumer that can (a wayside.Resyncer) catch up from
// the producer's CDXJ files: what it missed while the producer ran without
// it, or in a crash. Call it after the producer's own recovery (crawl:
// crawl.Open; ingest: the Recovered hook) and before captures flow.
func (s *Set) CatchUp(ctx context.Context) error {
	if err := failpoint.Wait(ctx, "consumers.catch-up"); err != nil {
		return fmt.Errorf("consumers: catch up: %w", err)
	}
	for _, n := range s.subs {
		r, ok := n.Sub.(wayside.Resyncer)
		if !ok {
			continue
		}
		if err := r.Resync(ctx); err != nil {
			return fmt.Errorf("consumers: %s: catch up: %w", n.Name, err)
		}
	}
	return nil
}

// Stats returns the Fanout's statistics per consumer.
func (s *Set) Stats() []wayside.ConsumerStats { return s.Fanout.Stats() }

// Close stops taking captures, lets every consumer finish its queue (and
// catch up if it fell behind), then closes the consumers it owns (the live
// map merges what it holds). The error names every consumer that failed
// on a capture, missed captures it could not catch up on, or failed to
// close: a consumer failure is never silent.
func (s *Set) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.Fanout.Close()
	s.cancel()
	s.wg.Wait()
	if s.mergeErr != nil {
		err = errors.Join(err, fmt.Errorf("consumer %s: %w", NameLiveMap, s.mergeErr))
	}
	if s.Live != nil {
		if cerr := s.Live.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("consumer %s: %w", NameLiveMap, cerr))
		}
	}
	if s.Characterizer != nil {
		if cerr := errors.Join(s.Characterizer.Close(), s.CharStore.Close()); cerr != nil {
			err = errors.Join(err, fmt.Errorf("consumer %s: %w", NameCharacterize, cerr))
		}
	}
	if s.Captures != nil {
		if cerr := s.Captures.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("consumer %s: %w", NameCaptureIndex, cerr))
		}
	}
	return err
}
