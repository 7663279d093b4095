package wayside

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrFanoutClosed is returned by Fanout.OnCapture after Close.
var ErrFanoutClosed = errors.New("wayside: fanout is closed")

// FanoutOption configures a Fanout.
type FanoutOption func(*Fanout)

// WithQueueSize sets how many captures each consumer may have waiting
// (default 8192). When a consumer's queue is full, further captures are
// dropped for it (never for the others, never blocking the producer) and it
// is "behind" until it resyncs.
func WithQueueSize(n int) FanoutOption {
	return func(f *Fanout) {
		if n > 0 {
			f.queue = n
		}
	}
}

// DefaultRecordBudget is the default WithRecordBudget: the most bytes of
// Capture.RecordBytes each consumer's queue holds.
const DefaultRecordBudget = 64 << 20

// WithRecordBudget bounds, per consumer, the bytes of Capture.RecordBytes
// held by the captures in its queue (default DefaultRecordBudget): a
// capture queued while its consumer's budget is spent is delivered without
// RecordBytes (the consumer reads the record back instead). Only
// consumers that want the bytes (RecordBytesWanter) get them at all; n <= 0
// gives them to none.
func WithRecordBudget(n int64) FanoutOption {
	return func(f *Fanout) { f.budget = n }
}

// WithLogger sets the logger consumer failures are reported to.
func WithLogger(l *slog.Logger) FanoutOption {
	return func(f *Fanout) {
		if l != nil {
			f.log = l
		}
	}
}

// WithDrainTimeout bounds how long Close waits for consumers to finish their
// queues (default 1 minute); what is left is counted as dropped.
func WithDrainTimeout(d time.Duration) FanoutOption {
	return func(f *Fanout) {
		if d > 0 {
			f.drain = d
		}
	}
}

// Fanout delivers each capture to every consumer added to it. It is the one
// place where the capture spine branches: producers (crawl, ingest) hand it
// a capture once the record is durable, and return at once; each consumer
// has its own bounded queue and goroutine. A slow consumer falls behind
// (and catches up through Resyncer), a failing or panicking one has its
// errors counted and reported; neither delays the producer nor the other
// consumers.
//
// The zero value is not usable: create one with NewFanout.
type Fanout struct {
	log    *slog.Logger
	queue  int
	drain  time.Duration
	budget int64

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.RWMutex
	closed    bool
	consumers []*consumer
	wg        sync.WaitGroup
}

