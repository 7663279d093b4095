package interop_test

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/cdxjtest"
)

// checkCDXJ indexes the set with `wayside cdxj` and checks that index and
// every CDXJ file the command left on disk: sorted the way pywb's binary
// search needs (cdxjtest.CheckSorted: every key found by pywb's exact-URL
// range query), the files beside the WARCs holding exactly the lines
// `wayside cdxj` gives,
// and every line agreeing with the warcio CLI's own CDXJ indexer
// (`warcio cdx-index`) on the same record, field by field, except where the
// tools follow different documented conventions (see cdxjDiff).
func checkCDXJ(t testing.TB, js jsTools, set outputSet, recs map[string][]jsRecord) {
	t.Helper()
	idx := filepath.Join(t.TempDir(), set.name+".cdxj")
	wayside(t, append([]string{"cdxj", "-o", idx}, set.warcs...)...)
	cdxjtest.CheckSorted(t, []string{idx})
	want := readLines(t, idx)

	checkBeside(t, set, want)

	ours := map[string]cdxj.Line{}
	for _, l := range parseLines(t, idx, want) {
		ours[l.Filename+"@"+strconv.FormatInt(l.Offset, 10)] = l
	}
	records := map[string]*jsRecord{}
	for _, p := range set.warcs {
		for i := range recs[p] {
			records[filepath.Base(p)+"@"+strconv.FormatInt(recs[p][i].Offset, 10)] = &recs[p][i]
		}
	}
	theirs := parseLines(t, "warcio cdx-index", js.warcioCDXJ(t, set.warcs))
	seen := map[string]bool{}
	notes := map[string]int{}
	for _, l := range theirs {
		at := l.Filename + "@" + strconv.FormatInt(l.Offset, 10)
		seen[at] = true
		o, ok := ours[at]
		if !ok {
			t.Errorf("%s: warcio.js indexes the record at %s offset %d (%s %s), `wayside cdxj` does not", set.name, l.Filename, l.Offset, l.Key, l.URL)
			continue
		}
		diffs, accepted := cdxjDiff(o, l, records[at])
		for _, d := range diffs {
			t.Errorf("%s: %s offset %d: %s", set.name, l.Filename, l.Offset, d)
		}
		for _, n := range accepted {
			notes[n]++
		}
	}
	for _, n := range slices.Sorted(maps.Keys(notes)) {
		t.Logf("%s: %d lines differ from warcio.js's as documented: %s", set.name, notes[n], n)
	}
	for at, o := range ours {
		if !seen[at] {
			t.Errorf("%s: `wayside cdxj` indexes the record at %s (%s %s %s), warcio.js does not", set.name, at, o.Key, o.URL, o.MIME)
		}
	}
	if len(theirs) == 0 {
		t.Errorf("%s: warcio.js indexed nothing", set.name)
	}
}

// The documented differences between Wayside's CDXJ lines (pywb's
// conventions) and warcio.js's, accepted by cdxjDiff and logged with a
// count. Every other difference fails the test.
const (
	noteNonHTTPKey = "urlkey of a non-HTTP URI (dns:, metadata://, urn:): warcio.js's getSurt leaves any URI not starting with http: or https: as it is; pywb's surt (and Wayside's) canonicalises it (dns:host → reversed host, scheme://host/path → SURT, lower case)"
	noteSURT       = "urlkey canonicalisation: warcio.js's getSurt only lower-cases, drops www, reverses the host and sorts the query; IA canonicalisation (pywb, Wayside) also collapses repeated slashes in the path (\"/web/2020/http://x\" → \"/web/2020/http:/x\"), strips a trailing slash from it (\"/blog/\" → \"/blog\") and decodes percent-escapes that need none (%2F → /, %7C → |, %3D → =, repeatedly), before sorting the query arguments"
	noteUnk        = "mime: pywb writes \"unk\" for an HTTP message without Content-Type, warcio.js writes none"
	noteDigest     = "digest: warcio.js copies the declared WARC-Payload-Digest and writes none without one; pywb and Wayside compute it (the value Wayside writes is checked against the SHA-1 warcio.js computes over the same payload)"
)

