package pebble

import (
	"context"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
)

// TestClaimWaitsForSeedingPut: a Claim that meets a seeding Put in the
// middle of its durable write (the sidecar ingesting the WARC a crawler just
// wrote) waits for it and reports the stored original as Duplicate, instead
// of Pending, which would make the crawler store the payload in full again.
// (Found as a flaky sidecar end-to-end test: ingest and crawler raced.)
func TestClaimWaitsForSeedingPut(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	d := digest.Of(digest.SHA1, []byte("a payload seeded while a crawler claims it")).String()
	k := dedupindex.Key{Scope: "s", Digest: d}
	pk, err := parseKey(k)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the key's writer slot as putBatch does during its write.
	s, err := ix.acquire(ctx, pk.slotName())
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan dedupindex.ClaimResult, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := ix.Claim(ctx, k)
		res <- r
		errc <- err
	}()
	select {
	case r := <-res:
		t.Fatalf("Claim returned %v while a seeding write held the key; want it to wait", r.State)
	case <-time.After(50 * time.Millisecond):
	}
	// Finish the "write": store the original, then release the slot.
	o := dedupindex.Original{Digest: d, TargetURI: "http://example.org/", Date: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
		RecordID: "<urn:uuid:7a0c5f8e-0000-4000-8000-000000000001>", File: "a.warc.gz", Offset: 10, Length: 100, PayloadLength: 42}
	b := ix.db.NewBatch()
	w := batchWriter{ix: ix, b: b, inBatch: map[string]bool{}}
	if _, err := w.add(pk, o, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := w.finish(); err != nil {
		t.Fatal(err)
	}
	if err := ix.apply(b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	ix.release(pk.slotName(), s)

	r := <-res
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if r.State != dedupindex.Duplicate || r.Original.RecordID != o.RecordID {
		t.Fatalf("Claim after the seeding write = %v %+v, want Duplicate of %s", r.State, r.Original, o.RecordID)
	}
	if err := ix.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClaimWaitingForPutStopsOnClose: Close wakes a Claim that waits for a
// seeding write; it returns ErrClosed instead of hanging.
func TestClaimWaitingForPutStopsOnClose(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := dedupindex.Key{Scope: "s", Digest: digest.Of(digest.SHA1, []byte("x")).String()}
	pk, _ := parseKey(k)
	if _, err := ix.acquire(ctx, pk.slotName()); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := ix.Claim(ctx, k)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Claim succeeded on a closed index")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Claim still waiting 10s after Close")
	}
}
