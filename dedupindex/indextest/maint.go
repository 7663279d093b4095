package indextest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/dedupindex"
)

// maintFixture is the collection the maintenance tests select from:
// 24 originals in two scopes, three WARC files, two hosts, a day apart each, plus one same-URL key.
type maintFixture struct {
	entries []dedupindex.Entry
}

func newMaintFixture() maintFixture {
	var f maintFixture
	files := []string{"A-00001.warc.gz", "B-00002.warc.gz", "C-00003.warc.gz"}
	for i := range 24 {
		scope := "s"
		if i%4 == 3 {
			scope = "t"
		}
		host := "http://one.example/"
		if i%2 == 1 {
			host = "https://two.example/"
		}
		p := fmt.Sprint("maint-", i)
		o := Original(p, fmt.Sprintf("%spage/%d", host, i), t0.Add(time.Duration(i)*24*time.Hour))
		o.File = files[i%3]
		o.Offset = int64(1000 * i)
		o.RecordID = fmt.Sprintf("<urn:uuid:%08d-1111-4222-8333-444455556666>", i)
		f.entries = append(f.entries, dedupindex.Entry{Key: key(scope, p), Original: o})
	}
	o := Original("maint-url", "http://one.example/same", t0)
	o.File = files[0]
	o.RecordID = "<urn:uuid:99999999-1111-4222-8333-444455556666>"
	f.entries = append(f.entries, dedupindex.Entry{
		Key:      dedupindex.Key{Scope: "s", Digest: Digest("maint-url"), URL: dedupindex.URLKey(o.TargetURI)},
		Original: o,
	})
	return f
}

// want lists the record ids of the fixture's entries sel matches.
func (f maintFixture) want(sel dedupindex.Selector) []string {
	var ids []string
	for _, e := range f.entries {
		if sel.Match(e.Key.Scope, e.Original) {
			ids = append(ids, e.Original.RecordID)
		}
	}
	sort.Strings(ids)
	return ids
}

func maintainer(t *testing.T, ix dedupindex.Index) dedupindex.Maintainer {
	t.Helper()
	m, err := dedupindex.AsMaintainer(ix)
	if err != nil {
		t.Fatalf("every backend must support maintenance: %v", err)
	}
	return m
}

func seed(t *testing.T, ix dedupindex.Index, f maintFixture) {
	t.Helper()
	for _, e := range f.entries {
		if added, err := ix.Put(context.Background(), e.Key, e.Original); err != nil || !added {
			t.Fatalf("Put(%v) = %v, %v", e.Key, added, err)
		}
	}
}

func scanIDs(t *testing.T, m dedupindex.Maintainer, sel dedupindex.Selector) []string {
	t.Helper()
	var ids []string
	err := m.Scan(context.Background(), sel, func(e dedupindex.Entry) error {
		if e.Key.Digest != e.Original.Digest {
			return fmt.Errorf("entry key digest %s, original digest %s", e.Key.Digest, e.Original.Digest)
		}
		ids = append(ids, e.Original.RecordID)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%+v): %v", sel, err)
	}
	sort.Strings(ids)
	return ids
}

func sameIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: got %d %v, want %d %v", what, len(got), got, len(want), want)
	}
}

// selectors are the ways `wayside index delete` selects originals.
func selectors() map[string]dedupindex.Selector {
	return map[string]dedupindex.Selector{
		"file":       {Files: []string{"B-00002.warc.gz"}},
		"files":      {Files: []string{"A-00001.warc.gz", "/data/warcs/C-00003.warc.gz"}},
		"scope":      {Scope: "t"},
		"url-prefix": {URLPrefix: "https://two.example/page/1"},
		"dates":      {From: t0.Add(5 * 24 * time.Hour), To: t0.Add(9 * 24 * time.Hour)},
		"combined":   {Scope: "s", URLPrefix: "http://one.example/", To: t0.Add(10 * 24 * time.Hour)},
	}
}

