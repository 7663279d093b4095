package fixity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ReplayerInterface is what a Sweeper needs from a replayer; *Replayer
// implements it.
type ReplayerInterface interface {
	Replay(ctx context.Context, urim string, opts ...ReplayOption) (*Manifest, error)
}

// SweeperOptions configures a Sweeper.
type SweeperOptions struct {
	// Replayer replays one URI-M. Required.
	Replayer ReplayerInterface
	// Config canonicalises URI-Ms. Required.
	Config *Config
	// History receives one record per URI-M per sweep. Required.
	History *History
	// Parallel is the number of pages replayed at once (default 2). Memory
	// is bounded by it: each page holds one tab and its manifest.
	Parallel int
	// Retries is how many times a transient replay (5xx, timeout, browser
	// crash) is retried (default 2).
	Retries int
	// RetryDelay is the pause before the first retry, doubled each time
	// (default 2s).
	RetryDelay time.Duration
	// AcceptAfter: a root seen this many times in comparable replays joins
	// the accepted-state set, so a memento that flips between known states
	// (JavaScript randomness) settles. 0 means 2; negative disables. The
	// first comparable replay of a URI-M is always accepted as baseline.
	AcceptAfter int
	// Evidence is the retention policy for replay evidence WARCs
	// (default RetainNone): RetainAll keeps every replay's evidence,
	// RetainOnChange only that of the first comparable replay of a URI-M
	// and of every replay whose root differs from the previous comparable
	// one (so both sides of every change are kept).
	Evidence Retention
	// EvidenceMaxBytes bounds the evidence the store keeps (default
	// 1 GiB): after every recorded replay the oldest evidence is evicted
	// until the total is at most this. While replays run, each of the
	// Parallel replays in flight adds at most its own staged evidence on
	// top, so disk use for evidence stays below EvidenceMaxBytes plus
	// Parallel times the evidence of one replay.
	EvidenceMaxBytes int64
	// Logger receives progress; default discards.
	Logger *slog.Logger
}

// Retention is an evidence retention policy.
type Retention string

// Retention policies.
const (
	RetainNone     Retention = "none"
	RetainOnChange Retention = "on-change"
	RetainAll      Retention = "keep-all"
)

// DefaultEvidenceMaxBytes is the default evidence budget of a store.
const DefaultEvidenceMaxBytes = 1 << 30

// ParseRetention parses a retention policy name.
func ParseRetention(s string) (Retention, error) {
	switch r := Retention(s); r {
	case RetainNone, RetainOnChange, RetainAll:
		return r, nil
	case "":
		return RetainNone, nil
	}
	return "", fmt.Errorf("fixity: unknown evidence retention %q (want keep-all, on-change or none)", s)
}

// Sweeper replays lists of URI-Ms, compares each with its history and
// appends the results durably.
type Sweeper struct {
	o  SweeperOptions
	mu sync.Mutex // serialises compare-and-append per URI-M
}

