package redis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	wredis "github.com/wayside-archive/wayside/dedupindex/redis"
	"github.com/wayside-archive/wayside/internal/redistest"
)

// recommendedArgs are the server settings doc.go recommends.
var recommendedArgs = []string{"--hash-max-listpack-value", "128", "--hash-max-listpack-entries", "256"}

// shared is one real 3-master + 3-replica cluster for the tests that do
// not kill nodes (those start their own).
var (
	shared    *redistest.Cluster
	sharedErr error
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(deleteChildEnv); spec != "" {
		if err := deleteChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "delete child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if os.Getenv(benchChildEnv) != "" {
		os.Exit(m.Run()) // a claim benchmark client: no cluster of its own
	}
	shared, sharedErr = redistest.Start(context.Background(), redistest.Options{Args: recommendedArgs})
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func sharedCluster(t testing.TB) *redistest.Cluster {
	t.Helper()
	return redistest.Require(t, shared, sharedErr)
}

func clusterClient(t testing.TB, c *redistest.Cluster) *goredis.ClusterClient {
	t.Helper()
	cc := c.Client()
	t.Cleanup(func() { cc.Close() })
	return cc
}

var prefixSeq atomic.Int64

func newPrefix() string { return fmt.Sprintf("t%d-%d:", os.Getpid(), prefixSeq.Add(1)) }

func open(t testing.TB, c goredis.UniversalClient, opts ...wredis.Option) *wredis.Index {
	t.Helper()
	ix, err := wredis.New(context.Background(), c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Check(context.Background()); err != nil && !errors.Is(err, dedupindex.ErrClosed) {
			t.Errorf("Check: %v", err)
		}
		ix.Close()
	})
	return ix
}

func TestConformance(t *testing.T) {
	c := clusterClient(t, sharedCluster(t))
	indextest.Run(t, func(t *testing.T) indextest.Opener {
		prefix := newPrefix()
		return func() (dedupindex.Index, error) {
			return wredis.New(context.Background(), c, wredis.WithPrefix(prefix), wredis.WithCapacity(10000))
		}
	})
}

// TestConformanceWait runs the suite with every commit waiting for a
// replica's acknowledgement.
func TestConformanceWait(t *testing.T) {
	c := clusterClient(t, sharedCluster(t))
	indextest.Run(t, func(t *testing.T) indextest.Opener {
		prefix := newPrefix()
		return func() (dedupindex.Index, error) {
			return wredis.New(context.Background(), c, wredis.WithPrefix(prefix), wredis.WithWait(1, 5*time.Second))
		}
	})
}

// TestKeysSpreadOverCluster checks that originals land on every master
// (the bucket tags spread keys) while each claim stays atomic.
func TestKeysSpreadOverCluster(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t, sharedCluster(t))
	prefix := newPrefix()
	ix := open(t, c, wredis.WithPrefix(prefix))
	for i := range 60 {
		p := fmt.Sprint("spread", i)
		if _, err := ix.Put(ctx, dedupindex.Key{Scope: "s", Digest: indextest.Digest(p)}, indextest.Original(p, "http://e/"+p, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	var masters atomic.Int64
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		keys, err := n.Keys(ctx, prefix+"d{*").Result()
		if len(keys) > 0 {
			masters.Add(1)
		}
		return err
	})
	if err != nil || masters.Load() != 3 {
		t.Fatalf("originals on %d of 3 masters (%v)", masters.Load(), err)
	}
}

