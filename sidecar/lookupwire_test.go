package sidecar

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/dedupindex"
)

// encodingJSON is the general path's encoding (writeJSON's body), the
// reference the lookup fast path must match byte for byte.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil // writeJSON sends an empty body then
	}
	return buf.Bytes()
}

var wireStrings = []string{
	"", "plain", "http://example.com/a?b=c&d=<e>", `quote"d`, `back\slash`, "tab\there", "nl\n", "\x00\x1f\x7f",
	"caf\u00e9", "\u2028\u2029", "bad\xffutf8", "emoji \U0001F600", "<urn:uuid:00000000-0000-4000-8000-000000000001>",
	"sha1:AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH", "W/\"etag\"", "Tue, 15 Nov 1994 12:45:26 GMT", "text/html; charset=utf-8",
}

var wireTimes = []time.Time{
	{}, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC),
	time.Date(2025, 1, 2, 3, 4, 5, 120000000, time.FixedZone("x", 2*3600)), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("odd", 3600+30)),
	time.Unix(1700000000, 5).In(time.FixedZone("late", 24*3600+60)),
}

// TestLookupAnswerSameBytes: the lookup answer written by the fast path is
// byte for byte encoding/json's (what writeJSON sends) for hits, misses
// and originals with fields that need escaping or dates RFC 3339 cannot
// hold (those take the general path), and so are the headers.
func TestLookupAnswerSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	pick := func() string { return wireStrings[rng.IntN(len(wireStrings))] }
	cases := []api.LookupResult{{}, {Found: true}, {Error: "boom"}, {Found: false, Original: &dedupindex.Original{}}}
	for range 3000 {
		o := &dedupindex.Original{Digest: pick(), TargetURI: pick(), Date: wireTimes[rng.IntN(len(wireTimes))], RecordID: pick(),
			File: pick(), Offset: rng.Int64() - rng.Int64(), Length: rng.Int64N(1 << 40), PayloadLength: rng.Int64N(3) - 1,
			Status: rng.IntN(3) * 100, MIME: pick(), ETag: pick(), LastModified: pick()}
		if rng.IntN(2) == 0 { // plain, as real originals mostly are
			o.Digest, o.TargetURI, o.RecordID, o.File = wireStrings[13], wireStrings[2], wireStrings[12], "a.warc.gz"
			o.MIME, o.ETag, o.LastModified = wireStrings[rng.IntN(2)], wireStrings[14+rng.IntN(3)], wireStrings[rng.IntN(2)*15]
		}
		cases = append(cases, api.LookupResult{Found: true, Original: o})
	}
	fast := 0
	for i, res := range cases {
		want := encodingJSON(t, res)
		got, ok := appendLookupResult(nil, res)
		if ok {
			fast++
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d: fast path wrote\n%s\nencoding/json writes\n%s", i, got, want)
			}
		}
		rec, ref := httptest.NewRecorder(), httptest.NewRecorder()
		writeLookupResult(rec, res)
		writeJSON(ref, http.StatusOK, res)
		if rec.Code != ref.Code || !bytes.Equal(rec.Body.Bytes(), ref.Body.Bytes()) || !headersEqual(rec.Header(), ref.Header()) {
			t.Fatalf("case %d: answer %d %v %q, writeJSON's %d %v %q", i, rec.Code, rec.Header(), rec.Body, ref.Code, ref.Header(), ref.Body)
		}
	}
	// Both paths were exercised.
	if fast < 100 || fast == len(cases) {
		t.Fatalf("fast path taken %d times of %d", fast, len(cases))
	}
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\x00") != strings.Join(b[k], "\x00") {
			return false
		}
	}
	return true
}

// TestLookupQueryAsParseQuery: the lookup key read from a raw query is
// what url.ParseQuery and Values.Get give, for queries the fast reader
// takes and for those it leaves to ParseQuery.
func TestLookupQueryAsParseQuery(t *testing.T) {
	parts := []string{"digest=sha1:ABC", "digest=sha1:DEF", "scope=a", "scope=", "scope", "url=com,example)/", "target_uri=http://x/",
		"target_uri=http%3A%2F%2Fy%2F", "digest=a+b", "url=%zz", "digest=x;y", "", "digest=sha1%3AABC", "scope=%E2%82%AC", "url=a%2", "d%69gest=hex", "digest%=1", "other=1", "=v", "digest=", "Digest=up", "url=a=b"}
	rng := rand.New(rand.NewPCG(27, 2))
	fast := 0
	for range 5000 {
		n := rng.IntN(6)
		var ps []string
		for range n {
			ps = append(ps, parts[rng.IntN(len(parts))])
		}
		raw := strings.Join(ps, "&")
		q, _ := url.ParseQuery(raw)
		want := api.Key{Scope: q.Get("scope"), Digest: q.Get("digest"), URL: q.Get("url"), TargetURI: q.Get("target_uri")}
		r := &http.Request{URL: &url.URL{RawQuery: raw}}
		if got := lookupKeyFromQuery(r); got != want {
			t.Fatalf("query %q: got %+v, ParseQuery gives %+v", raw, got, want)
		}
		if _, ok := lookupQuery(raw); ok {
			fast++
		}
	}
	if fast != 5000 {
		t.Fatalf("fast reader took %d of 5000 queries of at most 6 parameters", fast)
	}
	many := strings.Repeat("a=1&", 20000) + "digest=sha1:X"
	q, _ := url.ParseQuery(many)
	if _, ok := lookupQuery(many); ok {
		t.Fatal("fast reader took a query of 20,001 parameters")
	}
	if got := lookupKeyFromQuery(&http.Request{URL: &url.URL{RawQuery: many}}); got.Digest != q.Get("digest") {
		t.Fatalf("20,001 parameters: digest %q, ParseQuery gives %q", got.Digest, q.Get("digest"))
	}
}
