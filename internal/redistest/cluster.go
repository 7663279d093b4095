package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// ErrNoRedis is returned by Start when redis-server is not installed.
var ErrNoRedis = errors.New("redistest: redis-server is not installed (apt-get install redis-server)")

// Options shape a cluster. The zero value is 3 masters with 1 replica each.
type Options struct {
	Masters  int // default 3
	Replicas int // replicas per master, default 1
	// NodeTimeout is cluster-node-timeout: how long a master may be
	// unreachable before its replica takes over (default 3s: shorter makes a node starved of CPU on a loaded test machine look failed).
	NodeTimeout time.Duration
	// Args are extra redis-server arguments, e.g.
	// {"--hash-max-listpack-entries", "512"}.
	Args []string
}

// Node is one redis-server process.
type Node struct {
	Addr string // 127.0.0.1:PORT
	ID   string // cluster node id
	dir  string
	args []string
	rc   *goredis.Client

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Client returns a client for this node alone (not cluster-aware).
func (n *Node) Client() *goredis.Client { return n.rc }

// Alive reports whether the process is running.
func (n *Node) Alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.done:
		return false
	default:
		return n.cmd != nil
	}
}

// Cluster is a running Redis Cluster.
type Cluster struct {
	Nodes []*Node
	bin   string
	dir   string
	opts  Options
}

// Start starts a cluster and waits until it serves every slot with every
// replica in sync. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Masters <= 0 {
		opts.Masters = 3
	}
	if opts.Replicas < 0 {
		opts.Replicas = 0
	} else if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.NodeTimeout <= 0 {
		opts.NodeTimeout = 3 * time.Second
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoRedis, err)
	}
	dir, err := os.MkdirTemp("", "wayside-redis-cluster-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	c := &Cluster{bin: bin, dir: dir, opts: opts}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	m, total := c.opts.Masters, c.opts.Masters*(1+c.opts.Replicas)
	for i := range total {
		n, err := c.newNode(ctx, filepath.Join(c.dir, strconv.Itoa(i)))
		if err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, n)
	}
	for _, n := range c.Nodes {
		id, err := n.rc.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("redistest: cluster myid at %s: %w", n.Addr, err)
		}
		n.ID = id
	}
	for i := range m {
		lo, hi := i*16384/m, (i+1)*16384/m-1
		if err := c.Nodes[i].rc.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("redistest: add slots %d-%d at %s: %w", lo, hi, c.Nodes[i].Addr, err)
		}
	}
	for _, n := range c.Nodes[1:] {
		host, port, _ := net.SplitHostPort(n.Addr)
		if err := c.Nodes[0].rc.ClusterMeet(ctx, host, port).Err(); err != nil {
			return fmt.Errorf("redistest: cluster meet %s: %w", n.Addr, err)
		}
	}
	want := "cluster_known_nodes:" + strconv.Itoa(total) + "\r\n"
	for _, n := range c.Nodes {
		if err := poll(ctx, "every node to know the others", func() (bool, error) {
			info, err := n.rc.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, want), nil
		}); err != nil {
			return err
		}
	}
	for i, n := range c.Nodes[m:] {
		master := c.Nodes[i/c.opts.Replicas]
		if err := poll(ctx, "replicate "+master.Addr, func() (bool, error) {
			err := n.rc.ClusterReplicate(ctx, master.ID).Err()
			if err != nil && strings.Contains(err.Error(), "Unknown node") {
				return false, nil // gossip has not told it yet
			}
			return err == nil, err
		}); err != nil {
			return err
		}
	}
	return c.WaitHealthy(ctx)
}

// freePort returns a loopback port p with p+10000 (the cluster bus) free
// too, both outside the ephemeral range (testenv.FreePortPairs).
func freePort() (int, error) {
	ports, err := testenv.FreePortPairs(1, 10000)
	if err != nil {
		return 0, fmt.Errorf("redistest: %w", err)
	}
	return ports[0], nil
}

