package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/dedupindex"
	dipebble "github.com/wayside-archive/wayside/dedupindex/pebble"
	diredis "github.com/wayside-archive/wayside/dedupindex/redis"
)

// Options are settings that do not belong in an index URL.
type Options struct {
	// Logger receives the backend's log lines (default: discard).
	Logger *slog.Logger
	// Token is the bearer token for a sidecar reached over TCP.
	Token string
}

// Opener opens one backend from its parsed URL.
type Opener func(ctx context.Context, u *url.URL, o Options) (dedupindex.Index, error)

// openers is the registry: scheme → opener.
func openers() map[string]Opener {
	return map[string]Opener{
		"pebble":  openPebble,
		"redis":   openRedis,
		"sidecar": openSidecar,
	}
}

// Schemes lists the registered URL schemes.
func Schemes() []string {
	var s []string
	for k := range openers() {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// ErrBadURL is wrapped by every error about the index URL itself.
var ErrBadURL = errors.New("bad index URL")

// Parse checks an index URL (or bare path) and returns it parsed; a bare
// path becomes pebble:///ABS-PATH.
func Parse(raw string) (*url.URL, error) {
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
	if _, ok := openers()[u.Scheme]; !ok {
		return nil, fmt.Errorf("%w: %q: unknown scheme %q (known: %s)", ErrBadURL, raw, u.Scheme, strings.Join(Schemes(), ", "))
	}
	return u, nil
}

// Open opens the index raw names. The caller closes it.
func Open(ctx context.Context, raw string, o Options) (dedupindex.Index, error) {
	u, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ix, err := openers()[u.Scheme](ctx, u, o)
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

// IsEmbedded reports whether raw names the embedded (pebble) backend.
func IsEmbedded(raw string) bool {
	u, err := Parse(raw)
	return err == nil && u.Scheme == "pebble"
}

func openPebble(_ context.Context, u *url.URL, o Options) (dedupindex.Index, error) {
	path := u.Path
	if u.Host != "" && u.Host != "localhost" {
		// pebble://relative/dir: host and path together.
		path = u.Host + u.Path
	}
	if path == "" {
		return nil, fmt.Errorf("%w: pebble URL without a path", ErrBadURL)
	}
	return dipebble.Open(path, dipebble.WithLogger(o.Logger))
}

// openRedis opens a Redis Cluster (or, with ?cluster=0 and one address, a
// single server). Query parameters: prefix, lease (duration), password,
// cluster, wait (replicas a commit waits for), wait_timeout (duration),
// capacity (originals per scope a new index is laid out for), byurl
// (0: create the index without the by-URL index).
func openRedis(ctx context.Context, u *url.URL, o Options) (dedupindex.Index, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("%w: redis URL without host:port", ErrBadURL)
	}
	addrs := strings.Split(u.Host, ",")
	q := u.Query()
	opts := []diredis.Option{diredis.WithLogger(o.Logger)}
	if p := q.Get("prefix"); p != "" {
		opts = append(opts, diredis.WithPrefix(p))
	}
	duration := func(name string) (time.Duration, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%w: %s=%q: want a positive duration such as 500ms", ErrBadURL, name, v)
		}
		return d, nil
	}
	integer := func(name string) (int64, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: %s=%q: want a whole number >= 0", ErrBadURL, name, v)
		}
		return n, nil
	}
	lease, err := duration("lease")
	if err != nil {
		return nil, err
	}
	if lease > 0 {
		opts = append(opts, diredis.WithLease(lease))
	}
	wait, err := integer("wait")
	if err != nil {
		return nil, err
	}
	waitTimeout, err := duration("wait_timeout")
	if err != nil {
		return nil, err
	}
	if waitTimeout > 0 && wait == 0 {
		return nil, fmt.Errorf("%w: wait_timeout without wait=N", ErrBadURL)
	}
	if wait > 0 {
		if waitTimeout == 0 {
			waitTimeout = time.Second
		}
		opts = append(opts, diredis.WithWait(int(wait), waitTimeout))
	}
	capacity, err := integer("capacity")
	if err != nil {
		return nil, err
	}
	if capacity > 0 {
		opts = append(opts, diredis.WithCapacity(capacity))
	}
	if b := q.Get("byurl"); b != "" {
		on, err := strconv.ParseBool(b)
		if err != nil {
			return nil, fmt.Errorf("%w: byurl=%q", ErrBadURL, b)
		}
		if !on {
			opts = append(opts, diredis.WithoutURLIndex())
		}
	}
	password := q.Get("password")
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			password = p
		}
	}
	cluster := true
	if c := q.Get("cluster"); c != "" {
		b, err := strconv.ParseBool(c)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster=%q", ErrBadURL, c)
		}
		cluster = b
	}
	// A WAIT may block for wait_timeout: reads must outlast it.
	readTimeout := max(3*time.Second, waitTimeout+time.Second)
	var c goredis.UniversalClient
	if cluster {
		c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Password: password, ReadTimeout: readTimeout})
	} else {
		if len(addrs) != 1 {
			return nil, fmt.Errorf("%w: cluster=0 takes exactly one address", ErrBadURL)
		}
		c = goredis.NewClient(&goredis.Options{Addr: addrs[0], Password: password, ReadTimeout: readTimeout})
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis at %s does not answer: %w", u.Host, err)
	}
	ix, err := diredis.New(pctx, c, append(opts, diredis.WithClientClosed())...)
	if err != nil {
		c.Close()
		return nil, err
	}
	return ix, nil
}

func openSidecar(_ context.Context, u *url.URL, o Options) (dedupindex.Index, error) {
	c, err := sidecarClient(u, o)
	if err != nil {
		return nil, err
	}
	return c.Index(), nil
}

// SidecarClient returns a client of the daemon a sidecar:// index URL
// names (for what the daemon serves besides its dedup index: its capture
// index). The caller closes it.
func SidecarClient(raw string, o Options) (*client.Client, error) {
	u, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "sidecar" {
		return nil, fmt.Errorf("%w: %s is not a sidecar URL", ErrBadURL, Redact(u))
	}
	return sidecarClient(u, o)
}

func sidecarClient(u *url.URL, o Options) (*client.Client, error) {
	addr := u.Path
	var copts []client.Option
	if u.Host != "" {
		addr = "http://" + u.Host
		tok := o.Token
		if tok == "" {
			return nil, errors.New("a sidecar reached over TCP needs a token (WAYSIDE_TOKEN)")
		}
		copts = append(copts, client.WithToken(tok))
	}
	if addr == "" {
		return nil, fmt.Errorf("%w: sidecar URL without a socket path or host", ErrBadURL)
	}
	return client.New(addr, copts...)
}
