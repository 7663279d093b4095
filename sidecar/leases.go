package sidecar

import (
	"context"
	"sync"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
)

// leases bounds the life of claims handed out over the API. A crawler that
// dies between claim and commit would otherwise leave the claim pending in
// the daemon for good: other crawlers would never dedup that digest again,
// and ingest (whose Puts wait for pending claims) would stall on it. A
// claim neither committed nor cancelled within limits.claim_ttl is
// cancelled; a late commit then gets 409 (its record stays a full response:
// a missed dedup, never a dangling revisit).
type leases struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]lease // ticket token → lease
}

type lease struct {
	t        dedupindex.Ticket
	deadline time.Time
}

func newLeases(ttl time.Duration) *leases {
	return &leases{ttl: ttl, m: map[string]lease{}}
}

func (l *leases) add(t dedupindex.Ticket) {
	l.mu.Lock()
	l.m[t.Token] = lease{t: t, deadline: time.Now().Add(l.ttl)}
	l.mu.Unlock()
}

func (l *leases) done(t dedupindex.Ticket) {
	l.mu.Lock()
	delete(l.m, t.Token)
	l.mu.Unlock()
}

func (l *leases) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// expire removes and returns the leases past their deadline.
func (l *leases) expire(now time.Time) []dedupindex.Ticket {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []dedupindex.Ticket
	for tok, ls := range l.m {
		if now.After(ls.deadline) {
			out = append(out, ls.t)
			delete(l.m, tok)
		}
	}
	return out
}

// runLeases cancels expired claims until ctx ends.
func (s *Server) runLeases(ctx context.Context) {
	tick := s.cfg.Limits.ClaimTTL / 10
	if tick < 10*time.Millisecond {
		tick = 10 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, tk := range s.leases.expire(now) {
				if err := s.idx.Cancel(ctx, tk); err == nil {
					s.metrics.ClaimsExpired.Add(1)
					s.log.Warn("dedup: claim expired without commit or cancel; cancelled", "digest", tk.Key.Digest, "scope", tk.Key.Scope, "ttl", s.cfg.Limits.ClaimTTL)
				}
			}
		}
	}
}
