package indextest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
)

// Opener opens (or, after Close, reopens) one store.
type Opener func() (dedupindex.Index, error)

// Options describe what a backend legitimately does differently.
type Options struct {
	// CommitNeedsLocation: Commit rejects an original without a File (and
	// record id), as the sidecar's API does: over the wire a commit must
	// describe a durably written record a revisit can point at. The suite
	// then checks that rejection instead of committing location-less
	// originals. Put (seeding) must still accept them.
	CommitNeedsLocation bool
}

// Run runs the suite with zero Options. newStore returns an opener for a
// new, empty store; it is called once per subtest and must clean the store
// up through t.
func Run(t *testing.T, newStore func(t *testing.T) Opener) { RunWith(t, Options{}, newStore) }

// RunWith runs the suite for a backend described by opts.
func RunWith(t *testing.T, opts Options, newStore func(t *testing.T) Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener, opts Options)
	}{
		{"ClaimCommitLookup", testClaimCommitLookup},
		{"DigestEncodings", testDigestEncodings},
		{"CancelAndTickets", testCancelAndTickets},
		{"ConcurrentClaimsOneKey", testConcurrentClaimsOneKey},
		{"ConcurrentClaimsManyKeys", testConcurrentClaimsManyKeys},
		{"PutFirstWins", testPutFirstWins},
		{"PutWhilePending", testPutWhilePending},
		{"PutBatch", testPutBatch},
		{"Scopes", testScopes},
		{"SameURLKeys", testSameURLKeys},
		{"ByURL", testByURL},
		{"TicketJSON", testTicketJSON},
		{"Reopen", testReopen},
		{"StaleTicket", testStaleTicket},
		{"InvalidInput", testInvalidInput},
		{"Closed", testClosed},
		{"CloseWhileBusy", testCloseWhileBusy},
		{"ClaimNewer", testClaimNewer},
		{"CanceledContext", testCanceledContext},
		{"MaintScan", testMaintScan},
		{"MaintDeleteRefusesEmpty", testMaintDeleteRefusesEmpty},
		{"MaintDeleteKeepsPending", testMaintDeleteKeepsPending},
		{"MaintUpdate", testMaintUpdate},
	}
	for _, name := range selectorNames() {
		tests = append(tests, struct {
			name string
			fn   func(t *testing.T, open Opener, opts Options)
		}{"MaintDelete/" + name, func(t *testing.T, open Opener, opts Options) { testMaintDelete(t, open, name) }})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t), opts)
		})
	}
}