// newNode starts a redis-server in dir on a free port, retrying with
// another port when the chosen one was taken meanwhile.
func (c *Cluster) newNode(ctx context.Context, dir string) (*Node, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		n := &Node{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
		n.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--daemonize", "no", "--logfile", "redis.log",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(c.opts.NodeTimeout.Milliseconds(), 10),
			"--appendonly", "yes", "--appendfsync", "always", "--save", "",
			"--repl-diskless-sync-delay", "0", "--enable-debug-command", "local"}, c.opts.Args...)
		n.rc = goredis.NewClient(&goredis.Options{Addr: n.Addr, MaxRetries: -1, DialTimeout: time.Second})
		if last = c.run(ctx, n); last == nil {
			return n, nil
		}
		n.rc.Close()
	}
	return nil, last
}

// run starts n's process and waits until it answers PING.
func (c *Cluster) run(ctx context.Context, n *Node) error {
	cmd := exec.Command(c.bin, n.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	err := poll(ctx, "redis-server at "+n.Addr+" to answer", func() (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("redis-server at %s exited: %s", n.Addr, n.logTail())
		default:
		}
		return n.rc.Ping(ctx).Err() == nil, nil
	})
	if err != nil {
		cmd.Process.Kill()
		<-done
	}
	return err
}

// logTail returns the last lines of the node's log, for error messages.
func (n *Node) logTail() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "redis.log"))
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}

// poll calls f every 20 ms until it reports done, fails, or ctx ends.
func poll(ctx context.Context, what string, f func() (bool, error)) error {
	for {
		ok, err := f()
		if err != nil {
			return fmt.Errorf("redistest: waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: waiting for %s: %w", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Addrs returns the address of every node (seeds for a cluster client).
func (c *Cluster) Addrs() []string {
	var a []string
	for _, n := range c.Nodes {
		a = append(a, n.Addr)
	}
	return a
}

// URL returns a redis:// index URL naming every node, with query q (may be
// empty).
func (c *Cluster) URL(q string) string {
	u := "redis://" + strings.Join(c.Addrs(), ",") + "/"
	if q != "" {
		u += "?" + q
	}
	return u
}

// Client returns a new cluster client; the caller closes it.
func (c *Cluster) Client() *goredis.ClusterClient {
	return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: c.Addrs()})
}

// Close kills every process and removes the data directories.
func (c *Cluster) Close() error {
	for _, n := range c.Nodes {
		c.Kill(n)
		n.rc.Close()
	}
	return os.RemoveAll(c.dir)
}

// Kill sends SIGKILL to n and waits until the process is gone.
func (c *Cluster) Kill(n *Node) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart starts a killed node again with its data directory; it rejoins
// the cluster (a former master as a replica of the one that replaced it).
func (c *Cluster) Restart(ctx context.Context, n *Node) error {
	if n.Alive() {
		return fmt.Errorf("redistest: %s is running", n.Addr)
	}
	return c.run(ctx, n)
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string
	flags            map[string]bool
	connected        bool
	slots            []string
}

func (c *Cluster) live() []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.Alive() {
			out = append(out, n)
		}
	}
	return out
}

// topology returns CLUSTER NODES once every live node sees the same
// cluster (the same roles, masters, slots and failed nodes): one node's
// view alone may lag behind gossip, e.g. just after a failover or a
// replica joining, and the tests ask questions whose answer must not
// depend on which node is asked.
func (c *Cluster) topology(ctx context.Context) ([]clusterNode, error) {
	var top []clusterNode
	err := poll(ctx, "the nodes to agree on the cluster", func() (bool, error) {
		live := c.live()
		if len(live) == 0 {
			return false, errors.New("no node is running")
		}
		first := ""
		for i, n := range live {
			s, err := n.rc.ClusterNodes(ctx).Result()
			if err != nil {
				return false, nil // a node busy or restarting: ask again
			}
			nodes := parseNodes(s)
			if k := canonical(nodes); i == 0 {
				first, top = k, nodes
			} else if k != first {
				return false, nil
			}
		}
		return true, nil
	})
	return top, err
}

