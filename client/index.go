package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/dedupindex"
)

// Index adapts the client to dedupindex.Index, so a Go crawler can put a
// dedupindex.Deduper (and crawl.Recorder) in front of a running sidecar:
//
//	c, _ := client.New("/var/lib/wayside/wayside.sock")
//	d, _ := dedupindex.NewDeduper(c.Index(), dedupindex.Policy{})
//
// Keys are passed as they are (Key.URL already in dedupindex.URLKey form).
// Close waits for the adapter's calls in flight, makes later calls fail
// with dedupindex.ErrClosed and closes the client's idle connections; it
// does not close the daemon's index. Each call of Index returns a new
// adapter with its own closed state.
func (c *Client) Index() dedupindex.Index { return &indexAdapter{c: c} }

type indexAdapter struct {
	c *Client

	mu     sync.RWMutex // held shared by calls, exclusively by Close
	closed bool
}

var (
	_ dedupindex.Index   = (*indexAdapter)(nil)
	_ dedupindex.Batcher = (*indexAdapter)(nil)
)

// checkKey rejects what a dedupindex backend rejects but the wire API
// would fill in: an empty scope means "the daemon's default scope" on the
// wire, while an Index key always names its scope.
func checkKey(op string, k dedupindex.Key) error {
	if k.Scope == "" {
		return fmt.Errorf("client: %s %s: key has an empty scope", op, k.Digest)
	}
	return nil
}

// enter marks a call in flight; the caller must call a.mu.RUnlock when
// enter returns nil.
func (a *indexAdapter) enter() error {
	a.mu.RLock()
	if a.closed {
		a.mu.RUnlock()
		return fmt.Errorf("client: %w", dedupindex.ErrClosed)
	}
	return nil
}

func (a *indexAdapter) Claim(ctx context.Context, k dedupindex.Key) (dedupindex.ClaimResult, error) {
	if err := a.enter(); err != nil {
		return dedupindex.ClaimResult{}, err
	}
	defer a.mu.RUnlock()
	if err := checkKey("claim", k); err != nil {
		return dedupindex.ClaimResult{}, err
	}
	r, err := a.c.Claim(ctx, api.FromIndexKey(k))
	if err != nil {
		return dedupindex.ClaimResult{}, err
	}
	var out dedupindex.ClaimResult
	switch r.State {
	case "claimed":
		if r.Ticket == nil {
			return out, fmt.Errorf("client: claim: claimed without a ticket")
		}
		out.State, out.Ticket = dedupindex.Claimed, *r.Ticket
	case "duplicate":
		if r.Original == nil {
			return out, fmt.Errorf("client: claim: duplicate without an original")
		}
		out.State, out.Original = dedupindex.Duplicate, *r.Original
	case "pending":
		out.State = dedupindex.Pending
	default:
		return out, fmt.Errorf("client: claim: unknown state %q", r.State)
	}
	return out, nil
}

func (a *indexAdapter) Commit(ctx context.Context, t dedupindex.Ticket, o dedupindex.Original) error {
	if err := a.enter(); err != nil {
		return err
	}
	defer a.mu.RUnlock()
	return a.c.Commit(ctx, t, o)
}

func (a *indexAdapter) Cancel(ctx context.Context, t dedupindex.Ticket) error {
	if err := a.enter(); err != nil {
		return err
	}
	defer a.mu.RUnlock()
	return a.c.Cancel(ctx, t)
}

func (a *indexAdapter) Lookup(ctx context.Context, k dedupindex.Key) (dedupindex.Original, bool, error) {
	if err := a.enter(); err != nil {
		return dedupindex.Original{}, false, err
	}
	defer a.mu.RUnlock()
	if err := checkKey("lookup", k); err != nil {
		return dedupindex.Original{}, false, err
	}
	return a.c.Lookup(ctx, api.FromIndexKey(k))
}

func (a *indexAdapter) Put(ctx context.Context, k dedupindex.Key, o dedupindex.Original) (bool, error) {
	added, err := a.PutBatch(ctx, []dedupindex.Entry{{Key: k, Original: o}})
	if err != nil {
		return false, err
	}
	return added[0], nil
}

// PutBatch implements dedupindex.Batcher.
func (a *indexAdapter) PutBatch(ctx context.Context, entries []dedupindex.Entry) ([]bool, error) {
	if err := a.enter(); err != nil {
		return nil, err
	}
	defer a.mu.RUnlock()
	for _, e := range entries {
		if err := checkKey("put", e.Key); err != nil {
			return nil, err
		}
	}
	return a.c.Put(ctx, entries)
}

func (a *indexAdapter) ByURL(ctx context.Context, scope, surtKey string) ([]dedupindex.Original, error) {
	if err := a.enter(); err != nil {
		return nil, err
	}
	defer a.mu.RUnlock()
	var res api.ByURLResult
	q := url.Values{"url": {surtKey}}
	if scope != "" {
		q.Set("scope", scope)
	}
	if err := a.c.call(ctx, http.MethodGet, api.PathByURL+"?"+q.Encode(), nil, &res); err != nil {
		return nil, err
	}
	return res.Originals, nil
}

func (a *indexAdapter) Stats(ctx context.Context) (dedupindex.Stats, error) {
	if err := a.enter(); err != nil {
		return dedupindex.Stats{}, err
	}
	defer a.mu.RUnlock()
	var st struct {
		Index dedupindex.Stats `json:"index"`
	}
	if err := a.c.Status(ctx, &st); err != nil {
		return dedupindex.Stats{}, err
	}
	return st.Index, nil
}

// Close implements dedupindex.Index; closing twice returns ErrClosed.
func (a *indexAdapter) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return fmt.Errorf("client: %w", dedupindex.ErrClosed)
	}
	a.closed = true
	return a.c.Close()
}

// Put seeds originals; it reports per entry whether it was added.
func (c *Client) Put(ctx context.Context, entries []dedupindex.Entry) ([]bool, error) {
	var res api.PutResult
	if err := c.call(ctx, http.MethodPost, api.PathPut, api.PutRequest{Entries: entries}, &res); err != nil {
		return nil, err
	}
	if len(res.Added) != len(entries) {
		return nil, fmt.Errorf("client: put: %d answers for %d entries", len(res.Added), len(entries))
	}
	return res.Added, nil
}
