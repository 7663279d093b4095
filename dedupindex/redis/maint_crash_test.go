package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	wredis "github.com/wayside-archive/wayside/dedupindex/redis"
	"github.com/wayside-archive/wayside/internal/failpoint"
	"github.com/wayside-archive/wayside/internal/testenv"
)

const deleteChildEnv = "WAYSIDE_REDIS_DELETE_CHILD" // "PREFIX ADDR,ADDR,..."

const (
	redisDeleteOriginals = 400
	redisDeleteFile      = "WAYSIDE-20250101000000-00000.warc.gz"
)

func redisDeleteEntries() []dedupindex.Entry {
	es := make([]dedupindex.Entry, redisDeleteOriginals)
	for i := range es {
		o := indextest.SyntheticOriginal(i)
		if i%2 == 1 {
			o.File = "OTHER.warc.gz"
		}
		es[i] = dedupindex.Entry{Key: dedupindex.Key{Scope: "s", Digest: o.Digest}, Original: o}
	}
	return es
}

// deleteChild deletes by file and reports the count of originals as it
// falls, until it is killed.
func deleteChild(spec string) error {
	disarm, err := failpoint.Arm(os.Getenv("WAYSIDE_FAILPOINTS"))
	if err != nil {
		return err
	}
	defer disarm()
	prefix, addrs, _ := strings.Cut(spec, " ")
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	ctx := context.Background()
	ix, err := wredis.New(ctx, c, wredis.WithPrefix(prefix))
	if err != nil {
		return err
	}
	_, err = ix.Delete(ctx, dedupindex.Selector{Files: []string{redisDeleteFile}})
	return err
}

// TestDeleteCrashSafety kills (SIGKILL) a process deleting by file from
// the Redis index once some of the file's originals are gone: Check passes
// (a by-URL entry removed before its original is queued, as an
// interrupted commit leaves it), every original of another file is there,
// each of the deleted file's is there whole or gone, Repair restores the
// by-URL entry of an original whose delete did not finish, and a second
// delete finishes.
func TestDeleteCrashSafety(t *testing.T) {
	cl := sharedCluster(t)
	c := clusterClient(t, cl)
	ctx := context.Background()
	prefix := newPrefix()
	ix := open(t, c, wredis.WithPrefix(prefix), wredis.WithCapacity(10000))
	es := redisDeleteEntries()
	if _, err := ix.PutBatch(ctx, es); err != nil {
		t.Fatal(err)
	}
	// The child kills itself while deleting original nth of the file's:
	// nth-1 are gone, the nth is queued with its by-URL entry removed
	// (the state an interrupted delete leaves, which Repair mends).
	nth := 2 + rand.IntN(redisDeleteOriginals/2-4)
	t.Setenv("WAYSIDE_FAILPOINTS", fmt.Sprintf("dedupindex.redis.delete-queued=%d*kill", nth))
	if !testenv.CrashChild(t, deleteChildEnv+"="+prefix+" "+strings.Join(cl.Addrs(), ","), func(string) bool { return false }) {
		t.Fatalf("the delete child was not killed at original %d", nth)
	}
	if err := ix.Check(ctx); err != nil {
		t.Fatalf("Check after SIGKILL mid-delete: %v", err)
	}
	gone := 0
	for _, e := range es {
		o, ok, err := ix.Lookup(ctx, e.Key)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !ok && e.Original.File != redisDeleteFile:
			t.Fatalf("original of another file lost: %+v", e.Original)
		case !ok:
			gone++
		case o.RecordID != e.Original.RecordID || o.Offset != e.Original.Offset:
			t.Fatalf("original changed: %+v", o)
		}
	}
	if gone != nth-1 {
		t.Fatalf("%d of %d gone, killed while deleting original %d", gone, redisDeleteOriginals/2, nth)
	}
	if _, err := ix.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if _, ok, _ := ix.Lookup(ctx, e.Key); ok {
			got, err := ix.ByURL(ctx, "s", dedupindex.URLKey(e.Original.TargetURI))
			found := false
			for _, o := range got {
				found = found || o.RecordID == e.Original.RecordID
			}
			if err != nil || !found {
				t.Fatalf("after Repair, ByURL(%s) lacks a stored original: %v", e.Original.TargetURI, err)
			}
		}
	}
	n, err := ix.Delete(ctx, dedupindex.Selector{Files: []string{redisDeleteFile}})
	if err != nil || int(n) != redisDeleteOriginals/2-gone {
		t.Fatalf("finishing delete = %d, %v; want %d", n, err, redisDeleteOriginals/2-gone)
	}
	if err := ix.Check(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed while deleting original %d (%d of the file's deleted)", nth, gone)
}