// cdxjDiff compares Wayside's CDXJ line for a record with warcio.js's on
// urlkey, timestamp, url, mime, status, digest, length, offset and
// filename. It returns the differences that fail and the notes of the
// documented ones it accepted. rec is warcio.js's reading of the record.
func cdxjDiff(ours, theirs cdxj.Line, rec *jsRecord) (diffs, notes []string) {
	switch {
	case ours.Key == theirs.Key:
	case theirs.Key == theirs.URL && !strings.HasPrefix(theirs.URL, "http:") && !strings.HasPrefix(theirs.URL, "https:"):
		notes = append(notes, noteNonHTTPKey)
	case ianorm(ours.Key) == ianorm(theirs.Key):
		notes = append(notes, noteSURT)
	default:
		diffs = append(diffs, fmt.Sprintf("urlkey: Wayside %q, warcio.js %q", ours.Key, theirs.Key))
	}
	cmp := func(field, a, b string) {
		if a != b {
			diffs = append(diffs, fmt.Sprintf("%s: Wayside %q, warcio.js %q", field, a, b))
		}
	}
	cmp("timestamp", ours.Timestamp, theirs.Timestamp)
	cmp("url", ours.URL, theirs.URL)
	if ours.MIME == "unk" && theirs.MIME == "" {
		notes = append(notes, noteUnk)
	} else {
		cmp("mime", ours.MIME, theirs.MIME)
	}
	cmp("status", strconv.Itoa(ours.Status), strconv.Itoa(theirs.Status))
	if theirs.Digest == "" && rec != nil && rec.h("WARC-Payload-Digest") == "" {
		alg, hx := hexOf(ours.Digest)
		if alg == "" || rec.Payload[alg] != hx {
			diffs = append(diffs, fmt.Sprintf("digest: Wayside computes %q, warcio.js's bytes give %s %s", ours.Digest, alg, rec.Payload[alg]))
		} else {
			notes = append(notes, noteDigest)
		}
	} else {
		cmp("digest", hexDigest(ours.Digest), hexDigest(theirs.Digest))
	}
	if ours.Length != theirs.Length {
		why := ""
		if ours.Length == theirs.Length+4 && !strings.HasSuffix(ours.Filename, ".gz") {
			why = " (uncompressed WARC: Wayside's length counts the CRLF CRLF that ends the record; warcio.js's and pywb's do not — Python warcio's ArchiveIterator.read_to_end subtracts those blank lines for uncompressed files — so Wayside's line is not the one pywb writes)"
		}
		diffs = append(diffs, fmt.Sprintf("length: Wayside %d, warcio.js %d%s", ours.Length, theirs.Length, why))
	}
	cmp("offset", strconv.FormatInt(ours.Offset, 10), strconv.FormatInt(theirs.Offset, 10))
	cmp("filename", ours.Filename, theirs.Filename)
	return diffs, notes
}

// ianorm undoes the differences noteSURT describes: percent-escapes
// decoded (repeatedly, as IA canonicalisation does), query arguments
// sorted after decoding, repeated slashes of the path collapsed, a trailing
// slash of the path (other than the root's) dropped.
func ianorm(key string) string {
	for range 8 {
		u, err := url.PathUnescape(key)
		if err != nil || u == key {
			break
		}
		key = u
	}
	path, query, hasQuery := strings.Cut(key, "?")
	for strings.Contains(path, "//") {
		path = strings.ReplaceAll(path, "//", "/")
	}
	if strings.HasSuffix(path, "/") && !strings.HasSuffix(path, ")/") {
		path = strings.TrimSuffix(path, "/")
	}
	if !hasQuery {
		return path
	}
	args := strings.Split(query, "&")
	slices.Sort(args)
	return path + "?" + strings.Join(args, "&")
}

// diffLines returns the lines of want missing from got and the lines of got
// not in want (both sorted; duplicates count).
func diffLines(want, got []string) (missing, extra []string) {
	count := map[string]int{}
	for _, l := range want {
		count[l]++
	}
	for _, l := range got {
		count[l]--
	}
	for l, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, l)
		}
		for ; n < 0; n++ {
			extra = append(extra, l)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}

// checkBeside checks the CDXJ files a command left beside its WARC files:
// each sorted for pywb and merging (cdxjtest.CheckSorted), together holding
// exactly the lines want that `wayside cdxj` gives for the WARC files.
func checkBeside(t testing.TB, set outputSet, want []string) {
	t.Helper()
	if len(set.cdxjs) == 0 {
		return
	}
	got := cdxjtest.CheckSorted(t, set.cdxjs)
	if missing, extra := diffLines(want, got); len(missing)+len(extra) > 0 {
		t.Errorf("%s: the CDXJ files beside the WARCs differ from `wayside cdxj` of the same WARCs:\nmissing: %s\nextra:   %s", set.name, strings.Join(missing, "\n         "), strings.Join(extra, "\n         "))
	}
}
