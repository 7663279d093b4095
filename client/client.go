// Package client is the Go client of the Wayside sidecar daemon (`wayside
// serve`). It dials the Unix socket (the default, no token) or loopback TCP
// with a token, and offers the whole API; Index adapts it to
// dedupindex.Index so a Go crawler can use a running sidecar as its index.
// Linking the package registers the index URL scheme sidecar: with
// dedupindex.OpenURL (sidecar:///SOCKET, sidecar://HOST:PORT).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/dedupindex"
)

// Client talks to one sidecar daemon. It is safe for concurrent use.
type Client struct {
	hc    *http.Client
	base  string // http://host[:port] (a fixed placeholder host for Unix sockets)
	token string
}

// Option configures a Client.
type Option func(*options)

type options struct {
	token   string
	timeout time.Duration
	maxIdle int
}

// WithToken sets the bearer token sent on every request (TCP listeners).
func WithToken(t string) Option { return func(o *options) { o.token = t } }

// WithTimeout bounds each request (default 30 s).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithMaxIdleConns sets the pool of idle keep-alive connections (default 64).
func WithMaxIdleConns(n int) Option { return func(o *options) { o.maxIdle = n } }

// New returns a client for addr: a Unix socket path ("/run/wayside.sock",
// "unix:///run/wayside.sock") or an HTTP base URL ("http://127.0.0.1:8181").
func New(addr string, opts ...Option) (*Client, error) {
	o := options{timeout: 30 * time.Second, maxIdle: 64}
	for _, f := range opts {
		f(&o)
	}
	tr := &http.Transport{
		MaxIdleConns:        o.maxIdle,
		MaxIdleConnsPerHost: o.maxIdle,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  false,
	}
	c := &Client{token: o.token}
	switch {
	case strings.HasPrefix(addr, "http://"), strings.HasPrefix(addr, "https://"):
		u, err := url.Parse(addr)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("client: bad address %q", addr)
		}
		c.base = strings.TrimSuffix(addr, "/")
		tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	default:
		path := strings.TrimPrefix(addr, "unix://")
		if path == "" {
			return nil, errors.New("client: empty socket path")
		}
		c.base = "http://wayside.sock"
		d := &net.Dialer{Timeout: 5 * time.Second}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
	}
	c.hc = &http.Client{
		Transport: tr,
		Timeout:   o.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return c, nil
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// Error is an error answer of the daemon.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("client: sidecar answered %d: %s", e.Code, e.Msg) }

// Is maps 409 and 403 answers to the dedupindex errors they stand for.
func (e *Error) Is(target error) bool {
	switch target {
	case dedupindex.ErrNoClaim:
		return e.Code == http.StatusConflict
	case dedupindex.ErrReadOnly:
		return e.Code == http.StatusForbidden && strings.Contains(e.Msg, "read-only")
	}
	return false
}

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, ctype string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e api.Error
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return nil, &Error{Code: resp.StatusCode, Msg: e.Error}
		}
		return nil, &Error{Code: resp.StatusCode, Msg: strings.TrimSpace(string(b))}
	}
	return resp, nil
}

// call sends in as JSON (nil: no body) and decodes the answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	ctype := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	resp, err := c.do(ctx, method, path, body, ctype)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Healthz checks the daemon is up.
func (c *Client) Healthz(ctx context.Context) error {
	return c.call(ctx, http.MethodGet, api.PathHealthz, nil, nil)
}

// Status returns the daemon's status, decoded into out (an *api.Status,
// or any struct holding the fields the caller needs).
func (c *Client) Status(ctx context.Context, out any) error {
	return c.call(ctx, http.MethodGet, api.PathStatus, nil, out)
}

// Metrics returns the Prometheus exposition text.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	return c.getText(ctx, api.PathMetrics)
}

func (c *Client) getText(ctx context.Context, path string) (string, error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("client: GET %s: %w", path, err)
	}
	return string(b), nil
}

// Lookup returns the committed original for k.
func (c *Client) Lookup(ctx context.Context, k api.Key) (dedupindex.Original, bool, error) {
	var res api.LookupResult
	q := url.Values{"digest": {k.Digest}}
	for _, f := range [...]struct{ name, v string }{{"scope", k.Scope}, {"url", k.URL}, {"target_uri", k.TargetURI}} {
		if f.v != "" {
			q.Set(f.name, f.v)
		}
	}
	if err := c.call(ctx, http.MethodGet, api.PathLookup+"?"+q.Encode(), nil, &res); err != nil {
		return dedupindex.Original{}, false, err
	}
	if !res.Found || res.Original == nil {
		return dedupindex.Original{}, false, nil
	}
	return *res.Original, true, nil
}

// LookupBatch looks up many keys in one request.
func (c *Client) LookupBatch(ctx context.Context, keys []api.Key) ([]api.LookupResult, error) {
	var res api.LookupResults
	if err := c.call(ctx, http.MethodPost, api.PathLookupBatch, api.KeysRequest{Keys: keys}, &res); err != nil {
		return nil, err
	}
	if len(res.Results) != len(keys) {
		return nil, fmt.Errorf("client: lookup batch: %d answers for %d keys", len(res.Results), len(keys))
	}
	return res.Results, nil
}

