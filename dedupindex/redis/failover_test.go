package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	wredis "github.com/wayside-archive/wayside/dedupindex/redis"
	"github.com/wayside-archive/wayside/internal/redistest"
)

// committer claims and commits fresh digests (and, every fourth call, a
// digest another worker also uses) and records what each call returned.
type committer struct {
	ix *wredis.Index
	mu sync.Mutex
	// acked: commits that returned nil, by digest (every digest is
	// committed at most once: a second claimer gets Pending or Duplicate).
	acked      map[string]dedupindex.Original
	notAcked   int      // commits that returned ErrNotReplicated
	wrong      []string // Duplicates naming another payload's original
	errs       atomic.Int64
	duplicates atomic.Int64
}

func (c *committer) run(ctx context.Context, worker, i int) {
	p := fmt.Sprintf("w%d-%d", worker, i)
	if i%4 == 0 {
		p = fmt.Sprintf("shared-%d", i/4)
	}
	k := dedupindex.Key{Scope: "s", Digest: indextest.Digest(p)}
	r, err := c.ix.Claim(ctx, k)
	if err != nil {
		c.errs.Add(1)
		return
	}
	switch r.State {
	case dedupindex.Duplicate:
		c.duplicates.Add(1)
		if r.Original.Digest != k.Digest || !strings.HasSuffix(r.Original.TargetURI, "/"+p) {
			c.mu.Lock()
			c.wrong = append(c.wrong, fmt.Sprintf("Claim(%s) = Duplicate of %s %s", p, r.Original.Digest, r.Original.TargetURI))
			c.mu.Unlock()
		}
		return
	case dedupindex.Pending:
		return
	}
	o := indextest.Original(p, "https://example.org/"+p, time.Now())
	err = c.ix.Commit(ctx, r.Ticket, o)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.acked[k.Digest] = o
	case errors.Is(err, wredis.ErrNotReplicated):
		c.notAcked++
	default:
		c.errs.Add(1)
	}
}

// TestFailover runs committers against a real 3+3 cluster while the
// master of one third of the slots is SIGKILLed and its replica takes
// over. Claim and Commit fail during the failover window (the callers
// then store full records), never return a wrong original, and work
// again afterwards. With WAIT (wait=1) every commit that returned nil is
// still in the index after the failover, including those that the killed
// master held; without WAIT the test reports how many were lost.
func TestFailover(t *testing.T) {
	for _, wait := range []bool{true, false} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) { testFailover(t, wait) })
	}
}

func testFailover(t *testing.T, wait bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := redistest.New(t, redistest.Options{Args: recommendedArgs})
	cc := clusterClient(t, cl)
	opts := []wredis.Option{wredis.WithPrefix("fo:"), wredis.WithCapacity(100_000)}
	if wait {
		opts = append(opts, wredis.WithWait(1, 500*time.Millisecond))
	}
	ix, err := wredis.New(ctx, cc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	c := &committer{ix: ix, acked: map[string]dedupindex.Original{}}

	const workers = 8
	var (
		wg    sync.WaitGroup
		stop  atomic.Bool
		calls atomic.Int64
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && i < 100_000; i++ {
				c.run(ctx, w, i)
				calls.Add(1)
			}
		}()
	}
	waitCalls := func(n int64) {
		t.Helper()
		for calls.Load() < n {
			if ctx.Err() != nil {
				t.Fatalf("only %d calls: %v", calls.Load(), ctx.Err())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitCalls(400)
	// Kill the master holding the bucket of an acknowledged original.
	c.mu.Lock()
	var victim dedupindex.Key
	for d := range c.acked {
		victim = dedupindex.Key{Scope: "s", Digest: d}
		break
	}
	c.mu.Unlock()
	bucketKey := ix.DigestKeyForTest(victim)
	killed, err := cl.KillMaster(ctx, bucketKey)
	if err != nil {
		t.Fatal(err)
	}
	killedAt := calls.Load()
	// Which acknowledged originals did the killed master hold?
	onKilled := 0
	c.mu.Lock()
	before := map[string]dedupindex.Original{}
	for d, o := range c.acked {
		before[d] = o
	}
	c.mu.Unlock()
	for d := range before {
		if m, err := cl.MasterFor(ctx, ix.DigestKeyForTest(dedupindex.Key{Scope: "s", Digest: d})); err == nil && m == killed {
			onKilled++
		}
	}
	promoted, err := cl.WaitFailover(ctx, bucketKey)
	if err != nil {
		t.Fatal(err)
	}
	duringFailover := calls.Load() - killedAt
	waitCalls(calls.Load() + 400)
	if err := cl.Restart(ctx, killed); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	waitCalls(calls.Load() + 200)
	stop.Store(true)
	wg.Wait()
	t.Logf("killed %s (holding %d of %d acknowledged originals), %s took over; %d calls during the failover, %d errors, %d commits not acknowledged, %d duplicates found",
		killed.Addr, onKilled, len(before), promoted.Addr, duringFailover, c.errs.Load(), c.notAcked, c.duplicates.Load())
	if len(c.wrong) > 0 {
		t.Fatalf("wrong originals returned: %v", c.wrong)
	}
	if onKilled == 0 {
		t.Fatal("the killed master held none of the acknowledged originals: the test proves nothing")
	}

	// Every acknowledged commit: present and unchanged (wait), or at worst
	// absent (no wait). Never another original.
	lost := 0
	for d, o := range c.acked {
		got, ok, err := ix.Lookup(ctx, dedupindex.Key{Scope: "s", Digest: d})
		switch {
		case err != nil:
			t.Fatalf("Lookup %s: %v", d, err)
		case !ok:
			lost++
		case got.RecordID != o.RecordID || got.TargetURI != o.TargetURI || got.Offset != o.Offset:
			t.Fatalf("%s: index holds %+v, the acknowledged commit was %+v", d, got, o)
		}
	}
	t.Logf("%d of %d acknowledged commits lost", lost, len(c.acked))
	if wait && lost > 0 {
		t.Fatalf("%d acknowledged commits lost with wait=1", lost)
	}
	// After the failover the index works: a claim and an acknowledged
	// commit.
	k := dedupindex.Key{Scope: "s", Digest: indextest.Digest("after-failover")}
	r, err := ix.Claim(ctx, k)
	if err != nil || r.State != dedupindex.Claimed {
		t.Fatalf("Claim after the failover = %v %v", r.State, err)
	}
	if err := ix.Commit(ctx, r.Ticket, indextest.Original("after-failover", "https://example.org/after", time.Now())); err != nil {
		t.Fatalf("Commit after the failover: %v", err)
	}
	// Invariants hold (by-URL entries a commit could not write during the
	// failover are queued; Repair writes them). Without WAIT a lost
	// original may leave its by-URL entry (on another master) behind,
	// which Check lists and ByURL ignores.
	if err := ix.Check(ctx); err != nil && wait {
		t.Fatalf("Check after the failover, before Repair: %v", err)
	}
	repaired, err := ix.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Repair wrote %d queued by-url entries", repaired)
	if err := ix.Check(ctx); err != nil {
		if wait {
			t.Fatalf("Check after the failover: %v", err)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.Contains(line, "has no original") {
				t.Fatalf("Check after the failover: %v", err)
			}
		}
	}
}