// openIndex opens the store and closes it (after Check) at cleanup unless
// the test closed it itself.
func openIndex(t *testing.T, open Opener) dedupindex.Index {
	t.Helper()
	ix, err := open()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if c, ok := ix.(dedupindex.Checker); ok {
			if err := c.Check(context.Background()); err != nil && !errors.Is(err, dedupindex.ErrClosed) {
				t.Errorf("Check: %v", err)
			}
		}
		if err := ix.Close(); err != nil && !errors.Is(err, dedupindex.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return ix
}

// Digest returns the canonical SHA-1 digest of s.
func Digest(s string) string { return digest.Of(digest.SHA1, []byte(s)).String() }

// Original returns a fully populated original for payload s at uri, date.
func Original(s, uri string, date time.Time) dedupindex.Original {
	return dedupindex.Original{
		Digest:        Digest(s),
		TargetURI:     uri,
		Date:          date,
		RecordID:      fmt.Sprintf("<urn:uuid:%08x-1111-4222-8333-444455556666>", rand.Uint32()),
		File:          "WAYSIDE-20260101000000-00001.warc.gz",
		Offset:        int64(rand.IntN(1 << 30)),
		Length:        1234,
		PayloadLength: int64(len(s)),
		Status:        200,
		MIME:          "text/html",
		ETag:          `"abc"`,
		LastModified:  "Mon, 02 Jan 2006 15:04:05 GMT",
	}
}

var t0 = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func key(scope, payload string) dedupindex.Key {
	return dedupindex.Key{Scope: scope, Digest: Digest(payload)}
}

// same fails unless got equals want in its stored form.
func same(t *testing.T, k dedupindex.Key, got, want dedupindex.Original) {
	t.Helper()
	w, err := dedupindex.CheckOriginal(k, want)
	if err != nil {
		t.Fatalf("CheckOriginal: %v", err)
	}
	if !got.Date.Equal(w.Date) {
		t.Fatalf("date = %v, want %v", got.Date, w.Date)
	}
	got.Date, w.Date = time.Time{}, time.Time{}
	if got != w {
		t.Fatalf("original =\n%+v\nwant\n%+v", got, w)
	}
}

func claim(t *testing.T, ix dedupindex.Index, k dedupindex.Key, want dedupindex.State) dedupindex.ClaimResult {
	t.Helper()
	r, err := ix.Claim(context.Background(), k)
	if err != nil {
		t.Fatalf("Claim(%v): %v", k, err)
	}
	if r.State != want {
		t.Fatalf("Claim(%v) = %v, want %v", k, r.State, want)
	}
	return r
}

func commit(t *testing.T, ix dedupindex.Index, tk dedupindex.Ticket, o dedupindex.Original) {
	t.Helper()
	if err := ix.Commit(context.Background(), tk, o); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func lookup(t *testing.T, ix dedupindex.Index, k dedupindex.Key) (dedupindex.Original, bool) {
	t.Helper()
	o, ok, err := ix.Lookup(context.Background(), k)
	if err != nil {
		t.Fatalf("Lookup(%v): %v", k, err)
	}
	return o, ok
}

func stats(t *testing.T, ix dedupindex.Index) dedupindex.Stats {
	t.Helper()
	st, err := ix.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

func testClaimCommitLookup(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	k := key("s", "hello")
	r := claim(t, ix, k, dedupindex.Claimed)
	if r.Ticket.Token == "" {
		t.Fatal("Claimed without a ticket token")
	}
	if _, ok := lookup(t, ix, k); ok {
		t.Fatal("Lookup found a pending claim")
	}
	claim(t, ix, k, dedupindex.Pending)
	if st := stats(t, ix); st.Pending != 1 || st.Originals != 0 {
		t.Fatalf("stats while pending = %+v", st)
	}
	o := Original("hello", "http://example.com/", t0.Add(123456789))
	o.RecordID = "<urn:uuid:6c6f5a66-1f5e-4c55-9a3e-3f7f1b5a1c2d>"
	commit(t, ix, r.Ticket, o)
	got, ok := lookup(t, ix, k)
	if !ok {
		t.Fatal("Lookup after Commit: not found")
	}
	same(t, k, got, o)
	d := claim(t, ix, k, dedupindex.Duplicate)
	same(t, k, d.Original, o)
	if st := stats(t, ix); st.Pending != 0 || st.Originals != 1 || st.Scopes["s"] != 1 {
		t.Fatalf("stats after commit = %+v", st)
	}

	// Optional fields may be empty and non-UUID record ids round-trip.
	k2 := key("s", "minimal")
	r2 := claim(t, ix, k2, dedupindex.Claimed)
	o2 := dedupindex.Original{TargetURI: "dns:example.com", Date: t0, RecordID: "<urn:ID:Heritrix/1>"}
	if opts.CommitNeedsLocation {
		if err := ix.Commit(context.Background(), r2.Ticket, o2); err == nil {
			t.Fatal("Commit accepted an original without a file")
		}
		if _, ok := lookup(t, ix, k2); ok {
			t.Fatal("an original without a file was committed")
		}
		// Whether the claim survived the rejection is up to the backend.
		_ = ix.Cancel(context.Background(), r2.Ticket)
		r2 = claim(t, ix, k2, dedupindex.Claimed)
		o2.File = "x.warc.gz"
	}
	commit(t, ix, r2.Ticket, o2)
	got2, _ := lookup(t, ix, k2)
	same(t, k2, got2, o2)
	// Put seeds originals from indexes that may lack locations.
	k3 := key("s", "seeded-minimal")
	o3 := dedupindex.Original{TargetURI: "dns:example.org", Date: t0}
	if added, err := ix.Put(context.Background(), k3, o3); err != nil || !added {
		t.Fatalf("Put of a minimal original = %v, %v", added, err)
	}
	got3, _ := lookup(t, ix, k3)
	same(t, k3, got3, o3)
}

func testDigestEncodings(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	d := digest.Of(digest.SHA1, []byte("payload"))
	r := claim(t, ix, dedupindex.Key{Scope: "s", Digest: "sha1:" + d.Hex()}, dedupindex.Claimed)
	o := Original("payload", "http://example.com/a", t0)
	o.Digest = "SHA-1:" + d.Base32()
	commit(t, ix, r.Ticket, o)
	for _, enc := range []string{d.String(), d.Base32(), "sha1:" + d.Hex(), "sha-1:" + d.Base32(), d.Hex()} {
		got := claim(t, ix, dedupindex.Key{Scope: "s", Digest: enc}, dedupindex.Duplicate)
		if got.Original.Digest != d.String() {
			t.Fatalf("Claim(%s): original digest %q, want canonical %q", enc, got.Original.Digest, d.String())
		}
	}
	// Another algorithm with the same bytes length is a different key.
	s256 := digest.Of(digest.SHA256, []byte("payload"))
	claim(t, ix, dedupindex.Key{Scope: "s", Digest: "sha256:" + s256.Hex()}, dedupindex.Claimed)
}

func testCancelAndTickets(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	k := key("s", "x")
	r := claim(t, ix, k, dedupindex.Claimed)
	if err := ix.Cancel(ctx, r.Ticket); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if err := ix.Cancel(ctx, r.Ticket); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("second Cancel = %v, want ErrNoClaim", err)
	}
	if err := ix.Commit(ctx, r.Ticket, Original("x", "http://e/", t0)); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("Commit after Cancel = %v, want ErrNoClaim", err)
	}
	if _, ok := lookup(t, ix, k); ok {
		t.Fatal("a cancelled claim was committed")
	}
	r2 := claim(t, ix, k, dedupindex.Claimed)
	if r2.Ticket.Token == r.Ticket.Token {
		t.Fatal("a new claim reused a ticket token")
	}
	// The old ticket cannot commit or cancel the new claim.
	if err := ix.Commit(ctx, r.Ticket, Original("x", "http://e/", t0)); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("Commit with the old ticket = %v, want ErrNoClaim", err)
	}
	if err := ix.Cancel(ctx, r.Ticket); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("Cancel with the old ticket = %v, want ErrNoClaim", err)
	}
	commit(t, ix, r2.Ticket, Original("x", "http://e/", t0))
	if err := ix.Commit(ctx, r2.Ticket, Original("x", "http://e/", t0)); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("second Commit = %v, want ErrNoClaim", err)
	}
	if err := ix.Cancel(ctx, r2.Ticket); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("Cancel after Commit = %v, want ErrNoClaim", err)
	}
	bad := r2.Ticket
	bad.Token = "garbage"
	if err := ix.Cancel(ctx, bad); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("Cancel with a garbage token = %v, want ErrNoClaim", err)
	}
	// A ticket is bound to its key.
	r3 := claim(t, ix, key("s", "y"), dedupindex.Claimed)
	moved := r3.Ticket
	moved.Key = key("s", "z")
	if err := ix.Commit(ctx, moved, Original("z", "http://e/z", t0)); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("Commit with a ticket moved to another key = %v, want ErrNoClaim", err)
	}
}

