package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
	wredis "github.com/wayside-archive/wayside/dedupindex/redis"
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

// deleteChild deletes by file, with the failpoint between queueing an
// original and deleting it armed to kill the process at the original the
// parent chose (testenv.KillAt).
func deleteChild(spec string) error {
	disarm, err := testenv.ArmChildFailpoints()
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
// the Redis index while it deletes a random original of the file's: Check
// passes (a by-URL entry removed before its original is queued, as an
// interrupted commit leaves it), every original of another file is there,
// exactly the file's originals before the one being deleted are gone, the
// others whole, Repair restores the by-URL entry of an original whose
// delete did not finish, and a second delete finishes.
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
	testenv.KillAt(t, deleteChildEnv+"="+prefix+" "+strings.Join(cl.Addrs(), ","), "dedupindex.redis.delete-queued", nth)
	d := testenv.DeleteKill[dedupindex.Entry]{
		Entries:  es,
		Selected: func(e dedupindex.Entry) bool { return e.Original.File == redisDeleteFile },
		Present: func(e dedupindex.Entry) (bool, error) {
			o, ok, err := ix.Lookup(ctx, e.Key)
			if err == nil && ok && (o.RecordID != e.Original.RecordID || o.Offset != e.Original.Offset) {
				err = fmt.Errorf("original changed: %+v", o)
			}
			return ok, err
		},
		Check: func() error { return ix.Check(ctx) },
	}
	const what = "killed while deleting"
	gone := d.Killed(t, what, nth-1)
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
	d.Finish(t, what, gone, func() (int64, error) {
		return ix.Delete(ctx, dedupindex.Selector{Files: []string{redisDeleteFile}})
	})
	t.Logf("killed while deleting original %d (%d of the file's deleted)", nth, gone)
}
