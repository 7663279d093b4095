package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// ErrNotReplicated is wrapped by the error of a Commit (or Put) that
// stored its original on the master but that fewer replicas than WithWait
// asks for acknowledged within the wait timeout. The original is in the
// index and is served; a failover of that master before the replica
// catches up may lose it. The record itself is durable in its WARC file,
// so nothing points at a missing record either way: a lost entry only
// means a later duplicate is stored in full again.
var ErrNotReplicated = errors.New("not acknowledged by enough replicas")

// degradedFor is how long after a master failed to get its writes
// acknowledged in time the index waits only briefly (degradedWait) on it,
// so a master left without replicas does not stall every commit for the
// whole timeout.
const (
	degradedFor  = 5 * time.Second
	degradedWait = 10 * time.Millisecond
)

// writeAttempts bounds how often a write waited for replicas is tried
// when the slot moves or the master is unreachable (failover).
const writeAttempts = 4

// write runs fn against the master serving key. With waitReplicas > 0 it
// then sends WAIT on the same connection (at most timeout) and reports how
// many replicas acknowledged the write (fn's writes and everything before
// them on that connection); otherwise acked is 0 and fn runs through the
// client, which follows redirections itself.
func (ix *Index) write(ctx context.Context, key string, waitReplicas int, timeout time.Duration, fn func(c goredis.Cmdable) error) (acked int, err error) {
	if waitReplicas <= 0 {
		return 0, ix.failed(fn(ix.c))
	}
	for attempt := 1; ; attempt++ {
		var node *goredis.Client
		node, err = ix.masterFor(ctx, key)
		if err == nil {
			acked, err = ix.writeWait(ctx, node, waitReplicas, timeout, fn)
			if err == nil {
				return acked, nil
			}
		}
		ix.failed(err)
		if attempt >= writeAttempts || !retryable(err) || ctx.Err() != nil {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

func (ix *Index) writeWait(ctx context.Context, node *goredis.Client, want int, timeout time.Duration, fn func(c goredis.Cmdable) error) (int, error) {
	conn := node.Conn()
	defer conn.Close()
	if err := fn(conn); err != nil {
		return 0, err
	}
	addr := node.Options().Addr
	ix.mu.Lock()
	if until, ok := ix.degraded[addr]; ok && time.Now().Before(until) {
		timeout = min(timeout, degradedWait)
	}
	ix.mu.Unlock()
	n, err := conn.Wait(ctx, want, timeout).Result()
	if err != nil {
		return 0, fmt.Errorf("wait for %d replica(s): %w", want, err)
	}
	ix.mu.Lock()
	if int(n) < want {
		ix.degraded[addr] = time.Now().Add(degradedFor)
	} else {
		delete(ix.degraded, addr)
	}
	ix.mu.Unlock()
	return int(n), nil
}

// masterFor returns a client for the master serving key.
func (ix *Index) masterFor(ctx context.Context, key string) (*goredis.Client, error) {
	switch c := ix.c.(type) {
	case *goredis.ClusterClient:
		return c.MasterForKey(ctx, key)
	case *goredis.Client:
		return c, nil
	}
	return nil, fmt.Errorf("waiting for replicas needs a *ClusterClient or *Client, not %T", ix.c)
}

// failed asks a cluster client to reload the slot map after an error that
// may come from a failover, and returns err.
func (ix *Index) failed(err error) error {
	if err != nil && !errors.Is(err, goredis.Nil) && retryable(err) {
		if c, ok := ix.c.(*goredis.ClusterClient); ok {
			c.ReloadState(context.Background())
		}
	}
	return err
}

// retryable reports errors of a cluster in transition: the slot moved or
// its master is failing over or unreachable.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) {
		return true
	}
	s := err.Error()
	for _, p := range []string{"MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN ", "LOADING ", "READONLY ", "MASTERDOWN "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return strings.Contains(s, "connection refused") || strings.Contains(s, "connection reset")
}