func testConcurrentClaimsOneKey(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	k := key("s", "contended")
	const n = 64
	results := make([]dedupindex.ClaimResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := ix.Claim(context.Background(), k)
			if err != nil {
				t.Errorf("Claim: %v", err)
			}
			results[i] = r
		}()
	}
	close(start)
	wg.Wait()
	var winner *dedupindex.ClaimResult
	for i := range results {
		switch results[i].State {
		case dedupindex.Claimed:
			if winner != nil {
				t.Fatal("two concurrent Claims of one key both got Claimed")
			}
			winner = &results[i]
		case dedupindex.Pending:
		default:
			t.Fatalf("concurrent Claim got %v", results[i].State)
		}
	}
	if winner == nil {
		t.Fatal("no concurrent Claim got Claimed")
	}
	o := Original("contended", "http://example.com/c", t0)
	commit(t, ix, winner.Ticket, o)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := ix.Claim(context.Background(), k)
			if err != nil || r.State != dedupindex.Duplicate || r.Original.RecordID != o.RecordID {
				t.Errorf("Claim after Commit = %v, %v; want Duplicate of %s", r.State, err, o.RecordID)
			}
		}()
	}
	wg.Wait()
}

func testConcurrentClaimsManyKeys(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	const workers, keys = 8, 100
	var mu sync.Mutex
	claimedBy := map[int][]string{} // key → record ids of its claimers
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, i := range rand.Perm(keys) {
				k := key("s", fmt.Sprint("k", i))
				r, err := ix.Claim(context.Background(), k)
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				if r.State != dedupindex.Claimed {
					continue
				}
				o := Original(fmt.Sprint("k", i), fmt.Sprintf("http://e/%d", i), t0)
				o.RecordID = fmt.Sprintf("<urn:wayside:w%d-k%d>", w, i)
				if err := ix.Commit(context.Background(), r.Ticket, o); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
				mu.Lock()
				claimedBy[i] = append(claimedBy[i], o.RecordID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := range keys {
		if len(claimedBy[i]) != 1 {
			t.Fatalf("key %d claimed %d times: %v", i, len(claimedBy[i]), claimedBy[i])
		}
		o, ok := lookup(t, ix, key("s", fmt.Sprint("k", i)))
		if !ok || o.RecordID != claimedBy[i][0] {
			t.Fatalf("key %d: stored %q (found %v), committed %q", i, o.RecordID, ok, claimedBy[i][0])
		}
	}
	if st := stats(t, ix); st.Originals != keys || st.Pending != 0 {
		t.Fatalf("stats = %+v, want %d originals", st, keys)
	}
}

func testPutFirstWins(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	k := key("s", "seed")
	a := Original("seed", "http://e/a", t0)
	b := Original("seed", "http://e/b", t0.Add(time.Hour))
	if added, err := ix.Put(ctx, k, a); err != nil || !added {
		t.Fatalf("Put a = %v, %v", added, err)
	}
	if added, err := ix.Put(ctx, k, b); err != nil || added {
		t.Fatalf("Put b over a = %v, %v; want false", added, err)
	}
	got, _ := lookup(t, ix, k)
	same(t, k, got, a)
	claim(t, ix, k, dedupindex.Duplicate)
	if st := stats(t, ix); st.Originals != 1 {
		t.Fatalf("stats = %+v", st)
	}
	// Put never overwrites a committed original either.
	k2 := key("s", "committed")
	r := claim(t, ix, k2, dedupindex.Claimed)
	c := Original("committed", "http://e/c", t0)
	commit(t, ix, r.Ticket, c)
	if added, err := ix.Put(ctx, k2, Original("committed", "http://e/d", t0)); err != nil || added {
		t.Fatalf("Put over a committed original = %v, %v", added, err)
	}
	got, _ = lookup(t, ix, k2)
	same(t, k2, got, c)
}

func testPutWhilePending(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	k := key("s", "race")
	r := claim(t, ix, k, dedupindex.Claimed)
	seeded := Original("race", "http://e/seeded", t0)
	type res struct {
		added bool
		err   error
	}
	done := make(chan res, 1)
	go func() {
		added, err := ix.Put(ctx, k, seeded)
		done <- res{added, err}
	}()
	committed := Original("race", "http://e/committed", t0)
	if err := ix.Commit(ctx, r.Ticket, committed); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	p := <-done
	if p.err != nil {
		t.Fatalf("Put: %v", p.err)
	}
	got, _ := lookup(t, ix, k)
	want := committed
	if p.added {
		want = seeded
	}
	same(t, k, got, want)
	if st := stats(t, ix); st.Originals != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func testPutBatch(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	b, ok := ix.(dedupindex.Batcher)
	if !ok {
		t.Log("indextest: backend does not implement dedupindex.Batcher; nothing to test")
		return
	}
	if _, err := ix.Put(ctx, key("s", "old"), Original("old", "http://e/old", t0)); err != nil {
		t.Fatal(err)
	}
	entries := []dedupindex.Entry{
		{Key: key("s", "a"), Original: Original("a", "http://e/a1", t0)},
		{Key: key("s", "old"), Original: Original("old", "http://e/old2", t0)},
		{Key: key("s", "a"), Original: Original("a", "http://e/a2", t0)},
		{Key: key("t", "a"), Original: Original("a", "http://e/a3", t0)},
	}
	added, err := b.PutBatch(ctx, entries)
	if err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	if want := []bool{true, false, false, true}; fmt.Sprint(added) != fmt.Sprint(want) {
		t.Fatalf("PutBatch added = %v, want %v", added, want)
	}
	got, _ := lookup(t, ix, key("s", "a"))
	same(t, key("s", "a"), got, entries[0].Original)
	if st := stats(t, ix); st.Originals != 3 || st.Scopes["s"] != 2 || st.Scopes["t"] != 1 {
		t.Fatalf("stats = %+v", st)
	}
	// An invalid entry fails the batch before anything is written.
	badBatch := []dedupindex.Entry{
		{Key: key("s", "new"), Original: Original("new", "http://e/new", t0)},
		{Key: key("s", "bad"), Original: dedupindex.Original{TargetURI: "http://e/bad"}},
	}
	if _, err := b.PutBatch(ctx, badBatch); err == nil {
		t.Fatal("PutBatch with an undated original succeeded")
	}
	if _, ok := lookup(t, ix, key("s", "new")); ok {
		t.Fatal("a failed PutBatch stored part of the batch")
	}
}

func testScopes(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	r := claim(t, ix, key("crawl-2024", "p"), dedupindex.Claimed)
	commit(t, ix, r.Ticket, Original("p", "http://e/p", t0))
	claim(t, ix, key("crawl-2025", "p"), dedupindex.Claimed)
	if _, ok := lookup(t, ix, key("crawl-2025", "p")); ok {
		t.Fatal("an original leaked into another scope")
	}
	claim(t, ix, key("crawl-2024", "p"), dedupindex.Duplicate)
	st := stats(t, ix)
	if st.Scopes["crawl-2024"] != 1 || st.Scopes["crawl-2025"] != 0 || st.Originals != 1 || st.Pending != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func testSameURLKeys(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	u1 := dedupindex.URLKey("http://example.com/one")
	u2 := dedupindex.URLKey("http://example.com/two")
	k1 := dedupindex.Key{Scope: "s", Digest: Digest("same"), URL: u1}
	r := claim(t, ix, k1, dedupindex.Claimed)
	commit(t, ix, r.Ticket, Original("same", "http://example.com/one", t0))
	claim(t, ix, k1, dedupindex.Duplicate)
	r2 := claim(t, ix, dedupindex.Key{Scope: "s", Digest: Digest("same"), URL: u2}, dedupindex.Claimed)
	commit(t, ix, r2.Ticket, Original("same", "http://example.com/two", t0.Add(time.Hour)))
	claim(t, ix, key("s", "same"), dedupindex.Claimed)
	// The by-URL index tells the two originals of one digest apart.
	for _, uri := range []string{"http://example.com/one", "http://example.com/two"} {
		got, err := ix.ByURL(context.Background(), "s", dedupindex.URLKey(uri))
		if errors.Is(err, dedupindex.ErrNoURLIndex) {
			return
		}
		if err != nil || len(got) != 1 || got[0].TargetURI != uri {
			t.Fatalf("ByURL(%s) = %+v, %v; want its one original", uri, got, err)
		}
	}
}

func testByURL(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	uri := "http://example.com/page"
	dates := []time.Time{t0.Add(48 * time.Hour), t0, t0.Add(24 * time.Hour)}
	for i, d := range dates {
		p := fmt.Sprint("version", i)
		r := claim(t, ix, key("s", p), dedupindex.Claimed)
		commit(t, ix, r.Ticket, Original(p, uri, d))
	}
	if _, err := ix.Put(ctx, key("s", "other"), Original("other", "http://example.com/other", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Put(ctx, key("u", "version9"), Original("version9", uri, t0)); err != nil {
		t.Fatal(err)
	}
	got, err := ix.ByURL(ctx, "s", dedupindex.URLKey(uri))
	if errors.Is(err, dedupindex.ErrNoURLIndex) {
		t.Log("indextest: backend keeps no by-URL index")
		return
	}
	if err != nil {
		t.Fatalf("ByURL: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("ByURL returned %d originals, want 3: %+v", len(got), got)
	}
	for i, want := range []string{"version1", "version2", "version0"} {
		if got[i].Digest != Digest(want) || got[i].TargetURI != uri {
			t.Fatalf("ByURL[%d] = %s %s, want %s (oldest first)", i, got[i].Digest, got[i].Date, want)
		}
	}
	if got, err := ix.ByURL(ctx, "s", dedupindex.URLKey("http://example.com/none")); err != nil || len(got) != 0 {
		t.Fatalf("ByURL(unknown) = %v, %v", got, err)
	}
	if got, err := ix.ByURL(ctx, "nope", dedupindex.URLKey(uri)); err != nil || len(got) != 0 {
		t.Fatalf("ByURL(unknown scope) = %v, %v", got, err)
	}
	if got, err := ix.ByURL(ctx, "u", dedupindex.URLKey(uri)); err != nil || len(got) != 1 {
		t.Fatalf("ByURL(scope u) = %v, %v", got, err)
	}
}

func testTicketJSON(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	r := claim(t, ix, dedupindex.Key{Scope: "s", Digest: Digest("j"), URL: dedupindex.URLKey("http://e/j")}, dedupindex.Claimed)
	b, err := json.Marshal(r.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	var tk dedupindex.Ticket
	if err := json.Unmarshal(b, &tk); err != nil {
		t.Fatal(err)
	}
	commit(t, ix, tk, Original("j", "http://e/j", t0))
	claim(t, ix, r.Ticket.Key, dedupindex.Duplicate)
}

func testReopen(t *testing.T, open Opener, opts Options) {
	ix, err := open()
	if err != nil {
		t.Fatal(err)
	}
	k := key("s", "durable")
	r := claim(t, ix, k, dedupindex.Claimed)
	o := Original("durable", "http://e/d", t0)
	commit(t, ix, r.Ticket, o)
	pend := claim(t, ix, key("s", "pending"), dedupindex.Claimed)
	_ = pend
	if err := ix.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ix2 := openIndex(t, open)
	got, ok := lookup(t, ix2, k)
	if !ok {
		t.Fatal("a committed original did not survive reopening")
	}
	same(t, k, got, o)
	// The pending claim did not outlive the index that held it.
	claim(t, ix2, key("s", "pending"), dedupindex.Claimed)
	if st := stats(t, ix2); st.Originals != 1 || st.Scopes["s"] != 1 {
		t.Fatalf("stats after reopen = %+v", st)
	}
	if got, err := ix2.ByURL(context.Background(), "s", dedupindex.URLKey("http://e/d")); !errors.Is(err, dedupindex.ErrNoURLIndex) && (err != nil || len(got) != 1) {
		t.Fatalf("ByURL after reopen = %v, %v", got, err)
	}
}

func testStaleTicket(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix, err := open()
	if err != nil {
		t.Fatal(err)
	}
	free := claim(t, ix, key("s", "free"), dedupindex.Claimed)
	taken := claim(t, ix, key("s", "taken"), dedupindex.Claimed)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix2 := openIndex(t, open)
	// Someone else committed "taken" after the restart.
	r := claim(t, ix2, key("s", "taken"), dedupindex.Claimed)
	first := Original("taken", "http://e/first", t0)
	commit(t, ix2, r.Ticket, first)
	// The claimers from before the restart made their records durable and
	// commit now: a free slot gets the original, a taken one keeps the first.
	fo := Original("free", "http://e/free", t0)
	if err := ix2.Commit(ctx, free.Ticket, fo); err != nil {
		t.Fatalf("Commit of a ticket lost to a restart: %v", err)
	}
	if err := ix2.Commit(ctx, taken.Ticket, Original("taken", "http://e/second", t0)); err != nil {
		t.Fatalf("Commit of a ticket lost to a restart (slot taken): %v", err)
	}
	got, ok := lookup(t, ix2, key("s", "free"))
	if !ok {
		t.Fatal("a durable original committed with a stale ticket was not indexed")
	}
	same(t, key("s", "free"), got, fo)
	got, _ = lookup(t, ix2, key("s", "taken"))
	same(t, key("s", "taken"), got, first)
	if err := ix2.Cancel(ctx, free.Ticket); !errors.Is(err, dedupindex.ErrNoClaim) {
		t.Fatalf("Cancel of a stale ticket = %v, want ErrNoClaim", err)
	}
}

func testInvalidInput(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	if _, err := ix.Claim(ctx, dedupindex.Key{Scope: "s", Digest: "sha1:nonsense"}); err == nil {
		t.Fatal("Claim accepted an invalid digest")
	}
	if _, err := ix.Claim(ctx, dedupindex.Key{Digest: Digest("x")}); err == nil {
		t.Fatal("Claim accepted an empty scope")
	}
	k := key("s", "v")
	for name, o := range map[string]dedupindex.Original{
		"other digest":   Original("not v", "http://e/v", t0),
		"no target URI":  {Date: t0},
		"no date":        {TargetURI: "http://e/v"},
		"negative":       {TargetURI: "http://e/v", Date: t0, Offset: -1},
		"bad status":     {TargetURI: "http://e/v", Date: t0, Status: 42},
		"ancient date":   {TargetURI: "http://e/v", Date: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)},
		"invalid digest": {Digest: "md5:zz", TargetURI: "http://e/v", Date: t0},
	} {
		r := claim(t, ix, k, dedupindex.Claimed)
		if err := ix.Commit(ctx, r.Ticket, o); err == nil {
			t.Fatalf("Commit accepted an original with %s", name)
		}
		if _, err := ix.Put(ctx, k, o); err == nil {
			t.Fatalf("Put accepted an original with %s", name)
		}
		if _, ok := lookup(t, ix, k); ok {
			t.Fatalf("an original with %s was stored", name)
		}
		// Whether the claim survived the failed Commit is up to the
		// backend; make sure the slot is free for the next round.
		_ = ix.Cancel(ctx, r.Ticket)
	}
}

func testClosed(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix, err := open()
	if err != nil {
		t.Fatal(err)
	}
	r := claim(t, ix, key("s", "c"), dedupindex.Claimed)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Claim(ctx, key("s", "c")); !errors.Is(err, dedupindex.ErrClosed) {
		t.Fatalf("Claim after Close = %v, want ErrClosed", err)
	}
	if _, _, err := ix.Lookup(ctx, key("s", "c")); !errors.Is(err, dedupindex.ErrClosed) {
		t.Fatalf("Lookup after Close = %v, want ErrClosed", err)
	}
	if err := ix.Commit(ctx, r.Ticket, Original("c", "http://e/c", t0)); !errors.Is(err, dedupindex.ErrClosed) {
		t.Fatalf("Commit after Close = %v, want ErrClosed", err)
	}
	if _, err := ix.Put(ctx, key("s", "c"), Original("c", "http://e/c", t0)); !errors.Is(err, dedupindex.ErrClosed) {
		t.Fatalf("Put after Close = %v, want ErrClosed", err)
	}
}

func testClaimNewer(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	wc, ok := ix.(dedupindex.WindowClaimer)
	if !ok {
		t.Log("indextest: backend does not implement dedupindex.WindowClaimer; nothing to test")
		return
	}
	uri := "http://example.com/window"
	k := key("s", "w")
	old := Original("w", uri, t0)
	if _, err := ix.Put(ctx, k, old); err != nil {
		t.Fatal(err)
	}
	r, err := wc.ClaimNewer(ctx, k, t0)
	if err != nil || r.State != dedupindex.Duplicate {
		t.Fatalf("ClaimNewer(notBefore = original date) = %v, %v; want Duplicate", r.State, err)
	}
	r, err = wc.ClaimNewer(ctx, k, t0.Add(time.Hour))
	if err != nil || r.State != dedupindex.Claimed {
		t.Fatalf("ClaimNewer(notBefore after original) = %v, %v; want Claimed", r.State, err)
	}
	// Until the replacement is committed, another ClaimNewer with the
	// window sees the pending claim; a plain Claim may be answered with
	// the old original instead, which is still committed and durable.
	if r2, err := wc.ClaimNewer(ctx, k, t0.Add(time.Hour)); err != nil || r2.State != dedupindex.Pending {
		t.Fatalf("second ClaimNewer while the replacement is pending = %v, %v; want Pending", r2.State, err)
	}
	if r2, err := ix.Claim(ctx, k); err != nil || r2.State == dedupindex.Claimed {
		t.Fatalf("Claim while the replacement is pending = %v, %v; want Pending or the old original", r2.State, err)
	} else if r2.State == dedupindex.Duplicate {
		same(t, k, r2.Original, old)
	}
	newer := Original("w", uri, t0.Add(2*time.Hour))
	commit(t, ix, r.Ticket, newer)
	got, _ := lookup(t, ix, k)
	same(t, k, got, newer)
	byURL, err := ix.ByURL(ctx, "s", dedupindex.URLKey(uri))
	if errors.Is(err, dedupindex.ErrNoURLIndex) {
		byURL, err = []dedupindex.Original{got}, nil
	}
	if err != nil || len(byURL) != 1 || !byURL[0].Date.Equal(newer.Date) {
		t.Fatalf("ByURL after replacement = %+v, %v; want only the newer original", byURL, err)
	}
	if st := stats(t, ix); st.Originals != 1 {
		t.Fatalf("stats after replacement = %+v", st)
	}
}

func testCanceledContext(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Claim(ctx, key("s", "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim with a cancelled context = %v", err)
	}
	if _, err := ix.Put(ctx, key("s", "x"), Original("x", "http://e/x", t0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context = %v", err)
	}
	if _, ok := lookup(t, ix, key("s", "x")); ok {
		t.Fatal("Put with a cancelled context stored an original")
	}
}

// testCloseWhileBusy closes the index while goroutines claim, commit and
// put: every call returns (nil or ErrClosed), none hangs or panics.
func testCloseWhileBusy(t *testing.T, open Opener, opts Options) {
	ix, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				p := fmt.Sprintf("busy-%d", i%5) // shared keys: claims contend
				k := key("s", p)
				var err error
				if w%2 == 0 {
					_, err = ix.Put(ctx, k, Original(p, "http://e/"+p, t0))
				} else {
					var r dedupindex.ClaimResult
					r, err = ix.Claim(ctx, k)
					if err == nil && r.State == dedupindex.Claimed {
						err = ix.Commit(ctx, r.Ticket, Original(p, "http://e/"+p, t0))
					}
				}
				if err != nil {
					if !errors.Is(err, dedupindex.ErrClosed) {
						errc <- err
					}
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := ix.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("calls still running 30s after Close")
	}
	close(errc)
	for err := range errc {
		t.Errorf("call during Close: %v", err)
	}
	ix2 := openIndex(t, open)
	if st := stats(t, ix2); st.Originals > 5 || st.Pending != 0 {
		t.Fatalf("after reopening: %+v", st)
	}
}