// TestLeaseExpiry: a claim whose claimer vanished expires with its lease;
// the late claimer's Commit still indexes its durable record if the slot
// is free, and never overwrites the new claimer's original. The lease is
// the pending claim key's expiry in Redis: the test checks that WithLease
// set it, then lets it run out at once (PEXPIRE) instead of waiting for it,
// so nothing depends on how fast the test runs.
func TestLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t, sharedCluster(t))
	prefix := newPrefix()
	const lease = time.Hour
	a := open(t, c, wredis.WithPrefix(prefix), wredis.WithLease(lease))
	b := open(t, c, wredis.WithPrefix(prefix))
	k := dedupindex.Key{Scope: "s", Digest: indextest.Digest("lease")}
	ra, err := a.Claim(ctx, k)
	if err != nil || ra.State != dedupindex.Claimed {
		t.Fatalf("a: %v %v", ra.State, err)
	}
	claims := keysMatching(t, c, prefix+"c{*")
	if len(claims) != 1 {
		t.Fatalf("pending claim keys %v, want one", claims)
	}
	if ttl, err := c.PTTL(ctx, claims[0]).Result(); err != nil || ttl <= lease-time.Minute || ttl > lease {
		t.Fatalf("claim key %s expires in %v (%v), want the %v lease", claims[0], ttl, err, lease)
	}
	if rb, err := b.Claim(ctx, k); err != nil || rb.State != dedupindex.Pending {
		t.Fatalf("b while a's lease runs: %v %v", rb.State, err)
	}
	// a's claimer vanished and its lease ran out.
	if ok, err := c.PExpire(ctx, claims[0], time.Millisecond).Result(); err != nil || !ok {
		t.Fatalf("PEXPIRE %s: %v %v", claims[0], ok, err)
	}
	var rb dedupindex.ClaimResult
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rb, err = b.Claim(ctx, k)
		if err != nil || rb.State != dedupindex.Pending || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
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
}

// TestOverflowValues stores originals too long for a listpack hash value
// (a long URI): they go to overflow keys and read back whole, are found by
// URL, and a shorter replacement moves back into the hash.
func TestOverflowValues(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t, sharedCluster(t))
	prefix := newPrefix()
	ix := open(t, c, wredis.WithPrefix(prefix))
	long := "https://example.org/search?q=" + strings.Repeat("wayside+", 40)
	k := dedupindex.Key{Scope: "s", Digest: indextest.Digest("long")}
	o := indextest.Original("long", long, time.Now().UTC().Add(-48*time.Hour))
	if added, err := ix.Put(ctx, k, o); err != nil || !added {
		t.Fatalf("Put = %v %v", added, err)
	}
	got, ok, err := ix.Lookup(ctx, k)
	if err != nil || !ok || got.TargetURI != long || got.RecordID != o.RecordID {
		t.Fatalf("Lookup = %+v %v %v", got, ok, err)
	}
	if n := countKeys(t, c, prefix+"x{*"); n != 1 {
		t.Fatalf("%d overflow keys, want 1", n)
	}
	byURL, err := ix.ByURL(ctx, "s", dedupindex.URLKey(long))
	if err != nil || len(byURL) != 1 || byURL[0].RecordID != o.RecordID {
		t.Fatalf("ByURL = %+v %v", byURL, err)
	}
	r, err := ix.ClaimNewer(ctx, k, time.Now().Add(-time.Hour))
	if err != nil || r.State != dedupindex.Claimed {
		t.Fatalf("ClaimNewer = %v %v", r.State, err)
	}
	short := indextest.Original("long", "https://example.org/s", time.Now())
	if err := ix.Commit(ctx, r.Ticket, short); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := ix.Lookup(ctx, k); got.TargetURI != short.TargetURI {
		t.Fatalf("after replacement: %s", got.TargetURI)
	}
	if n := countKeys(t, c, prefix+"x{*"); n != 0 {
		t.Fatalf("%d overflow keys left after the replacement", n)
	}
	if byURL, err := ix.ByURL(ctx, "s", dedupindex.URLKey(long)); err != nil || len(byURL) != 0 {
		t.Fatalf("ByURL of the replaced URL = %+v %v", byURL, err)
	}
}

func countKeys(t *testing.T, c *goredis.ClusterClient, pattern string) int {
	t.Helper()
	return len(keysMatching(t, c, pattern))
}

