package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/internal/redistest"
)

// TestFailoverAndRestart starts a 3+3 cluster, kills the master of a key,
// checks that a replica took over with the acknowledged write, restarts
// the killed node and waits until it is a replica again.
func TestFailoverAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := redistest.New(t, redistest.Options{})
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	cc := c.Client()
	defer cc.Close()
	if err := cc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := c.MasterFor(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	reps, err := c.ReplicasOf(ctx, m)
	if err != nil || len(reps) != 1 {
		t.Fatalf("replicas of %s: %v %v", m.Addr, reps, err)
	}
	if n, err := m.Client().Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT = %d, %v", n, err)
	}
	killed, err := c.KillMaster(ctx, "k")
	if err != nil || killed != m {
		t.Fatalf("KillMaster = %v, %v", killed, err)
	}
	nm, err := c.WaitFailover(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if nm != reps[0] {
		t.Fatalf("new master %s, want the replica %s", nm.Addr, reps[0].Addr)
	}
	if v, err := nm.Client().Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET on the new master = %q, %v", v, err)
	}
	if err := c.Restart(ctx, killed); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := c.ReplicasOf(ctx, nm); err != nil || len(r) != 1 || r[0] != killed {
		t.Fatalf("replicas of the new master = %v, %v; want the restarted node", r, err)
	}
}
