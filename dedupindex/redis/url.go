package redis

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
)

// Linking this package registers the scheme redis: with
// dedupindex.OpenURL, redis://HOST:PORT,HOST:PORT/?prefix=P opens New on
// a cluster client (see openURL for the parameters).
func init() { dedupindex.RegisterScheme("redis", openURL) }

// openRedis opens a Redis Cluster (or, with ?cluster=0 and one address, a
// single server). Query parameters: prefix, lease (duration), password,
// cluster, wait (replicas a commit waits for), wait_timeout (duration),
// capacity (originals per scope a new index is laid out for), byurl
// (0: create the index without the by-URL index).
func openURL(ctx context.Context, u *url.URL, o dedupindex.OpenOptions) (dedupindex.Index, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("%w: redis URL without host:port", dedupindex.ErrBadURL)
	}
	addrs := strings.Split(u.Host, ",")
	q := u.Query()
	opts := []Option{WithLogger(o.Logger)}
	if p := q.Get("prefix"); p != "" {
		opts = append(opts, WithPrefix(p))
	}
	duration := func(name string) (time.Duration, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%w: %s=%q: want a positive duration such as 500ms", dedupindex.ErrBadURL, name, v)
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
			return 0, fmt.Errorf("%w: %s=%q: want a whole number >= 0", dedupindex.ErrBadURL, name, v)
		}
		return n, nil
	}
	lease, err := duration("lease")
	if err != nil {
		return nil, err
	}
	if lease > 0 {
		opts = append(opts, WithLease(lease))
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
		return nil, fmt.Errorf("%w: wait_timeout without wait=N", dedupindex.ErrBadURL)
	}
	if wait > 0 {
		if waitTimeout == 0 {
			waitTimeout = time.Second
		}
		opts = append(opts, WithWait(int(wait), waitTimeout))
	}
	capacity, err := integer("capacity")
	if err != nil {
		return nil, err
	}
	if capacity > 0 {
		opts = append(opts, WithCapacity(capacity))
	}
	if b := q.Get("byurl"); b != "" {
		on, err := strconv.ParseBool(b)
		if err != nil {
			return nil, fmt.Errorf("%w: byurl=%q", dedupindex.ErrBadURL, b)
		}
		if !on {
			opts = append(opts, WithoutURLIndex())
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
			return nil, fmt.Errorf("%w: cluster=%q", dedupindex.ErrBadURL, c)
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
			return nil, fmt.Errorf("%w: cluster=0 takes exactly one address", dedupindex.ErrBadURL)
		}
		c = goredis.NewClient(&goredis.Options{Addr: addrs[0], Password: password, ReadTimeout: readTimeout})
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		if cluster {
			if addr := singleServer(pctx, addrs, password); addr != "" {
				return nil, fmt.Errorf("redis at %s is a single server, not a cluster (cluster_enabled:0): add cluster=0 to the URL to use it alone (redis://%s/?cluster=0), or give the addresses of a Redis Cluster", addr, addr)
			}
		}
		return nil, fmt.Errorf("redis at %s does not answer: %w", u.Host, err)
	}
	ix, err := New(pctx, c, append(opts, WithClientClosed())...)
	if err != nil {
		c.Close()
		return nil, err
	}
	return ix, nil
}

// singleServer returns the first of addrs that answers as a Redis server
// with cluster support disabled, or "".
func singleServer(ctx context.Context, addrs []string, password string) string {
	for _, a := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a, Password: password, MaxRetries: -1})
		info, err := c.Info(ctx, "cluster").Result()
		c.Close()
		if err == nil && strings.Contains(info, "cluster_enabled:0") {
			return a
		}
	}
	return ""
}
