package pebble

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/dedupindex/indextest"
)

// TestLookupSeesEveryWrite: lookups reuse iterators (lookupiter.go), yet a
// lookup that starts after any kind of write returned sees it — Put,
// PutBatch, Claim+Commit, Update and Delete — with idle iterators created
// just before the write, across flushes and compactions, and when the
// write and the lookup run in different goroutines. The memtable is
// flushed after every pause in writes of 5 ms, so flushes land between
// the steps too.
func TestLookupSeesEveryWrite(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir(), func(o *options) { o.idleFlush, o.idleFlushMin = 5*time.Millisecond, 0 })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ix.Close(); err != nil {
			t.Errorf("close with idle lookup iterators: %v", err)
		}
	}()
	idle := func() []*lookupIter {
		ix.iters.mu.Lock()
		defer ix.iters.mu.Unlock()
		return append(append([]*lookupIter(nil), ix.iters.idle[0]...), ix.iters.idle[1]...)
	}
	var warmOnce func()
	key := func(i int) dedupindex.Key {
		return dedupindex.Key{Scope: "s", Digest: indextest.SyntheticDigest(i)}
	}
	// warm leaves idle iterators in the pool: concurrent lookups of other
	// keys, so several iterators are created and kept (again if a
	// background flush outdated them meanwhile).
	warm := func() {
		t.Helper()
		for try := 0; try < 5; try++ {
			if warmOnce(); len(idle()) > 0 {
				return
			}
		}
		t.Fatal("no idle iterator kept after lookups")
	}
	warmOnce = func() {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 20 {
					if _, _, err := ix.Lookup(ctx, key(-1-g*100-j)); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
	}
	want := func(what string, k dedupindex.Key, found bool, recordID string) {
		t.Helper()
		o, ok, err := ix.Lookup(ctx, k)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok != found || (found && o.RecordID != recordID) {
			t.Fatalf("%s: lookup found=%v record %q, want found=%v record %q", what, ok, o.RecordID, found, recordID)
		}
	}
	orig := func(i int) dedupindex.Original { return indextest.SyntheticOriginal(i) }

	// The scope must exist for a lookup to reach the table.
	if _, err := ix.Put(ctx, key(0), orig(0)); err != nil {
		t.Fatal(err)
	}
	warm()
	want("before put", key(1), false, "")
	if _, err := ix.Put(ctx, key(1), orig(1)); err != nil {
		t.Fatal(err)
	}
	want("after put", key(1), true, orig(1).RecordID)

	warm()
	want("before put batch", key(2), false, "")
	if _, err := ix.PutBatch(ctx, []dedupindex.Entry{{Key: key(2), Original: orig(2)}, {Key: key(3), Original: orig(3)}}); err != nil {
		t.Fatal(err)
	}
	want("after put batch", key(3), true, orig(3).RecordID)

	warm()
	want("before commit", key(4), false, "")
	r, err := ix.Claim(ctx, key(4))
	if err != nil || r.State != dedupindex.Claimed {
		t.Fatalf("claim: %v %v", r.State, err)
	}
	want("claimed, not committed", key(4), false, "")
	if err := ix.Commit(ctx, r.Ticket, orig(4)); err != nil {
		t.Fatal(err)
	}
	want("after commit", key(4), true, orig(4).RecordID)

	warm()
	to := orig(2)
	to.RecordID = "<urn:uuid:11111111-2222-4333-8444-555555555555>"
	to.File = "moved.warc.gz"
	if n, err := ix.Update(ctx, []dedupindex.Move{{Key: key(2), From: orig(2).RecordID, To: to}}); err != nil || n != 1 {
		t.Fatalf("update: %d %v", n, err)
	}
	want("after update", key(2), true, to.RecordID)

	warm()
	if n, err := ix.Delete(ctx, dedupindex.Selector{Files: []string{"moved.warc.gz"}}); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	want("after delete", key(2), false, "")
	want("after delete, another key", key(3), true, orig(3).RecordID)

	// A flush and a compaction replace the tables idle iterators read.
	warm()
	if err := ix.Compact(); err != nil {
		t.Fatal(err)
	}
	want("after compaction", key(4), true, orig(4).RecordID)
	if _, err := ix.Put(ctx, key(5), orig(5)); err != nil {
		t.Fatal(err)
	}
	want("put after compaction", key(5), true, orig(5).RecordID)

	// A writer and readers in other goroutines: every put that returned
	// is seen by a lookup started after it, while readers keep the pool
	// busy with lookups of their own.
	const n = 200
	done := make(chan int)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := ix.Lookup(ctx, key(-10_000-g*1_000_000-j)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for i := range done {
			o, ok, err := ix.Lookup(ctx, key(i))
			if err == nil && (!ok || o.RecordID != orig(i).RecordID) {
				err = fmt.Errorf("put %d returned, then a lookup in another goroutine found=%v %q", i, ok, o.RecordID)
			}
			if err != nil {
				errs <- err
				for range done {
				}
				return
			}
		}
	}()
	for i := 100; i < 100+n; i++ {
		if _, err := ix.Put(ctx, key(i), orig(i)); err != nil {
			t.Fatal(err)
		}
		done <- i
	}
	close(done)
	if err := <-errs; err != nil {
		t.Error(err)
	}
	close(stop)
	wg.Wait()
}