// NewFanout returns an empty Fanout.
func NewFanout(opts ...FanoutOption) *Fanout {
	f := &Fanout{log: slog.New(slog.DiscardHandler), queue: 8192, drain: time.Minute, budget: DefaultRecordBudget}
	for _, o := range opts {
		o(f)
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f
}

// ConsumerStats describes one consumer of a Fanout.
type ConsumerStats struct {
	Name      string `json:"name"`
	Delivered int64  `json:"delivered"`
	Failed    int64  `json:"failed"`
	// Dropped counts captures not delivered because the queue was full (or
	// still queued when Close gave up); Resyncs how often the consumer
	// caught up after drops.
	Dropped int64 `json:"dropped"`
	Resyncs int64 `json:"resyncs,omitempty"`
	Queued  int   `json:"queued"`
	// Behind is set while dropped captures have not been caught up.
	Behind    bool   `json:"behind,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// RecordBytesHeld is the bytes of Capture.RecordBytes in the queue
	// (at most the Fanout's record budget); RecordBytesStripped counts the
	// captures delivered without them because the budget was spent. Both
	// stay 0 for consumers that do not want record bytes.
	RecordBytesHeld     int64 `json:"record_bytes_held,omitempty"`
	RecordBytesStripped int64 `json:"record_bytes_stripped,omitempty"`
}

type consumer struct {
	name string
	sub  Subscriber
	ch   chan Capture
	// budget bounds the record bytes in ch; nil when the consumer does
	// not want them.
	budget *RecordBudget
	// mu guards the counters below.
	mu        sync.Mutex
	delivered int64
	failed    int64
	dropped   int64
	resyncs   int64
	handled   int64 // captures taken off the queue and delivered (or failed)
	behind    bool
	lastErr   error
	// queued counts captures put on the queue.
	queued atomic.Int64
	// finished is set when the consumer's goroutine returns.
	finished atomic.Bool
}

// Add registers a consumer under a name used in logs and Stats. Consumers
// may be added at any time; one added late sees only later captures.
func (f *Fanout) Add(name string, s Subscriber) {
	c := &consumer{name: name, sub: s, ch: make(chan Capture, f.queue)}
	if WantsRecordBytes(s) {
		c.budget = NewRecordBudget(f.budget)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.consumers = append(f.consumers, c)
	f.wg.Add(1)
	go f.run(c)
}

// WantsRecordBytes reports whether any consumer wants
// Capture.RecordBytes: a producer hands them only then.
func (f *Fanout) WantsRecordBytes() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, k := range f.consumers {
		if k.budget != nil {
			return true
		}
	}
	return false
}

// OnCapture queues c for every consumer and returns without waiting for
// any of them. It never blocks; it fails only after Close. c.RecordBytes
// reach only the consumers that want them, within each one's record
// budget.
func (f *Fanout) OnCapture(_ context.Context, c Capture) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ErrFanoutClosed
	}
	for _, k := range f.consumers {
		kc := c
		var held int64
		if k.budget != nil {
			held = k.budget.Take(&kc)
		} else {
			kc.RecordBytes = nil
		}
		k.queued.Add(1)
		select {
		case k.ch <- kc:
		default:
			k.queued.Add(-1)
			if k.budget != nil {
				k.budget.Release(held)
			}
			k.mu.Lock()
			k.dropped++
			first := !k.behind
			k.behind = true
			k.mu.Unlock()
			if first {
				f.log.Warn("wayside: consumer is behind: its queue is full, captures are dropped for it until it catches up", "consumer", k.name, "queue", cap(k.ch))
			}
		}
	}
	return nil
}

func (f *Fanout) run(k *consumer) {
	defer f.wg.Done()
	defer k.finished.Store(true)
	for {
		select {
		case c, ok := <-k.ch:
			if !ok {
				return
			}
			err := deliver(f.ctx, k.sub, c)
			if k.budget != nil {
				k.budget.Release(int64(len(c.RecordBytes)))
			}
			k.mu.Lock()
			if err != nil {
				k.failed++
				k.lastErr = err
			} else {
				k.delivered++
			}
			k.handled++
			n := k.failed
			k.mu.Unlock()
			if err != nil && (n <= 10 || n&(n-1) == 0) {
				f.log.Warn("wayside: consumer failed on a capture", "consumer", k.name, "uri", c.URI, "file", c.File, "offset", c.Offset, "failures", n, "err", err)
			}
		case <-f.ctx.Done():
			// Close gave up waiting: count what is left.
			n := int64(len(k.ch))
			k.mu.Lock()
			k.dropped += n
			k.handled += n
			if n > 0 {
				k.behind = true
			}
			k.mu.Unlock()
			return
		}
		if len(k.ch) == 0 {
			f.resync(k)
		}
	}
}

func (f *Fanout) resync(k *consumer) {
	k.mu.Lock()
	behind := k.behind
	k.mu.Unlock()
	r, ok := k.sub.(Resyncer)
	if !behind || !ok {
		return
	}
	err := safely(func() error { return r.Resync(f.ctx) })
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		k.failed++
		k.lastErr = fmt.Errorf("resync: %w", err)
		f.log.Warn("wayside: consumer could not catch up", "consumer", k.name, "err", err)
		return
	}
	k.behind = false
	k.resyncs++
	f.log.Info("wayside: consumer caught up", "consumer", k.name, "dropped_so_far", k.dropped)
}

func deliver(ctx context.Context, s Subscriber, c Capture) error {
	return safely(func() error { return s.OnCapture(ctx, c) })
}

func safely(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn()
}

// stuckGrace bounds how long Close waits, after the drain timeout cancelled
// the consumers' context, for a consumer still inside OnCapture or Resync
// (the drain timeout itself when shorter, at least 100ms).
const stuckGrace = 5 * time.Second

// markStuck reports every consumer whose goroutine has not returned.
func (f *Fanout) markStuck() {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, k := range f.consumers {
		if k.finished.Load() {
			continue
		}
		n := int64(len(k.ch))
		k.mu.Lock()
		k.dropped += n
		k.behind = true
		k.lastErr = errors.New("still inside OnCapture or Resync after the drain timeout (it ignores its context): abandoned")
		k.mu.Unlock()
		f.log.Error("wayside: consumer is stuck: abandoned at close", "consumer", k.name)
	}
}

// Stats returns one entry per consumer, in the order they were added.
func (f *Fanout) Stats() []ConsumerStats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]ConsumerStats, 0, len(f.consumers))
	for _, k := range f.consumers {
		k.mu.Lock()
		s := ConsumerStats{Name: k.name, Delivered: k.delivered, Failed: k.failed, Dropped: k.dropped,
			Resyncs: k.resyncs, Queued: len(k.ch), Behind: k.behind}
		if k.budget != nil {
			s.RecordBytesHeld, s.RecordBytesStripped = k.budget.Held(), k.budget.Stripped()
		}
		if k.lastErr != nil {
			s.LastError = k.lastErr.Error()
		}
		k.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// Flush waits until every consumer has handled everything queued before
// the call (and caught up if it was behind), or ctx ends.
func (f *Fanout) Flush(ctx context.Context) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for !f.settled() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// settled reports whether every consumer has handled every capture queued
// for it and is not behind (or cannot catch up anyway).
func (f *Fanout) settled() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, k := range f.consumers {
		k.mu.Lock()
		_, canResync := k.sub.(Resyncer)
		busy := k.handled != k.queued.Load() || (k.behind && canResync && !f.closed)
		k.mu.Unlock()
		if busy {
			return false
		}
	}
	return true
}

// Close stops accepting captures, lets every consumer finish its queue
// (bounded by the drain timeout) and returns an error naming each consumer
// that failed on a capture or missed captures it could not catch up on.
// It does not close the consumers themselves: their owner does, after.
func (f *Fanout) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	for _, k := range f.consumers {
		close(k.ch)
	}
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(f.drain):
		f.cancel()
		// A consumer that ignores its context cannot hold Close (and so
		// the producer's shutdown) forever: after a grace period it is
		// left behind and reported stuck.
		select {
		case <-done:
		case <-time.After(min(max(f.drain, 100*time.Millisecond), stuckGrace)):
			f.markStuck()
		}
	}
	f.cancel()
	var errs []error
	for _, s := range f.Stats() {
		switch {
		case s.Failed > 0:
			errs = append(errs, fmt.Errorf("consumer %s failed on %d of %d captures (last: %s)", s.Name, s.Failed, s.Failed+s.Delivered, s.LastError))
		case s.Behind && s.LastError != "":
			errs = append(errs, fmt.Errorf("consumer %s missed %d captures and has not caught up (%s)", s.Name, s.Dropped, s.LastError))
		case s.Behind:
			errs = append(errs, fmt.Errorf("consumer %s missed %d captures and has not caught up", s.Name, s.Dropped))
		}
	}
	return errors.Join(errs...)
}