// SweepResult summarises one sweep.
type SweepResult struct {
	Sweep    string        `json:"sweep"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Total    int           `json:"total"`
	ByClass  map[Class]int `json:"by_class"`
	Changed  int           `json:"changed"`
	Failed   int           `json:"failed"` // refused or never replayed
	// Unchecked names every URI-M whose root was not compared (failed,
	// transient after the retries, or missing: answered 404, 410...),
	// in input order.
	Unchecked []Unchecked `json:"unchecked,omitempty"`
}

// Unchecked is a URI-M a sweep could not check, and why.
type Unchecked struct {
	URIM   string `json:"urim"`
	Class  Class  `json:"class,omitempty"` // transient, missing or refused; "" when it failed without a record
	Reason string `json:"reason"`
}

// NewSweeper checks options.
func NewSweeper(o SweeperOptions) (*Sweeper, error) {
	if o.Replayer == nil || o.History == nil || o.Config == nil {
		return nil, errors.New("fixity: new sweeper: Replayer, Config and History are required")
	}
	if o.Parallel <= 0 {
		o.Parallel = 2
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = 2
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 2 * time.Second
	}
	if o.AcceptAfter == 0 {
		o.AcceptAfter = 2
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if _, err := ParseRetention(string(o.Evidence)); err != nil {
		return nil, err
	}
	if o.Evidence == "" {
		o.Evidence = RetainNone
	}
	if o.EvidenceMaxBytes <= 0 {
		o.EvidenceMaxBytes = DefaultEvidenceMaxBytes
	}
	return &Sweeper{o: o}, nil
}

// Run replays every URI-M once (duplicates once), o.Parallel at a time, and
// returns when all are recorded or ctx ends. Records already appended stay.
func (s *Sweeper) Run(ctx context.Context, urims []string) (SweepResult, error) {
	res := SweepResult{Started: time.Now().UTC(), ByClass: map[Class]int{}}
	res.Sweep = res.Started.Format(time.RFC3339Nano)
	seen := map[string]bool{}
	var list []string
	for _, u := range urims {
		if !seen[u] {
			seen[u] = true
			list = append(list, u)
		}
	}
	var mu sync.Mutex
	var firstErr error
	unchecked := map[string]Unchecked{}
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(s.o.Parallel, max(len(list), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				rec, err := s.one(ctx, res.Sweep, u)
				mu.Lock()
				res.Total++
				if err != nil {
					if firstErr == nil && ctx.Err() == nil && !errors.Is(err, ErrOutOfScope) {
						firstErr = err
					}
					res.Failed++
					if ctx.Err() == nil {
						unchecked[u] = Unchecked{URIM: u, Class: rec.Class, Reason: err.Error()}
					}
				} else {
					res.ByClass[rec.Class]++
					if rec.Class.IsChange() {
						res.Changed++
					}
					if rec.Class == ClassTransient || rec.Class == ClassMissing {
						unchecked[u] = Unchecked{URIM: u, Class: rec.Class, Reason: strings.Join(rec.Errors, "; ")}
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, u := range list {
		select {
		case work <- u:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	for _, u := range list {
		if x, ok := unchecked[u]; ok {
			res.Unchecked = append(res.Unchecked, x)
		}
	}
	res.Finished = time.Now().UTC()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, firstErr
}

// one replays a URI-M with retries and records the outcome.
func (s *Sweeper) one(ctx context.Context, sweep, urim string) (Record, error) {
	canon, _ := s.o.Config.Canonical(urim)
	var m *Manifest
	var err error
	stage := ""
	defer func() { s.o.History.DiscardEvidence(stage) }() // unless moved into the store
	attempts := 0
	delay := s.o.RetryDelay
	for attempt := 0; attempt <= s.o.Retries; attempt++ {
		if attempt > 0 {
			s.o.Logger.Info("fixity: retrying transient replay", "urim", urim, "attempt", attempt+1, "err", err, "errors", manifestErrors(m))
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return Record{}, ctx.Err()
			}
			delay *= 2
		}
		attempts++
		s.o.History.DiscardEvidence(stage) // an earlier attempt's
		stage = ""
		var opts []ReplayOption
		if s.o.Evidence != RetainNone {
			if stage, err = s.o.History.StageEvidence(); err != nil {
				return Record{}, err
			}
			opts = append(opts, WithEvidence(stage))
		}
		m, err = s.o.Replayer.Replay(ctx, urim, opts...)
		if errors.Is(err, ErrOutOfScope) {
			rec := Record{Kind: KindReplay, Sweep: sweep, URIM: canon, Class: ClassRefused, Attempts: attempts, Errors: []string{err.Error()}}
			if aerr := s.o.History.Append(rec); aerr != nil {
				return rec, aerr
			}
			return rec, err
		}
		if ctx.Err() != nil {
			return Record{}, ctx.Err()
		}
		if err != nil {
			continue
		}
		if _, transient := m.Unusable(); !transient {
			break
		}
	}
	rec := Record{Kind: KindReplay, Sweep: sweep, URIM: canon, Attempts: attempts}
	if err != nil {
		rec.Class, rec.Transient, rec.Errors = ClassTransient, true, []string{err.Error()}
		if aerr := s.o.History.Append(rec); aerr != nil {
			return rec, aerr
		}
		return rec, nil
	}
	rec.Archive, rec.Root, rec.Checks = m.Archive, m.Root.String(), m.Checks
	if why, transient := m.Unusable(); why != "" && !m.Context.Transient {
		// The URI-M itself was not answered with a memento: its root is
		// never compared, nor taken as a baseline.
		rec.Class, rec.Errors = ClassMissing, []string{why}
		if transient {
			rec.Class, rec.Transient = ClassTransient, true
		}
		if err := s.o.History.Append(rec); err != nil {
			return rec, err
		}
		return rec, nil
	}
	st := s.o.History.State(canon)
	keep := ""
	switch {
	case s.o.Evidence == RetainAll:
		keep = stage
	case s.o.Evidence == RetainOnChange && !m.Context.Transient && (st.Last == nil || st.Last.Root != rec.Root):
		keep = stage
	}
	rel, evidence, err := s.o.History.SaveReplay(m, keep)
	stage = "" // moved or removed by SaveReplay
	if err != nil {
		return rec, err
	}
	rec.Manifest = rel
	if evidence != "" {
		rec.Evidence, rec.EvidenceBytes = filepath.ToSlash(evidence), m.Evidence.Bytes()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	st = s.o.History.State(canon)
	var prev *Manifest
	if st.Last != nil {
		if prev, err = s.o.History.LoadManifest(st.Last.Manifest); err != nil {
			return rec, fmt.Errorf("fixity: sweep %s: previous manifest: %w", urim, err)
		}
	}
	accepted := st.Accepted
	autoAccept := ""
	if !m.Context.Transient {
		switch {
		case st.Last == nil && len(st.Accepted) == 0:
			autoAccept = "baseline"
		case s.o.AcceptAfter > 0 && !containsHash(accepted, m.Root) && st.Seen[m.Root]+1 >= s.o.AcceptAfter:
			autoAccept = fmt.Sprintf("seen %d times", st.Seen[m.Root]+1)
		}
		if autoAccept != "" {
			accepted = append(accepted, m.Root)
		}
	}
	ch := CompareAccepted(accepted, prev, m)
	rec.Class, rec.Changed, rec.Transient, rec.Errors = ch.Class, ch.Resources, m.Context.Transient, m.Context.Errors
	if autoAccept != "" {
		if err := s.o.History.Accept(canon, m.Root, autoAccept); err != nil {
			return rec, err
		}
	}
	if err := s.o.History.Append(rec); err != nil {
		return rec, err
	}
	if rec.Evidence != "" {
		if err := s.o.History.EnforceEvidenceBudget(s.o.EvidenceMaxBytes); err != nil {
			return rec, err
		}
	}
	s.o.Logger.Debug("fixity: replayed", "urim", urim, "root", m.Root, "class", rec.Class, "attempts", attempts)
	return rec, nil
}

func manifestErrors(m *Manifest) []string {
	if m == nil {
		return nil
	}
	return m.Context.Errors
}
