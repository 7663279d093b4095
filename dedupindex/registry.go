package dedupindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// OpenOptions are settings of OpenURL that do not belong in an index URL.
type OpenOptions struct {
	// Logger receives the backend's log lines (default: discard).
	Logger *slog.Logger
	// Token is the bearer token for a sidecar reached over TCP.
	Token string
}

// Opener opens one backend from its parsed URL (see RegisterScheme).
type Opener func(ctx context.Context, u *url.URL, o OpenOptions) (Index, error)

// The registry of URL schemes: each backend package registers its own
// scheme when it is linked in (database/sql's drivers, litestream's replica
// clients), so this package imports none of them and a program links only
// the backends it imports.
var (
	regMu   sync.RWMutex
	openers = map[string]Opener{}
)

// RegisterScheme makes the backend open reachable through OpenURL under
// scheme. Backend packages call it from init; registering a scheme twice
// or a nil opener panics, as sql.Register does.
func RegisterScheme(scheme string, open Opener) {
	scheme = strings.ToLower(scheme)
	regMu.Lock()
	defer regMu.Unlock()
	if open == nil {
		panic("dedupindex: RegisterScheme of a nil opener for " + scheme)
	}
	if _, dup := openers[scheme]; dup {
		panic("dedupindex: RegisterScheme called twice for " + scheme)
	}
	openers[scheme] = open
}

func opener(scheme string) Opener {
	regMu.RLock()
	defer regMu.RUnlock()
	return openers[scheme]
}

// Schemes lists the registered URL schemes, sorted.
func Schemes() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	var s []string
	for k := range openers {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// ErrBadURL is wrapped by every error about the index URL itself.
var ErrBadURL = errors.New("bad index URL")

// ParseURL checks an index URL (or bare path) and returns it parsed; a
// bare path becomes pebble:///ABS-PATH. A scheme no linked backend
// registered is refused, naming the ones that are.
func ParseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadURL)
	}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme || strings.ContainsAny(scheme, `/\.`) {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrBadURL, raw, err)
		}
		return &url.URL{Scheme: "pebble", Path: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrBadURL, raw, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if opener(u.Scheme) == nil {
		return nil, fmt.Errorf("%w: %q: unknown scheme %q (known: %s)", ErrBadURL, raw, u.Scheme, strings.Join(Schemes(), ", "))
	}
	return u, nil
}

// OpenURL opens the index raw names through the backend registered for its
// scheme. The caller closes it.
func OpenURL(ctx context.Context, raw string, o OpenOptions) (Index, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	open := opener(u.Scheme)
	if open == nil { // a bare path, and the pebble backend is not linked in
		return nil, fmt.Errorf("%w: %q: no %s backend linked into this program (known: %s)", ErrBadURL, raw, u.Scheme, strings.Join(Schemes(), ", "))
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ix, err := open(ctx, u, o)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", Redact(u), err)
	}
	return ix, nil
}

// Redact returns u as text without passwords or tokens, for logs.
func Redact(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(c.User.Username())
	}
	q := c.Query()
	for _, k := range []string{"password", "token"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
		}
	}
	c.RawQuery = q.Encode()
	return c.Redacted()
}