// keysMatching returns the keys matching pattern on every master.
func keysMatching(t *testing.T, c *goredis.ClusterClient, pattern string) []string {
	t.Helper()
	var mu sync.Mutex
	var all []string
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *goredis.Client) error {
		keys, err := m.Keys(ctx, pattern).Result()
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestOldLayoutRefused: a prefix holding an index of an earlier layout
// (1: one hash per digest, keys PREFIXo{…}; 2: recorded in the meta key)
// is refused with ErrOldLayout, and left untouched.
func TestOldLayoutRefused(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t, sharedCluster(t))
	prefix := newPrefix()
	old := prefix + "o{0123456789abcdef01234567}"
	if err := c.HSet(ctx, old, "d", "1700000000000000", "v", `{"digest":"sha1:X"}`, "s", "default", "k", "sha1:X", "u", "").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := wredis.New(ctx, c, wredis.WithPrefix(prefix))
	if !errors.Is(err, wredis.ErrOldLayout) || !strings.Contains(err.Error(), old) {
		t.Fatalf("New over an old-layout index = %v, want ErrOldLayout naming %s", err, old)
	}
	if n := countKeys(t, c, prefix+"*"); n != 1 {
		t.Fatalf("the refused open left %d keys under the prefix, want the 1 old key", n)
	}

	// Layout 2 (varint values, 28-bit name ids, 16-byte by-URL entries)
	// has a meta key: refused the same way.
	prefix = newPrefix()
	if err := c.HSet(ctx, prefix+"meta", "layout", "2", "bits", "16", "byurl", "1").Err(); err != nil {
		t.Fatal(err)
	}
	_, err = wredis.New(ctx, c, wredis.WithPrefix(prefix))
	if !errors.Is(err, wredis.ErrOldLayout) || !strings.Contains(err.Error(), "layout 2") {
		t.Fatalf("New over a layout-2 index = %v, want ErrOldLayout naming layout 2", err)
	}
	if got, err := c.HGet(ctx, prefix+"meta", "layout").Result(); err != nil || got != "2" || countKeys(t, c, prefix+"*") != 1 {
		t.Fatalf("the refused open changed the layout-2 index: layout %q %v", got, err)
	}
}

// TestLayoutFixedAtCreation: capacity and the by-URL index are recorded
// when an index is created; reopening with other settings is an error,
// reopening without them adopts the stored layout.
func TestLayoutFixedAtCreation(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t, sharedCluster(t))
	prefix := newPrefix()
	ix := open(t, c, wredis.WithPrefix(prefix), wredis.WithCapacity(1000), wredis.WithoutURLIndex())
	if _, err := ix.ByURL(ctx, "s", "com,example)/"); !errors.Is(err, dedupindex.ErrNoURLIndex) {
		t.Fatalf("ByURL without the by-URL index = %v", err)
	}
	if _, err := wredis.New(ctx, c, wredis.WithPrefix(prefix), wredis.WithCapacity(1_000_000_000)); err == nil || !strings.Contains(err.Error(), "buckets") {
		t.Fatalf("reopen with another capacity = %v", err)
	}
	again := open(t, c, wredis.WithPrefix(prefix))
	if _, err := again.ByURL(ctx, "s", "com,example)/"); !errors.Is(err, dedupindex.ErrNoURLIndex) {
		t.Fatalf("reopened index ByURL = %v, want the stored layout (no by-URL index)", err)
	}
	if _, err := wredis.New(ctx, c, wredis.WithPrefix("bad{prefix")); err == nil {
		t.Fatal("a prefix with a brace was accepted")
	}
}