// TestIdleFlush: once writes pause with at least idleFlushMin bytes
// unflushed, the memtable is flushed into a table (lookups then skip the
// skiplist search), once per pause, and the entry is still found; a pause
// after a small write (a slow crawl's one record) flushes nothing.
func TestIdleFlush(t *testing.T) {
	ctx := context.Background()
	const min = 64 << 10
	ix, err := Open(t.TempDir(), func(o *options) { o.idleFlush, o.idleFlushMin = 10*time.Millisecond, min })
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	flushes := func() int64 { return ix.db.Metrics().Flush.Count }
	k := dedupindex.Key{Scope: "s", Digest: indextest.SyntheticDigest(1)}
	o := indextest.SyntheticOriginal(1)
	f0 := flushes()
	if _, err := ix.Put(ctx, k, o); err != nil {
		t.Fatal(err)
	}
	// One small write, then a pause over many ticks: no flush (a window,
	// not a synchronisation: nothing else writes to this index).
	time.Sleep(200 * time.Millisecond)
	if f := flushes(); f != f0 {
		t.Fatalf("%d flushes after one small write, want 0 below %d bytes unflushed", f-f0, min)
	}
	var es []dedupindex.Entry
	for i := 2; ix.db.Metrics().WAL.Size < min; i++ {
		es = append(es[:0], dedupindex.Entry{Key: dedupindex.Key{Scope: "s", Digest: indextest.SyntheticDigest(i)}, Original: indextest.SyntheticOriginal(i)})
		if _, err := ix.PutBatch(ctx, es); err != nil {
			t.Fatal(err)
		}
		if i > 100000 {
			t.Fatal("the write-ahead log did not grow")
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for flushes() == f0 {
		if time.Now().After(deadline) {
			t.Fatal("no flush within 30 s of the last write")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := ix.db.Metrics().MemTable.Count; n != 1 {
		t.Errorf("%d memtables after the flush, want 1 (the new, empty one)", n)
	}
	if got, ok, err := ix.Lookup(ctx, k); err != nil || !ok || got.RecordID != o.RecordID {
		t.Fatalf("lookup after the flush: %v %v %v", got.RecordID, ok, err)
	}
	// Without writes, no more flushes: the flushed count stays while the
	// ticker fires many times (a window, not a synchronisation: nothing
	// else writes to this index).
	f1 := flushes()
	time.Sleep(200 * time.Millisecond)
	if f := flushes(); f != f1 {
		t.Errorf("%d flushes during a pause with nothing written, want 0", f-f1)
	}
}

// TestTablesOnlyLookupsUnderWrites: while a writer puts originals
// continuously into a small memtable (a flush every few hundred writes),
// a lookup started after a put returned finds it, and lookups of earlier
// puts (flushed meanwhile, or still in a memtable being flushed) find
// theirs. Most lookups read the tables alone (unflushed.go), and flushes
// happened during the run, so the test crossed the boundary it is about
// many times.
func TestTablesOnlyLookupsUnderWrites(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir(), func(o *options) { o.memTableSize = 64 << 10 })
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	key := func(i int) dedupindex.Key { return dedupindex.Key{Scope: "s", Digest: indextest.SyntheticDigest(i)} }
	orig := indextest.SyntheticOriginal
	flushes0 := ix.db.Metrics().Flush.Count
	const n = 3000
	done := make(chan int, 16)
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		var fail error
		for i := range done {
			if fail != nil {
				continue
			}
			// The put that just returned, one a little older (maybe in
			// the memtable being flushed), one long flushed, and a
			// digest never written.
			for _, j := range []int{i, max(i-37, 0), i / 2} {
				o, ok, err := ix.Lookup(ctx, key(j))
				if err == nil && (!ok || o.RecordID != orig(j).RecordID) {
					err = fmt.Errorf("put %d returned (put %d the last), then a lookup found=%v %q", j, i, ok, o.RecordID)
				}
				if err != nil {
					fail = err
				}
			}
			if _, ok, err := ix.Lookup(ctx, key(-1-i)); err != nil || ok {
				fail = fmt.Errorf("lookup of a digest never written: found=%v, %v", ok, err)
			}
		}
		if fail != nil {
			errs <- fail
		}
	}()
	for i := range n {
		if _, err := ix.Put(ctx, key(i), orig(i)); err != nil {
			t.Fatal(err)
		}
		done <- i
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	flushes := ix.db.Metrics().Flush.Count - flushes0
	skipped := ix.mem.skipped.Load()
	if flushes < 5 || skipped < n {
		t.Errorf("%d flushes and %d of %d lookups from the tables alone during the writes; want several flushes and most lookups", flushes, skipped, 4*n)
	}
}

// TestTablesOnlyLookupsAfterReopen: a reopened index whose last writes were
// only in the write-ahead log (Close does not flush) answers them, and its
// lookups read the tables alone: Pebble flushed the replayed log into
// tables, which Open checks before it trusts the filter (unflushed.go).
func TestTablesOnlyLookupsAfterReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) dedupindex.Key { return dedupindex.Key{Scope: "s", Digest: indextest.SyntheticDigest(i)} }
	for i := range 50 {
		if _, err := ix.Put(ctx, key(i), indextest.SyntheticOriginal(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if ix, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.mem.off.Load() {
		t.Fatal("the filter is off after a reopen: Pebble left the replayed log in a memtable")
	}
	for i := range 50 {
		if o, ok, err := ix.Lookup(ctx, key(i)); err != nil || !ok || o.RecordID != indextest.SyntheticOriginal(i).RecordID {
			t.Fatalf("lookup %d after reopen: %v %v %v", i, o.RecordID, ok, err)
		}
	}
	if n := ix.mem.skipped.Load(); n != 50 {
		t.Errorf("%d of 50 lookups after reopen read the tables alone, want all", n)
	}
}