// canonical renders what every node of a settled cluster agrees on: each
// node's id, role, master, slots and whether it is marked failed (not the
// timestamps, link states or a node's own suspicions).
func canonical(nodes []clusterNode) string {
	lines := make([]string, 0, len(nodes))
	for _, n := range nodes {
		role := "replica"
		if n.flags["master"] {
			role = "master"
		}
		lines = append(lines, fmt.Sprintf("%s %s %s %v %v", n.id, role, n.master, n.flags["fail"], n.slots))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// parseNodes parses a CLUSTER NODES answer.
func parseNodes(s string) []clusterNode {
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		cn := clusterNode{id: f[0], addr: f[1], master: f[3], flags: map[string]bool{}, connected: f[7] == "connected", slots: f[8:]}
		if i := strings.IndexAny(cn.addr, "@,"); i >= 0 {
			cn.addr = cn.addr[:i]
		}
		for _, fl := range strings.Split(f[2], ",") {
			cn.flags[fl] = true
		}
		out = append(out, cn)
	}
	return out
}

func (c *Cluster) byAddr(addr string) *Node {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// MasterFor returns the node that serves key's slot now.
func (c *Cluster) MasterFor(ctx context.Context, key string) (*Node, error) {
	live := c.live()
	if len(live) == 0 {
		return nil, errors.New("redistest: no node is running")
	}
	slot, err := live[0].rc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("redistest: keyslot: %w", err)
	}
	top, err := c.topology(ctx)
	if err != nil {
		return nil, fmt.Errorf("redistest: cluster nodes: %w", err)
	}
	for _, cn := range top {
		if !cn.flags["master"] || cn.flags["fail"] {
			continue
		}
		for _, r := range cn.slots {
			lo, hi, _ := strings.Cut(r, "-")
			if hi == "" {
				hi = lo
			}
			a, err1 := strconv.ParseInt(lo, 10, 64)
			b, err2 := strconv.ParseInt(hi, 10, 64)
			if err1 == nil && err2 == nil && a <= slot && slot <= b {
				if n := c.byAddr(cn.addr); n != nil {
					return n, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("redistest: no master serves slot %d", slot)
}

// ReplicasOf returns the running replicas of master.
func (c *Cluster) ReplicasOf(ctx context.Context, master *Node) ([]*Node, error) {
	top, err := c.topology(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Node
	for _, cn := range top {
		if cn.master == master.ID && !cn.flags["fail"] {
			if n := c.byAddr(cn.addr); n != nil && n.Alive() {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// KillMaster SIGKILLs the master serving key and returns it.
func (c *Cluster) KillMaster(ctx context.Context, key string) (*Node, error) {
	m, err := c.MasterFor(ctx, key)
	if err != nil {
		return nil, err
	}
	c.Kill(m)
	return m, nil
}

// WaitFailover waits until a running master serves key's slot (after
// KillMaster, one of the killed master's replicas) and every running node
// reports cluster_state:ok; it returns that master.
func (c *Cluster) WaitFailover(ctx context.Context, key string) (*Node, error) {
	var m *Node
	err := poll(ctx, "a replica to take over the slot of "+key, func() (bool, error) {
		var err error
		m, err = c.MasterFor(ctx, key)
		return err == nil && m.Alive() && c.allOK(ctx), nil
	})
	return m, err
}

func (c *Cluster) allOK(ctx context.Context) bool {
	for _, n := range c.live() {
		info, err := n.rc.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return false
		}
	}
	return true
}

// WaitHealthy waits until every running node reports cluster_state:ok with
// all 16384 slots served, every master serving slots has as many online
// replicas as the cluster was started with, and every replica's link to
// its master is up, and every running node sees the same cluster.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	err := poll(ctx, "the cluster to be healthy", func() (bool, error) {
		if !c.allOK(ctx) {
			return false, nil
		}
		for _, n := range c.live() {
			info, err := n.rc.Info(ctx, "replication").Result()
			if err != nil {
				return false, nil
			}
			nodes, err := n.rc.ClusterNodes(ctx).Result()
			if err != nil || !c.seesLiveNodesUp(nodes) {
				return false, nil
			}
			switch {
			case strings.Contains(info, "role:master"):
				if servesSlots(nodes) && strings.Count(info, "state=online") < c.opts.Replicas {
					return false, nil
				}
			case !strings.Contains(info, "master_link_status:up"):
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	_, err = c.topology(ctx)
	return err
}

// seesLiveNodesUp reports whether a CLUSTER NODES answer shows every
// running node connected and not flagged failing.
func (c *Cluster) seesLiveNodesUp(nodes string) bool {
	for _, cn := range parseNodes(nodes) {
		if n := c.byAddr(cn.addr); n != nil && n.Alive() &&
			(cn.flags["fail"] || cn.flags["fail?"] || cn.flags["handshake"] || !cn.connected) {
			return false
		}
	}
	return true
}

// servesSlots reports whether the "myself" line of CLUSTER NODES lists
// slots.
func servesSlots(nodes string) bool {
	for _, cn := range parseNodes(nodes) {
		if cn.flags["myself"] {
			return len(cn.slots) > 0
		}
	}
	return false
}

// Freeze stops n's process (SIGSTOP) and returns once the kernel reports
// it stopped: from then on it neither serves clients nor acknowledges
// replication, however loaded the machine. thaw resumes it (SIGCONT).
func (c *Cluster) Freeze(n *Node) (thaw func(), err error) {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil {
		return nil, fmt.Errorf("redistest: %s is not running", n.Addr)
	}
	thaw, err = testenv.StopProcess(cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("redistest: freeze %s: %w", n.Addr, err)
	}
	return thaw, nil
}

// Memory returns the sum of an INFO memory field (used_memory,
// used_memory_dataset, …) over the masters serving slots, once every
// master's writes have reached its replicas (so replication buffers are
// drained).
func (c *Cluster) Memory(ctx context.Context, field string) (int64, error) {
	var total int64
	for _, n := range c.live() {
		nodes, err := n.rc.ClusterNodes(ctx).Result()
		if err != nil {
			return 0, err
		}
		if !servesSlots(nodes) {
			continue
		}
		if c.opts.Replicas > 0 {
			if err := n.rc.Wait(ctx, c.opts.Replicas, 10*time.Second).Err(); err != nil {
				return 0, err
			}
		}
		info, err := n.rc.Info(ctx, "memory").Result()
		if err != nil {
			return 0, err
		}
		v, ok := infoField(info, field)
		if !ok {
			return 0, fmt.Errorf("redistest: no %s in INFO of %s", field, n.Addr)
		}
		total += v
	}
	return total, nil
}

func infoField(info, name string) (int64, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// Require returns c when err is nil; otherwise it reports a missing
// redis-server through testenv.MissingTool and fails the test on any other
// start error.
func Require(t testing.TB, c *Cluster, err error) *Cluster {
	t.Helper()
	if errors.Is(err, ErrNoRedis) {
		testenv.MissingTool(t, "%v", err)
	}
	if err != nil {
		t.Fatalf("starting the Redis cluster: %v", err)
	}
	return c
}

// New starts a cluster for one test and closes it at the test's cleanup.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts)
	Require(t, c, err)
	t.Cleanup(func() {
		if t.Failed() { // what the nodes saw, for the failure report
			for _, n := range c.Nodes {
				t.Logf("redis node %s log: %s", n.Addr, n.logTail())
			}
		}
		c.Close()
	})
	return c
}