// TestUnreadableOriginalIsReplaced: a stored value that does not decode,
// or refers to an interned name the table lost, counts as absent: Check
// reports it, Claim hands out a claim and the Commit replaces it.
func TestUnreadableOriginalIsReplaced(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t, sharedCluster(t))
	for _, damage := range []string{"value", "name"} {
		t.Run(damage, func(t *testing.T) {
			prefix := newPrefix()
			ix, err := wredis.New(ctx, c, wredis.WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			k := dedupindex.Key{Scope: "s", Digest: indextest.Digest(damage)}
			if _, err := ix.Put(ctx, k, indextest.Original(damage, "http://example.com/"+damage, time.Now())); err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "value":
				bucketKey := onlyKey(t, c, prefix+"d{*")
				fields, err := c.HKeys(ctx, bucketKey).Result()
				if err != nil || len(fields) != 1 {
					t.Fatalf("fields %v %v", fields, err)
				}
				if err := c.HSet(ctx, bucketKey, fields[0], "\xff\xff\xff").Err(); err != nil {
					t.Fatal(err)
				}
			case "name":
				// A fresh index has not cached the name; the table loses it.
				for _, key := range allKeys(t, c, prefix+"n{*") {
					if err := c.Del(ctx, key).Err(); err != nil {
						t.Fatal(err)
					}
				}
				ix.Close()
				if ix, err = wredis.New(ctx, c, wredis.WithPrefix(prefix)); err != nil {
					t.Fatal(err)
				}
				defer ix.Close()
			}
			if err := ix.Check(ctx); err == nil || !strings.Contains(err.Error(), "cannot be read") {
				t.Fatalf("Check of a damaged original = %v", err)
			}
			if _, ok, err := ix.Lookup(ctx, k); ok || err != nil {
				t.Fatalf("Lookup of a damaged original = %v %v, want absent", ok, err)
			}
			r, err := ix.Claim(ctx, k)
			if err != nil || r.State != dedupindex.Claimed {
				t.Fatalf("Claim over a damaged original = %v %v", r.State, err)
			}
			o := indextest.Original(damage, "http://example.com/new", time.Now())
			if err := ix.Commit(ctx, r.Ticket, o); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := ix.Lookup(ctx, k); !ok || err != nil || got.RecordID != o.RecordID {
				t.Fatalf("after repair: %+v %v %v", got, ok, err)
			}
			// The damaged original's by-URL entry cannot be found (its URL
			// is unknown) and stays behind, harmless: ByURL checks the URL
			// of every original it returns, and Check lists the entry.
			if err := ix.Check(ctx); err != nil && strings.Contains(err.Error(), "cannot be read") {
				t.Fatalf("Check after repair still finds the damaged original: %v", err)
			}
			if got, err := ix.ByURL(ctx, "s", dedupindex.URLKey("http://example.com/"+damage)); err != nil || len(got) != 0 {
				t.Fatalf("ByURL of the damaged original's URL = %+v %v", got, err)
			}
		})
	}
}

