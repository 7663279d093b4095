package redis_test

import (
	"context"
	"fmt"
	"github.com/wayside-archive/wayside/internal/testenv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	wredis "github.com/wayside-archive/wayside/dedupindex/redis"
)

// cluster is a real 3-master Redis Cluster on loopback ports, started once
// for the package's tests.
type cluster struct {
	addrs []string
	procs []*exec.Cmd
	dir   string
	err   error
}

func (c *cluster) stop() {
	for _, p := range c.procs {
		if p.Process != nil {
			p.Process.Kill()
			p.Wait()
		}
	}
	os.RemoveAll(c.dir)
}

// freePort returns a loopback port p with p+10000 (the cluster bus) free.
func freePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p+10000 > 65535 {
			continue
		}
		if lb, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			lb.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port pair")
}

func startCluster() *cluster {
	c := &cluster{}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		c.err = fmt.Errorf("redis-server is not installed (apt-get install redis-server): %w", err)
		return c
	}
	if c.dir, err = os.MkdirTemp("", "wayside-redis-cluster-"); err != nil {
		c.err = err
		return c
	}
	for i := range 3 {
		port, err := freePort()
		if err != nil {
			c.err = err
			return c
		}
		dir := filepath.Join(c.dir, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			c.err = err
			return c
		}
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
			"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no")
		logf, err := os.Create(filepath.Join(dir, "log"))
		if err != nil {
			c.err = err
			return c
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			c.err = err
			return c
		}
		c.procs = append(c.procs, cmd)
		c.addrs = append(c.addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nodes []*goredis.Client
	for _, a := range c.addrs {
		n := goredis.NewClient(&goredis.Options{Addr: a})
		defer n.Close()
		nodes = append(nodes, n)
		for n.Ping(ctx).Err() != nil {
			if ctx.Err() != nil {
				c.err = fmt.Errorf("redis-server at %s did not start", a)
				return c
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	for i, n := range nodes {
		if err := n.ClusterAddSlotsRange(ctx, ranges[i][0], ranges[i][1]).Err(); err != nil {
			c.err = fmt.Errorf("add slots: %w", err)
			return c
		}
		if i > 0 {
			host, port, _ := net.SplitHostPort(c.addrs[i])
			if err := nodes[0].ClusterMeet(ctx, host, port).Err(); err != nil {
				c.err = fmt.Errorf("cluster meet: %w", err)
				return c
			}
		}
	}
	for _, n := range nodes {
		for {
			info, _ := n.ClusterInfo(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			if ctx.Err() != nil {
				c.err = fmt.Errorf("cluster did not become ready: %s", info)
				return c
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

var testCluster *cluster

func TestMain(m *testing.M) {
	testCluster = startCluster()
	code := m.Run()
	testCluster.stop()
	os.Exit(code)
}

func clusterClient(t *testing.T) *goredis.ClusterClient {
	t.Helper()
	if testCluster.err != nil {
		if strings.Contains(testCluster.err.Error(), "not installed") {
			testenv.MissingTool(t, "dedupindex/redis: %v", testCluster.err)
		}
		t.Fatalf("starting the Redis cluster: %v", testCluster.err)
	}
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: testCluster.addrs})
	t.Cleanup(func() { c.Close() })
	return c
}

var prefixSeq atomic.Int64

func newPrefix() string { return fmt.Sprintf("t%d-%d:", os.Getpid(), prefixSeq.Add(1)) }

func TestConformance(t *testing.T) {
	c := clusterClient(t)
	indextest.Run(t, func(t *testing.T) indextest.Opener {
		prefix := newPrefix()
		return func() (dedupindex.Index, error) { return wredis.New(c, wredis.WithPrefix(prefix)) }
	})
}

// TestKeysSpreadOverCluster checks that originals land on every master
// (the hash tags spread keys) while each claim stays atomic.
func TestKeysSpreadOverCluster(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t)
	prefix := newPrefix()
	ix, err := wredis.New(c, wredis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for i := range 60 {
		p := fmt.Sprint("spread", i)
		if _, err := ix.Put(ctx, dedupindex.Key{Scope: "s", Digest: indextest.Digest(p)}, indextest.Original(p, "http://e/"+p, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	var masters atomic.Int64
	err = c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		keys, err := n.Keys(ctx, prefix+"o{*").Result()
		if len(keys) > 0 {
			masters.Add(1)
		}
		return err
	})
	if err != nil || masters.Load() != 3 {
		t.Fatalf("originals on %d of 3 masters (%v)", masters.Load(), err)
	}
	if err := ix.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseExpiry: a claim whose claimer vanished expires with its lease;
// the late claimer's Commit still indexes its durable record if the slot
// is free, and never overwrites the new claimer's original.
func TestLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t)
	prefix := newPrefix()
	a, err := wredis.New(c, wredis.WithPrefix(prefix), wredis.WithLease(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wredis.New(c, wredis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	k := dedupindex.Key{Scope: "s", Digest: indextest.Digest("lease")}
	ra, err := a.Claim(ctx, k)
	if err != nil || ra.State != dedupindex.Claimed {
		t.Fatalf("a: %v %v", ra.State, err)
	}
	if rb, err := b.Claim(ctx, k); err != nil || rb.State != dedupindex.Pending {
		t.Fatalf("b before the lease ran out: %v %v", rb.State, err)
	}
	time.Sleep(300 * time.Millisecond)
	rb, err := b.Claim(ctx, k)
	if err != nil || rb.State != dedupindex.Claimed {
		t.Fatalf("b after the lease ran out: %v %v", rb.State, err)
	}
	ob := indextest.Original("lease", "http://e/b", time.Now())
	if err := b.Commit(ctx, rb.Ticket, ob); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(ctx, ra.Ticket, indextest.Original("lease", "http://e/a", time.Now())); err != nil {
		t.Fatalf("late commit: %v", err)
	}
	got, ok, err := b.Lookup(ctx, k)
	if err != nil || !ok || got.RecordID != ob.RecordID {
		t.Fatalf("Lookup = %+v %v %v; want b's original kept", got, ok, err)
	}
	if err := b.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