// Claim claims k (see dedupindex.Index.Claim).
func (c *Client) Claim(ctx context.Context, k api.Key) (api.ClaimResult, error) {
	var res api.ClaimResult
	err := c.call(ctx, http.MethodPost, api.PathClaim, k, &res)
	return res, err
}

// ClaimBatch claims many keys in one request.
func (c *Client) ClaimBatch(ctx context.Context, keys []api.Key) ([]api.ClaimResult, error) {
	var res api.ClaimResults
	if err := c.call(ctx, http.MethodPost, api.PathClaimBatch, api.KeysRequest{Keys: keys}, &res); err != nil {
		return nil, err
	}
	if len(res.Results) != len(keys) {
		return nil, fmt.Errorf("client: claim batch: %d answers for %d keys", len(res.Results), len(keys))
	}
	return res.Results, nil
}

// Commit commits a claim once the original is durably written.
func (c *Client) Commit(ctx context.Context, t dedupindex.Ticket, o dedupindex.Original) error {
	return c.call(ctx, http.MethodPost, api.PathCommit, api.Commit{Ticket: t, Original: o}, nil)
}

// CommitBatch commits many claims; each result says how its commit went.
func (c *Client) CommitBatch(ctx context.Context, cs []api.Commit) ([]api.OpResult, error) {
	var res api.OpResults
	if err := c.call(ctx, http.MethodPost, api.PathCommitBatch, api.CommitsRequest{Commits: cs}, &res); err != nil {
		return nil, err
	}
	return res.Results, nil
}

// Cancel drops a pending claim.
func (c *Client) Cancel(ctx context.Context, t dedupindex.Ticket) error {
	return c.call(ctx, http.MethodPost, api.PathCancel, api.Cancel{Ticket: t}, nil)
}

// CancelBatch drops many pending claims.
func (c *Client) CancelBatch(ctx context.Context, ts []dedupindex.Ticket) ([]api.OpResult, error) {
	var res api.OpResults
	if err := c.call(ctx, http.MethodPost, api.PathCancelBatch, api.CancelsRequest{Tickets: ts}, &res); err != nil {
		return nil, err
	}
	return res.Results, nil
}

// CDX runs a CDX query (params as for /web/timemap/cdx) and returns the body.
func (c *Client) CDX(ctx context.Context, params url.Values) (string, error) {
	return c.getText(ctx, api.PathTimemapCDX+"?"+params.Encode())
}

// AddCDX posts CDX or CDXJ lines (OutbackCDX style); revisits are skipped.
func (c *Client) AddCDX(ctx context.Context, lines io.Reader) (api.CDXAddResult, error) {
	var res api.CDXAddResult
	resp, err := c.do(ctx, http.MethodPost, api.PathCDX, lines, "text/plain")
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, fmt.Errorf("client: POST %s: decode answer: %w", api.PathCDX, err)
	}
	return res, nil
}

// Ingest returns the WARC watcher's progress.
func (c *Client) Ingest(ctx context.Context) (api.IngestStatus, error) {
	var res api.IngestStatus
	err := c.call(ctx, http.MethodGet, api.PathIngest, nil, &res)
	return res, err
}

// MementoMap returns the current map (UKVS text).
func (c *Client) MementoMap(ctx context.Context) (string, error) {
	return c.getText(ctx, api.PathMementoMap)
}

// MapLookup looks a URI up in the live MementoMap.
func (c *Client) MapLookup(ctx context.Context, uri string) (api.MapLookup, error) {
	var res api.MapLookup
	err := c.call(ctx, http.MethodGet, api.PathMapLookup+"?url="+url.QueryEscape(uri), nil, &res)
	return res, err
}

// CompactMap asks the daemon to compact the live MementoMap.
func (c *Client) CompactMap(ctx context.Context) (api.CompactResult, error) {
	var res api.CompactResult
	err := c.call(ctx, http.MethodPost, api.PathMapCompact, struct{}{}, &res)
	return res, err
}

// FixitySweeps lists the configured sweeps and their last runs.
func (c *Client) FixitySweeps(ctx context.Context) ([]api.SweepStatus, error) {
	var res api.SweepList
	err := c.call(ctx, http.MethodGet, api.PathFixitySweeps, nil, &res)
	return res.Sweeps, err
}

// RunSweep starts a configured sweep now and waits for it when wait is true.
func (c *Client) RunSweep(ctx context.Context, name string, wait bool) (api.SweepStatus, error) {
	var res api.SweepStatus
	err := c.call(ctx, http.MethodPost, api.PathFixityRun, api.RunSweepRequest{Sweep: name, Wait: wait}, &res)
	return res, err
}

// Raw GETs path (e.g. "/v1/fixity/report") and returns the response for the
// caller to read and close; error answers are returned as *Error.
func (c *Client) Raw(ctx context.Context, path string) (*http.Response, error) {
	return c.do(ctx, http.MethodGet, path, nil, "")
}