func testMaintScan(t *testing.T, open Opener, opts Options) {
	ix := openIndex(t, open)
	m := maintainer(t, ix)
	f := newMaintFixture()
	seed(t, ix, f)
	sameIDs(t, "Scan(all)", scanIDs(t, m, dedupindex.Selector{}), f.want(dedupindex.Selector{}))
	for name, sel := range selectors() {
		if len(f.want(sel)) == 0 {
			t.Fatalf("selector %s selects nothing in the fixture", name)
		}
		sameIDs(t, "Scan("+name+")", scanIDs(t, m, sel), f.want(sel))
	}
	sameIDs(t, "Scan(unknown scope)", scanIDs(t, m, dedupindex.Selector{Scope: "nope"}), nil)
	// A scan of the same-URL key gives back its key with the URL.
	err := m.Scan(context.Background(), dedupindex.Selector{URLPrefix: "http://one.example/same"}, func(e dedupindex.Entry) error {
		if e.Key.URL != dedupindex.URLKey("http://one.example/same") {
			return fmt.Errorf("same-URL key scanned as %+v", e.Key)
		}
		if _, ok := lookup(t, ix, e.Key); !ok {
			return fmt.Errorf("scanned key %+v does not look up", e.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func selectorNames() []string {
	var names []string
	for n := range selectors() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// testMaintDelete deletes by one selector and checks every original
// after: the selected ones are gone from Lookup, ByURL, Scan and the
// counts, the others unchanged.
func testMaintDelete(t *testing.T, open Opener, name string) {
	ctx := context.Background()
	sel := selectors()[name]
	ix := openIndex(t, open)
	m := maintainer(t, ix)
	f := newMaintFixture()
	seed(t, ix, f)
	want := f.want(sel)
	n, err := m.Delete(ctx, sel)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n != int64(len(want)) {
		t.Fatalf("Delete removed %d, want %d", n, len(want))
	}
	gone := map[string]bool{}
	for _, id := range want {
		gone[id] = true
	}
	for _, e := range f.entries {
		_, ok := lookup(t, ix, e.Key)
		if ok == gone[e.Original.RecordID] {
			t.Fatalf("after Delete(%s): Lookup(%v) found=%v, deleted=%v", name, e.Key, ok, gone[e.Original.RecordID])
		}
		byURL, err := ix.ByURL(ctx, e.Key.Scope, dedupindex.URLKey(e.Original.TargetURI))
		if errors.Is(err, dedupindex.ErrNoURLIndex) {
			continue
		}
		if err != nil {
			t.Fatalf("ByURL after delete: %v", err)
		}
		has := false
		for _, o := range byURL {
			has = has || o.RecordID == e.Original.RecordID
		}
		if has == gone[e.Original.RecordID] {
			t.Fatalf("after Delete(%s): ByURL(%s) lists %s=%v", name, e.Original.TargetURI, e.Original.RecordID, has)
		}
	}
	st := stats(t, ix)
	if st.Originals != int64(len(f.entries)-len(want)) {
		t.Fatalf("Stats.Originals = %d after deleting %d of %d", st.Originals, len(want), len(f.entries))
	}
	sameIDs(t, "Scan after delete", scanIDs(t, m, sel), nil)
	if n, err := m.Delete(ctx, sel); err != nil || n != 0 {
		t.Fatalf("second Delete = %d, %v; want 0", n, err)
	}
	// A deleted key can be claimed and committed again.
	for _, e := range f.entries {
		if !gone[e.Original.RecordID] {
			continue
		}
		r := claim(t, ix, e.Key, dedupindex.Claimed)
		commit(t, ix, r.Ticket, e.Original)
		break
	}
}

func testMaintDeleteRefusesEmpty(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	m := maintainer(t, ix)
	seed(t, ix, newMaintFixture())
	if _, err := m.Delete(ctx, dedupindex.Selector{}); !errors.Is(err, dedupindex.ErrEmptySelector) {
		t.Fatalf("Delete(zero selector) = %v, want ErrEmptySelector", err)
	}
	if st := stats(t, ix); st.Originals != int64(len(newMaintFixture().entries)) {
		t.Fatalf("refused delete changed the index: %d originals", st.Originals)
	}
}

func testMaintDeleteKeepsPending(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	m := maintainer(t, ix)
	k := key("s", "maint-pending")
	r := claim(t, ix, k, dedupindex.Claimed)
	if _, err := m.Delete(ctx, dedupindex.Selector{Scope: "s"}); err != nil {
		t.Fatal(err)
	}
	o := Original("maint-pending", "http://one.example/p", t0)
	if opts.CommitNeedsLocation && o.File == "" {
		t.Fatal("fixture original has no file")
	}
	commit(t, ix, r.Ticket, o)
	if _, ok := lookup(t, ix, k); !ok {
		t.Fatal("a claim pending during Delete did not commit")
	}
}

func testMaintUpdate(t *testing.T, open Opener, opts Options) {
	ctx := context.Background()
	ix := openIndex(t, open)
	m := maintainer(t, ix)
	f := newMaintFixture()
	seed(t, ix, f)
	var moves []dedupindex.Move
	moved := map[dedupindex.Key]dedupindex.Original{}
	for i, e := range f.entries[:6] {
		to := e.Original
		to.Offset += 7
		to.Length -= 3
		if i == 5 {
			// The original became a revisit: the key now points at the
			// record it refers to, another URL and record.
			to = Original("maint-5", "https://three.example/else", t0.Add(-time.Hour))
			to.Digest = e.Key.Digest
			to.RecordID = "<urn:uuid:55555555-1111-4222-8333-444455556666>"
		}
		moves = append(moves, dedupindex.Move{Key: e.Key, From: e.Original.RecordID, To: to})
		moved[e.Key] = to
	}
	// A stale move (the key's original has another record id) is skipped.
	stale := f.entries[7]
	moves = append(moves, dedupindex.Move{Key: stale.Key, From: "<urn:uuid:00000000-0000-4000-8000-000000000000>", To: stale.Original})
	moves = append(moves, dedupindex.Move{Key: key("s", "maint-absent"), From: "x", To: Original("maint-absent", "http://a/", t0)})
	n, err := m.Update(ctx, moves)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if n != 6 {
		t.Fatalf("Update replaced %d, want 6", n)
	}
	for _, e := range f.entries {
		got, ok := lookup(t, ix, e.Key)
		if !ok {
			t.Fatalf("Lookup(%v) after Update: missing", e.Key)
		}
		want := e.Original
		if to, ok := moved[e.Key]; ok {
			want = to
		}
		same(t, e.Key, got, want)
	}
	if _, ok := lookup(t, ix, key("s", "maint-absent")); ok {
		t.Fatal("Update added an original for a key that had none")
	}
	if st := stats(t, ix); st.Originals != int64(len(f.entries)) {
		t.Fatalf("Update changed the count: %d", st.Originals)
	}
	byURL, err := ix.ByURL(ctx, "s", dedupindex.URLKey("https://three.example/else"))
	if err == nil && (len(byURL) != 1 || byURL[0].RecordID != moved[f.entries[5].Key].RecordID) {
		t.Fatalf("ByURL of the moved original's new URL = %+v", byURL)
	}
	if err == nil {
		old, err := ix.ByURL(ctx, f.entries[5].Key.Scope, dedupindex.URLKey(f.entries[5].Original.TargetURI))
		if err != nil || len(old) != 0 {
			t.Fatalf("ByURL of the moved original's old URL = %+v, %v", old, err)
		}
	}
}