func allKeys(t *testing.T, c *goredis.ClusterClient, pattern string) []string {
	t.Helper()
	var keys []string
	var mu sync.Mutex
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *goredis.Client) error {
		ks, err := m.Keys(ctx, pattern).Result()
		mu.Lock()
		keys = append(keys, ks...)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func onlyKey(t *testing.T, c *goredis.ClusterClient, pattern string) string {
	t.Helper()
	keys := allKeys(t, c, pattern)
	if len(keys) != 1 {
		t.Fatalf("keys %s = %v, want one", pattern, keys)
	}
	return keys[0]
}

// TestInternCollision: two MIME types whose level-0 ids collide both
// round-trip, the second under a longer id; a name whose ids are taken at
// every level (collisions too rare to provoke, so the other names are
// filed by hand) is stored inline and still round-trips, and Check reports
// the names filed under ids that are not theirs.
func TestInternCollision(t *testing.T) {
	ctx := context.Background()
	c := clusterClient(t, sharedCluster(t))
	a, b := wredis.CollidingMIMEs()
	ix := open(t, c, wredis.WithPrefix(newPrefix()))
	put := func(ix *wredis.Index, m string) {
		t.Helper()
		p := "mime " + m
		k := dedupindex.Key{Scope: "s", Digest: indextest.Digest(p)}
		o := indextest.Original(p, "http://e/"+p, time.Now())
		o.MIME = m
		if _, err := ix.Put(ctx, k, o); err != nil {
			t.Fatal(err)
		}
		got, ok, err := ix.Lookup(ctx, k)
		if err != nil || !ok || got.MIME != m {
			t.Fatalf("MIME %q read back as %q (%v %v)", m, got.MIME, ok, err)
		}
	}
	for _, m := range []string{a, b, a} {
		put(ix, m)
	}
	ida, erra := ix.MIMEIDForTest(ctx, a)
	idb, errb := ix.MIMEIDForTest(ctx, b)
	if erra != nil || errb != nil || ida == 0 || ida >= 128 || idb < 128 {
		t.Fatalf("ids of colliding names: %d, %d (%v %v); want one below 128 and one above", ida, idb, erra, errb)
	}

	full, err := wredis.New(ctx, c, wredis.WithPrefix(newPrefix()))
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	const m = "application/x-every-id-taken"
	if err := full.TakeNameIDs(ctx, m); err != nil {
		t.Fatal(err)
	}
	put(full, m)
	if id, err := full.MIMEIDForTest(ctx, m); id != 0 || err != nil {
		t.Fatalf("MIME with every id taken interned as %d (%v), want inline", id, err)
	}
	if err := full.Check(ctx); err == nil || !strings.Contains(err.Error(), "not filed under its id") {
		t.Fatalf("Check of names filed under other ids = %v", err)
	}
}

// TestWaitTimeout: while every replica is stopped (SIGSTOP), a Commit
// waiting for one returns ErrNotReplicated after the timeout, with the
// original stored on the master; once the replicas run again commits are
// acknowledged.
func TestWaitTimeout(t *testing.T) {
	ctx := context.Background()
	cl := sharedCluster(t)
	c := clusterClient(t, cl)
	ix := open(t, c, wredis.WithPrefix(newPrefix()), wredis.WithWait(1, 300*time.Millisecond))
	k := dedupindex.Key{Scope: "s", Digest: indextest.Digest("stalled")}
	// Interned names first, while replicas answer.
	if _, err := ix.Put(ctx, dedupindex.Key{Scope: "s", Digest: indextest.Digest("warm")}, indextest.Original("warm", "http://e/warm", time.Now())); err != nil {
		t.Fatal(err)
	}
	r, err := ix.Claim(ctx, k)
	if err != nil || r.State != dedupindex.Claimed {
		t.Fatal(r.State, err)
	}
	// Stopped, not DEBUG SLEEP for a while: a sleep could start late or
	// end early on a loaded machine, a stopped process stays stopped.
	var thaws []func()
	thawAll := func() {
		for _, f := range thaws {
			f()
		}
		thaws = nil
	}
	defer thawAll()
	for _, n := range cl.Nodes {
		if info, err := n.Client().Info(ctx, "replication").Result(); err == nil && strings.Contains(info, "role:slave") {
			thaw, err := cl.Freeze(n)
			if err != nil {
				t.Fatal(err)
			}
			thaws = append(thaws, thaw)
		}
	}
	if len(thaws) != 3 {
		t.Fatalf("%d replicas, want 3", len(thaws))
	}
	o := indextest.Original("stalled", "http://e/stalled", time.Now())
	err = ix.Commit(ctx, r.Ticket, o)
	if !errors.Is(err, wredis.ErrNotReplicated) {
		t.Fatalf("Commit while the replicas are stalled = %v, want ErrNotReplicated", err)
	}
	if got, ok, err := ix.Lookup(ctx, k); err != nil || !ok || got.RecordID != o.RecordID {
		t.Fatalf("the unacknowledged original is not served: %+v %v %v", got, ok, err)
	}
	thawAll()
	// The index waits only briefly on a master that just failed to get an
	// acknowledgement; a new original is acknowledged within a few tries
	// (the bound only catches a hang).
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		p := fmt.Sprint("after", i)
		_, err = ix.Put(ctx, dedupindex.Key{Scope: "s", Digest: indextest.Digest(p)}, indextest.Original(p, "http://e/"+p, time.Now()))
		if err == nil || !errors.Is(err, wredis.ErrNotReplicated) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Put after the replicas woke up: %v", err)
	}
}
