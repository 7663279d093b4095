package captureindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// openTest opens an index in a temporary directory and checks its
// invariants when the test ends.
func openTest(t testing.TB, opts ...Option) *Index {
	t.Helper()
	ix, err := Open(filepath.Join(t.TempDir(), "ci"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Check(context.Background()); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Check: %v", err)
		}
		ix.Close()
	})
	return ix
}

// readCaptures returns the captures of a WARC file, as producers make them.
func readCaptures(t testing.TB, path string) []wayside.Capture {
	t.Helper()
	r, err := warcio.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []wayside.Capture
	for {
		rec, err := r.Next()
		if err == io.EOF || errors.Is(err, warcio.ErrTruncated) {
			return out
		}
		if errors.Is(err, warcio.ErrCorrupt) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, rec.Capture(filepath.Base(path)))
	}
}

// lineOf is the CDXJ line of a capture.
func lineOf(c wayside.Capture) string {
	l := cdxj.FromCapture(c)
	return l.String()
}

// TestCorpusRoundTrip indexes every capture of the real WARC corpus and
// reads the index back: each capture answers an exact query with the same
// CDXJ line `wayside cdxj` writes for it, and every revisit whose original
// is in the corpus is resolved to that original.
func TestCorpusRoundTrip(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t)
	var all []wayside.Capture
	for _, p := range testenv.CorpusWARCs(t) {
		cs := readCaptures(t, p)
		if _, err := ix.Add(ctx, cs...); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		all = append(all, cs...)
	}
	want := map[string]bool{}
	byLoc := map[string]wayside.Capture{}
	revisits := 0
	for _, c := range all {
		if Indexable(c) {
			want[lineOf(c)] = true
			byLoc[fmt.Sprintf("%s %d", c.File, c.Offset)] = c
			if c.IsRevisit() {
				revisits++
			}
		}
	}
	if len(want) < 250 || revisits < 100 {
		t.Fatalf("corpus gave %d captures, %d revisits: too few to test anything", len(want), revisits)
	}
	got := map[string]bool{}
	resolved := 0
	err := ix.Scan(ctx, Query{Key: "", End: "\xff"}, func(e *Entry) error {
		got[lineOf(e.Capture)] = true
		if e.Key != URLKey(e.URI) {
			t.Errorf("%s filed under %q", e.URI, e.Key)
		}
		if e.IsRevisit() && e.Original != nil {
			resolved++
			o, ok := byLoc[fmt.Sprintf("%s %d", e.Original.File, e.Original.Offset)]
			if !ok || o.IsRevisit() || canonicalDigest(o.Digest) != canonicalDigest(e.Digest) || o.Length != e.Original.Length {
				t.Errorf("revisit %s %s resolved to %+v, which is not an original with its digest", e.URI, e.Timestamp(), e.Original)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for l := range want {
		if !got[l] {
			t.Errorf("capture lost or changed: %s", l)
		}
	}
	for l := range got {
		if !want[l] {
			t.Errorf("index returned a line no capture has: %s", l)
		}
	}
	st, err := ix.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Scopes) != 1 || st.Scopes[0].Captures != int64(len(want)) || st.Scopes[0].Revisits != int64(revisits) ||
		st.Scopes[0].Revisits-st.Scopes[0].Unresolved != int64(resolved) {
		t.Errorf("stats %+v, want %d captures, %d revisits, %d resolved", st, len(want), revisits, resolved)
	}
	// pywb's recorder wrote the originals of pywb-dupes's revisits into
	// pywb-iana, which sorts (and so was added) after it: they were
	// resolved when their originals arrived. Every revisit of both files
	// resolves.
	for _, name := range []string{"pywb-dupes.warc.gz", "pywb-iana.warc.gz"} {
		for _, c := range all {
			if c.File != name || !c.IsRevisit() {
				continue
			}
			var e *Entry
			ix.Scan(ctx, Query{Key: URLKey(c.URI), From: c.Date, To: c.Date}, func(x *Entry) error {
				if x.File == c.File && x.Offset == c.Offset {
					e = x
				}
				return nil
			})
			if e == nil || e.Original == nil {
				t.Errorf("%s: revisit of %s at offset %d not resolved", name, c.URI, c.Offset)
			}
		}
	}
	// Adding the same captures again changes nothing.
	n, err := ix.Add(ctx, all...)
	if err != nil || n != 0 {
		t.Fatalf("re-add: %d new, %v", n, err)
	}
}

// capture builds a response capture of uri at t.
func capture(uri string, t time.Time, file string, off int64, body string) wayside.Capture {
	return wayside.Capture{URI: uri, Date: t, Type: "response", Status: 200, MIME: "text/html", File: file, Offset: off, Length: 100,
		Digest: digest.Of(digest.SHA1, []byte(body)).String(), PayloadLength: int64(len(body)), RecordID: fmt.Sprintf("<urn:x:%s:%d>", file, off)}
}

func revisit(uri string, t time.Time, file string, off int64, of wayside.Capture) wayside.Capture {
	c := capture(uri, t, file, off, "")
	c.Type, c.Digest, c.PayloadLength = "revisit", of.Digest, 0
	c.Profile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	c.RevisitOf = &wayside.Ref{RecordID: of.RecordID, TargetURI: of.URI, Date: of.Date}
	return c
}

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func timestamps(t *testing.T, ix *Index, fn func(func(*Entry) error) error) string {
	t.Helper()
	var out []string
	if err := fn(func(e *Entry) error { out = append(out, e.Timestamp()[8:]); return nil }); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

func TestQueries(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t)
	var cs []wayside.Capture
	for i, h := range []int{0, 1, 2, 5, 9} {
		cs = append(cs, capture("http://example.com/a", t0.Add(time.Duration(h)*time.Hour), "a.warc.gz", int64(i*100), fmt.Sprint(i)))
	}
	cs = append(cs,
		capture("http://example.com/ab", t0, "a.warc.gz", 1000, "ab"),
		capture("http://example.com/b/c", t0, "a.warc.gz", 1100, "bc"),
		capture("http://www.example.com/", t0, "a.warc.gz", 1200, "root"),
		capture("http://sub.example.com/x", t0, "a.warc.gz", 1300, "sub"),
		capture("http://example.org/", t0, "a.warc.gz", 1400, "org"),
	)
	if _, err := ix.Add(ctx, cs...); err != nil {
		t.Fatal(err)
	}
	a := URLKey("http://example.com/a")
	scan := func(q Query) func(func(*Entry) error) error {
		return func(fn func(*Entry) error) error { return ix.Scan(ctx, q, fn) }
	}
	closest := func(at time.Time) func(func(*Entry) error) error {
		return func(fn func(*Entry) error) error { return ix.Closest(ctx, "", a, at, fn) }
	}
	for _, tc := range []struct {
		name string
		fn   func(func(*Entry) error) error
		want string
	}{
		{"exact", scan(Query{Key: a}), "120000 130000 140000 170000 210000"},
		{"reverse", scan(Query{Key: a, Reverse: true}), "210000 170000 140000 130000 120000"},
		{"from-to", scan(Query{Key: a, From: t0.Add(time.Hour), To: t0.Add(5 * time.Hour)}), "130000 140000 170000"},
		{"from-to reverse", scan(Query{Key: a, From: t0.Add(90 * time.Minute), To: t0.Add(10 * time.Hour), Reverse: true}), "210000 170000 140000"},
		{"closest between", closest(t0.Add(3*time.Hour + 29*time.Minute)), "140000 170000 130000 120000 210000"},
		{"closest tie takes the earlier", closest(t0.Add(3*time.Hour + 30*time.Minute)), "140000 170000 130000 120000 210000"},
		{"closest before first", closest(t0.Add(-time.Hour)), "120000 130000 140000 170000 210000"},
		{"closest after last", closest(t0.Add(30 * time.Hour)), "210000 170000 140000 130000 120000"},
		{"closest exact, tie takes the earlier", closest(t0.Add(5 * time.Hour)), "170000 140000 130000 210000 120000"},
	} {
		if got := timestamps(t, ix, tc.fn); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	var times []string
	err := ix.Times(ctx, "", a, t0.Add(time.Hour), t0.Add(5*time.Hour), func(at time.Time) error {
		times = append(times, at.Format("150405"))
		return nil
	})
	if got := strings.Join(times, " "); err != nil || got != "130000 140000 170000" {
		t.Errorf("Times: %q %v", got, err)
	}
	keys := func(q Query) string {
		var out []string
		ix.Scan(ctx, q, func(e *Entry) error {
			if len(out) == 0 || out[len(out)-1] != e.Key {
				out = append(out, e.Key)
			}
			return nil
		})
		return strings.Join(out, " ")
	}
	// Ranges as pywb computes them (calc_search_range).
	if got := keys(Query{Key: "com,example)/a", End: "com,example)/b"}); got != "com,example)/a com,example)/ab" {
		t.Errorf("prefix: %q", got)
	}
	if got := keys(Query{Key: "com,example)/", End: "com,example*"}); got != "com,example)/ com,example)/a com,example)/ab com,example)/b/c" {
		t.Errorf("host: %q", got)
	}
	if got := keys(Query{Key: "com,example)/", End: "com,example-"}); got != "com,example)/ com,example)/a com,example)/ab com,example)/b/c com,example,sub)/x" {
		t.Errorf("domain: %q", got)
	}
	if got := keys(Query{Key: "com,example)/", End: "com,example-", From: t0.Add(time.Hour)}); got != "com,example)/a" {
		t.Errorf("domain from: %q", got)
	}
	// Stopping early.
	n := 0
	if err := ix.Scan(ctx, Query{Key: a}, func(*Entry) error { n++; return ErrStop }); err != nil || n != 1 {
		t.Errorf("ErrStop: %d calls, %v", n, err)
	}
	if err := ix.Scan(ctx, Query{Scope: "nope", Key: a}, func(*Entry) error { return nil }); !errors.Is(err, ErrNoScope) {
		t.Errorf("unknown scope: %v", err)
	}
}

// TestRevisitResolution covers the ways a revisit finds its original, and a
// revisit indexed before its original (resolved by Resync, and by Resolve
// at read time).
func TestRevisitResolution(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t)
	orig := capture("http://example.com/a", t0, "a.warc.gz", 0, "body")
	other := capture("http://example.com/other", t0, "a.warc.gz", 100, "body")
	old := capture("http://example.com/a", t0.Add(-24*time.Hour), "old.warc.gz", 0, "old body")
	old.Scope = "old"
	if _, err := ix.Add(ctx, orig, other, old); err != nil {
		t.Fatal(err)
	}
	refs := revisit("http://example.com/a", t0.Add(time.Hour), "b.warc.gz", 0, orig)
	urlAgnostic := revisit("http://example.com/copy", t0.Add(time.Hour), "b.warc.gz", 100, other)
	noRefs := revisit("http://example.com/a", t0.Add(2*time.Hour), "b.warc.gz", 200, orig)
	noRefs.RevisitOf = &wayside.Ref{}
	crossScope := revisit("http://example.com/a", t0.Add(time.Hour), "c.warc.gz", 0, old)
	crossScope.Scope = "new"
	lost := revisit("http://example.com/lost", t0.Add(time.Hour), "b.warc.gz", 300, capture("http://example.com/gone", t0, "x", 0, "gone"))
	if _, err := ix.Add(ctx, refs, urlAgnostic, noRefs, crossScope, lost); err != nil {
		t.Fatal(err)
	}
	find := func(c wayside.Capture) *Entry {
		var e *Entry
		ix.Scan(ctx, Query{Scope: c.Scope, Key: URLKey(c.URI), From: c.Date, To: c.Date}, func(x *Entry) error { e = x; return ErrStop })
		if e == nil {
			t.Fatalf("%s not found", c.URI)
		}
		return e
	}
	for _, tc := range []struct {
		name string
		c    wayside.Capture
		want *wayside.Capture
	}{
		{"refers-to target and date", refs, &orig},
		{"URL-agnostic with refers-to", urlAgnostic, &other},
		{"same URL without refers-to", noRefs, &orig},
		{"original in another collection", crossScope, &old},
		{"original not held", lost, nil},
	} {
		e := find(tc.c)
		switch {
		case tc.want == nil && e.Original != nil:
			t.Errorf("%s: resolved to %+v", tc.name, e.Original)
		case tc.want != nil && (e.Original == nil || e.Original.File != tc.want.File || e.Original.Offset != tc.want.Offset):
			t.Errorf("%s: resolved to %+v, want %s %d", tc.name, e.Original, tc.want.File, tc.want.Offset)
		}
	}
	// A revisit added before its original is resolved when the original
	// arrives under its own URL; one that refers to another URL is found
	// by Resolve at read time and for good by the next Resync.
	unres := func() (n int64) {
		st, _ := ix.Stats(ctx)
		for _, x := range st.Scopes {
			n += x.Unresolved
		}
		return n
	}
	late := capture("http://example.com/late", t0, "d.warc.gz", 0, "late")
	early := revisit("http://example.com/late", t0.Add(time.Hour), "d.warc.gz", 500, late)
	src := capture("http://example.com/src", t0, "d.warc.gz", 100, "src")
	copied := revisit("http://example.com/copied", t0.Add(time.Hour), "d.warc.gz", 600, src)
	if _, err := ix.Add(ctx, early, copied); err != nil {
		t.Fatal(err)
	}
	if e := find(early); e.Original != nil {
		t.Fatalf("resolved before its original was added: %+v", e.Original)
	}
	if n := unres(); n != 3 {
		t.Fatalf("%d unresolved, want 3", n)
	}
	if _, err := ix.Add(ctx, late, src); err != nil {
		t.Fatal(err)
	}
	if e := find(early); e.Original == nil || e.Original.File != "d.warc.gz" || e.Original.Offset != 0 {
		t.Fatalf("not resolved when its original arrived: %+v", e.Original)
	}
	if n := unres(); n != 2 {
		t.Fatalf("%d unresolved, want 2", n)
	}
	if e := find(copied); e.Original != nil {
		t.Fatalf("URL-agnostic revisit resolved without a search: %+v", e.Original)
	}
	if loc, err := ix.Resolve(ctx, find(copied)); err != nil || loc == nil || loc.Offset != 100 {
		t.Fatalf("Resolve: %+v %v", loc, err)
	}
	if err := ix.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if e := find(copied); e.Original == nil || e.Original.Offset != 100 {
		t.Fatalf("not resolved by Resync: %+v", e.Original)
	}
	if n := unres(); n != 1 {
		t.Errorf("%d unresolved after Resync, want 1 (the lost one)", n)
	}
}

// TestResync writes the corpus's CDXJ files as the crawler does, opens an
// index over them, catches up and finds every line; unchanged files are not read again,
// a grown one is, and bad lines are skipped.
func TestResync(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	want := map[string]bool{}
	for _, p := range testenv.CorpusWARCs(t)[:6] {
		var b strings.Builder
		for _, c := range readCaptures(t, p) {
			if Indexable(c) {
				l := lineOf(c)
				want[l] = true
				b.WriteString(l + "\n")
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)+".cdxj"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(dir, "bad.cdxj")
	good := capture("http://example.com/ok", t0, "z.warc.gz", 0, "ok")
	os.WriteFile(bad, []byte("not a line\n"+lineOf(good)+"\ncom,example)/ 2024 {\"url\": \"http://example.com/\"}\ncom,example)/partial 20240101000000 {"), 0o644)
	want[lineOf(good)] = true
	ixDir := filepath.Join(t.TempDir(), "ci")
	ix, err := Open(ixDir, WithCDXJDirs(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	ix.Scan(ctx, Query{End: "\xff"}, func(e *Entry) error {
		c := e.Capture
		c.RevisitOf = nil
		got[lineOf(c)] = true
		return nil
	})
	for l := range want {
		if !got[l] {
			t.Errorf("line not indexed: %s", l)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, %d lines", len(got), len(want))
	}
	if err := ix.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// Unchanged files are skipped: a line removed behind the index's back
	// is not noticed until the file changes (size and mtime are kept).
	st, _ := ix.Stats(ctx)
	if err := ix.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	more := capture("http://example.com/more", t0, "z.warc.gz", 500, "more")
	f, _ := os.OpenFile(bad, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n" + lineOf(more) + "\n")
	f.Close()
	if err := ix.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	st2, _ := ix.Stats(ctx)
	if st2.Scopes[0].Captures != st.Scopes[0].Captures+1 { // "more"; the completed partial line is no CDXJ
		t.Errorf("captures %d → %d after appending to a CDXJ file", st.Scopes[0].Captures, st2.Scopes[0].Captures)
	}
	ix.Close()
	// Reopening and catching up reads nothing again.
	ix, err = Open(ixDir, WithCDXJDirs(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	st3, _ := ix.Stats(ctx)
	if st3.Scopes[0].Captures != st2.Scopes[0].Captures {
		t.Errorf("reopen changed the count: %d → %d", st2.Scopes[0].Captures, st3.Scopes[0].Captures)
	}
	if err := ix.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	vs := []value{
		{typ: typeResponse, length: 1, uri: "http://a/"},
		{typ: typeResponse, length: 1 << 40, uri: "http://a/\x00\xff", status: 200, mime: 3, digest: "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
			payloadLength: 77, nanos: 999999999, truncated: "length", mimeDetected: 9, metadata: `{"a":1}`},
		{typ: typeResponse, uri: "u", digest: "not-a-digest"},
		{typ: typeResponse, uri: "u", digest: canonicalDigest("sha256:" + strings.Repeat("ab", 32))},
		{typ: typeRevisit, uri: "u", profile: profiles[4], refURI: "u", refSameURI: true, refDate: t0.Add(time.Nanosecond), refID: "<urn:uuid:1>",
			orig: &origRef{file: 5, offset: 1 << 33, length: 9}},
		{typ: typeRevisit, uri: "u", profile: "http://other/profile", refURI: "v", refDate: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)},
		{typ: typeConversion, uri: ""},
	}
	for _, v := range vs {
		got, err := decodeValue(v.encode(nil))
		if err != nil {
			t.Fatalf("%+v: %v", v, err)
		}
		deref := func(o *origRef) any {
			if o == nil {
				return nil
			}
			return *o
		}
		go1, vo := deref(got.orig), deref(v.orig)
		got.orig, v.orig = nil, nil
		if fmt.Sprintf("%+v %+v", got, go1) != fmt.Sprintf("%+v %+v", v, vo) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, v)
		}
	}
	for _, b := range [][]byte{nil, {0xff}, {0, 9, 1}, append(vs[0].encode(nil), 0)} {
		if _, err := decodeValue(b); err == nil {
			t.Errorf("%x decoded", b)
		}
	}
	for _, k := range []string{"", "a", "a\x00b", "\x01\x00", "com,example)/ \xff"} {
		key := captureKey(3, k, t0, 7, 1<<40)
		p, err := parseCaptureKey(key)
		if err != nil || p.urlkey != k || p.scope != 3 || p.file != 7 || p.offset != 1<<40 || p.seconds != t0.Unix() {
			t.Errorf("key %q: %+v %v", k, p, err)
		}
	}
	// Escaped urlkeys keep byte order, and the separator sorts first.
	ks := []string{"a", "a\x00", "a\x00\x00", "a\x01", "a\x02", "a/", "ab"}
	var enc []string
	for _, k := range ks {
		enc = append(enc, string(captureKey(1, k, t0, 1, 1)))
	}
	if !sort.StringsAreSorted(enc) {
		t.Error("escaped keys do not sort like the urlkeys")
	}
}

// TestEmptyDefaultScope: before anything is indexed, the default
// collection answers nothing; another unknown collection is an error.
func TestEmptyDefaultScope(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, WithScope("web"))
	n := 0
	count := func(*Entry) error { n++; return nil }
	if err := ix.Scan(ctx, Query{Key: "com,example)/"}, count); err != nil {
		t.Errorf("default collection: %v", err)
	}
	if err := ix.Closest(ctx, "web", "com,example)/", t0, count); err != nil {
		t.Errorf("default collection: %v", err)
	}
	if err := ix.Scan(ctx, Query{Scope: "other", Key: "com,example)/"}, count); !errors.Is(err, ErrNoScope) || n != 0 {
		t.Errorf("unknown collection: %v, %d entries", err, n)
	}
}
