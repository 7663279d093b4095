package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
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
// so a master whose replica stalls does not hold up every commit for the
// whole timeout.
const (
	degradedFor  = 5 * time.Second
	degradedWait = 10 * time.Millisecond
)

// replicasFresh is how long a master's count of connected replicas is
// trusted: a master without replicas is waited on only briefly
// (degradedWait).
const replicasFresh = time.Second

// writeAttempts bounds how often a write waited for replicas is tried
// when the slot moves or the master is unreachable (failover).
const writeAttempts = 4

// masterState is what the index knows about one master's replication.
type masterState struct {
	replicas      int // connected replicas (INFO replication)
	checked       time.Time
	degradedUntil time.Time
}

// ack reports how a write was replicated: how many replicas acknowledged
// it and how many the master had.
type ack struct{ acked, replicas int }

// write runs fn against the master serving key. With waitReplicas > 0 it
// then sends WAIT on the same connection (at most timeout; degradedWait
// if the master has no replica or recently failed to get an
// acknowledgement) and reports how many replicas acknowledged the write
// (fn's writes and everything before them on that connection) and how
// many the master has; otherwise fn runs through the client, which
// follows redirections itself, and nothing is reported.
func (ix *Index) write(ctx context.Context, key string, waitReplicas int, timeout time.Duration, fn func(c goredis.Cmdable) error) (ack, error) {
	if waitReplicas <= 0 {
		return ack{}, ix.failed(fn(ix.c))
	}
	for attempt := 1; ; attempt++ {
		node, err := ix.masterFor(ctx, key)
		if err == nil {
			var a ack
			if a, err = ix.writeWait(ctx, node, waitReplicas, timeout, fn); err == nil {
				return a, nil
			}
		}
		ix.failed(err)
		if attempt >= writeAttempts || !retryable(err) || ctx.Err() != nil {
			return ack{}, err
		}
		select {
		case <-ctx.Done():
			return ack{}, err
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

func (ix *Index) writeWait(ctx context.Context, node *goredis.Client, want int, timeout time.Duration, fn func(c goredis.Cmdable) error) (ack, error) {
	conn := node.Conn()
	defer conn.Close()
	if err := fn(conn); err != nil {
		return ack{}, err
	}
	addr := node.Options().Addr
	replicas, err := ix.connectedReplicas(ctx, conn, addr, false)
	if err != nil {
		return ack{}, err
	}
	ix.mu.Lock()
	st := ix.masters[addr]
	if replicas == 0 || time.Now().Before(st.degradedUntil) {
		timeout = min(timeout, degradedWait)
	}
	ix.mu.Unlock()
	n, err := conn.Wait(ctx, want, timeout).Result()
	if err != nil {
		return ack{}, fmt.Errorf("wait for %d replica(s): %w", want, err)
	}
	ix.mu.Lock()
	switch {
	case int(n) >= want:
		st.degradedUntil = time.Time{}
	case replicas > 0:
		st.degradedUntil = time.Now().Add(degradedFor)
	}
	st.replicas = max(st.replicas, int(n))
	replicas = max(replicas, int(n))
	ix.mu.Unlock()
	return ack{acked: int(n), replicas: replicas}, nil
}

// checkReplicas, at start-up with WithWait, refuses a cluster (or server)
// where a master has fewer connected replicas than every commit is to
// wait for: each commit would be stored and yet reported failed
// (ErrNotReplicated), the crawl's exit status 1 for nothing.
func (ix *Index) checkReplicas(ctx context.Context) error {
	var short []string
	check := func(n *goredis.Client) error {
		addr := n.Options().Addr
		r, err := ix.connectedReplicas(ctx, n, addr, true)
		if err != nil {
			return err
		}
		if r < ix.waitReplicas {
			ix.mu.Lock()
			short = append(short, fmt.Sprintf("%s has %d", addr, r))
			ix.mu.Unlock()
		}
		return nil
	}
	var err error
	switch c := ix.c.(type) {
	case *goredis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return check(n) })
	case *goredis.Client:
		err = check(c)
	default:
		return fmt.Errorf("dedupindex/redis: waiting for replicas needs a *ClusterClient or *Client, not %T", ix.c)
	}
	if err != nil {
		return fmt.Errorf("dedupindex/redis: wait=%d: count the replicas: %w", ix.waitReplicas, err)
	}
	if len(short) > 0 {
		sort.Strings(short)
		return fmt.Errorf("dedupindex/redis: wait=%d asks every commit to be acknowledged by %d replica(s), but master %s connected: every commit would be stored and reported failed; add replicas, or open without wait=", ix.waitReplicas, ix.waitReplicas, strings.Join(short, ", master "))
	}
	return nil
}

// connectedReplicas returns how many replicas the master at addr has,
// asking it (on c) at most once per replicasFresh unless fresh is set.
func (ix *Index) connectedReplicas(ctx context.Context, c goredis.Cmdable, addr string, fresh bool) (int, error) {
	ix.mu.Lock()
	st := ix.masters[addr]
	if st == nil {
		st = &masterState{}
		ix.masters[addr] = st
	}
	if !fresh && time.Since(st.checked) < replicasFresh {
		n := st.replicas
		ix.mu.Unlock()
		return n, nil
	}
	ix.mu.Unlock()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0, fmt.Errorf("replication info: %w", err)
	}
	n := -1
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, err = strconv.Atoi(v)
		}
	}
	if n < 0 || err != nil {
		return 0, fmt.Errorf("replication info of %s has no connected_slaves", addr)
	}
	ix.mu.Lock()
	st.replicas, st.checked = n, time.Now()
	ix.mu.Unlock()
	return n, nil
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
