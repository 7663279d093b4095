package interop_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/cdxj"
	"github.com/wayside-archive/wayside/internal/testenv"
	"github.com/wayside-archive/wayside/warcio"
)

// waczReplay is what js/replay-wacz.mjs prints.
type waczReplay struct {
	Pages []struct {
		URL   string `json:"url"`
		TS    int64  `json:"ts"`
		Title string `json:"title"`
	} `json:"pages"`
	Verify *struct {
		Entries []struct {
			ID       string `json:"id"`
			Expected any    `json:"expected"`
			Matched  any    `json:"matched"`
		} `json:"entries"`
	} `json:"verify"`
	Answers []struct {
		Query  waczQuery `json:"query"`
		Answer *replayed `json:"answer"`
	} `json:"answers"`
}

type waczQuery struct {
	URL  string `json:"url"`
	TS   int64  `json:"ts"`
	Kind string `json:"kind"`
}

// waczQueries lists a replay request for every page of a WACZ and every
// revisit record of the WARC files, at the second (the index's
// precision), and the exact (millisecond) dates of the WARC files'
// responses and revisits by URL and second.
func waczQueries(t testing.TB, members map[string][]byte, warcs []string) ([]waczQuery, map[string][]int64) {
	var qs []waczQuery
	exact := map[string][]int64{}
	for _, name := range []string{"pages/pages.jsonl", "pages/extraPages.jsonl"} {
		lines := strings.Split(strings.TrimSpace(string(members[name])), "\n")
		for _, l := range lines[min(1, len(lines)):] {
			var p struct{ URL, TS string }
			if err := json.Unmarshal([]byte(l), &p); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			d, ok := warcio.ParseDate(p.TS)
			if !ok {
				t.Fatalf("%s: ts %q", name, p.TS)
			}
			qs = append(qs, waczQuery{URL: p.URL, TS: d.UnixMilli(), Kind: "page"})
		}
	}
	for _, w := range warcs {
		r, err := warcio.Open(w)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Type == "revisit" {
				qs = append(qs, waczQuery{URL: rec.TargetURI, TS: rec.Date.Unix() * 1000, Kind: "revisit"})
			}
			if rec.Type == "revisit" || rec.Type == "response" {
				k := secondKey(rec.TargetURI, rec.Date.Unix()*1000)
				exact[k] = append(exact[k], rec.Date.UnixMilli())
			}
		}
		r.Close()
	}
	return qs, exact
}

func secondKey(url string, ms int64) string { return url + " " + strconv.FormatInt(ms/1000, 10) }

// TestWACZReplay crawls the example site twice (revisits of both
// profiles, across rotated WARC files), packages the WARCs with `wayside
// wacz create` (once with a plain CDXJ index, once ZipNum) and loads each
// WACZ in wabac.js as ReplayWeb.page opens a local file (on demand: its
// index, then records by byte range through the zip). Every page of
// pages.jsonl and every revisit must replay, byte for byte as wabac.js
// replays the same WARC files imported directly (status, URL, payload
// length and SHA-256), wabac.js must find the signature valid with
// Wayside's public key, and the independent checker js/check-wacz.mjs
// (its own zip reader) must find the layout, hashes, signature, index and
// pages sound; `wayside wacz verify` must agree.
func TestWACZReplay(t *testing.T) {
	t.Parallel()
	js := tools(t)
	dir := crawlExample(t, true, "--max-file-size", "40000")
	warcs := glob(t, filepath.Join(dir, "*.warc.gz"))
	key := filepath.Join(t.TempDir(), "key.pem")
	pub := strings.TrimSpace(wayside(t, "wacz", "pubkey", "--key", key))
	out := t.TempDir()
	plain := filepath.Join(out, "plain.wacz")
	zipnum := filepath.Join(out, "zipnum.wacz")
	wayside(t, "wacz", "create", "-q", "--key", key, "-o", plain, dir)
	wayside(t, "wacz", "create", "-q", "--key", key, "--zipnum-threshold", "1", "-o", zipnum, dir)
	if !strings.Contains(wayside(t, "wacz", "verify", "--trust", pub, plain), "OK") {
		t.Fatal("wacz verify did not say OK")
	}
	wayside(t, "wacz", "verify", "--trust", pub, zipnum)
	if _, ok := testenv.ZipMembers(t, zipnum)["indexes/index.idx"]; !ok {
		t.Fatal("no ZipNum index")
	}

	members := testenv.ZipMembers(t, plain)
	qs, exact := waczQueries(t, members, warcs)
	nPages, nRevisits := 0, 0
	for _, q := range qs {
		if q.Kind == "page" {
			nPages++
		} else {
			nRevisits++
		}
	}
	if nPages < 5 || nRevisits != 16 {
		t.Fatalf("%d pages and %d revisits; want at least 5 pages and the crawl's 16 revisits", nPages, nRevisits)
	}
	qf := filepath.Join(t.TempDir(), "queries.json")
	b, _ := json.Marshal(qs)
	os.WriteFile(qf, b, 0o644)

	// From the WARC files (millisecond dates), every capture of each
	// queried URL within the queried second: when the two crawls captured
	// a URL within one second, the index's 14-digit timestamps cannot tell
	// the captures apart, and either is a right answer.
	var dq []waczQuery
	for _, q := range qs {
		for _, ms := range exact[secondKey(q.URL, q.TS)] {
			dq = append(dq, waczQuery{URL: q.URL, TS: ms, Kind: q.Kind})
		}
	}
	dqf := filepath.Join(t.TempDir(), "direct.json")
	b, _ = json.Marshal(dq)
	os.WriteFile(dqf, b, 0o644)
	var direct waczReplay
	js.nodeJSON(t, &direct, "replay-wacz.mjs", append([]string{dqf}, warcs...)...)
	right := map[string][]replayed{}
	for _, a := range direct.Answers {
		if a.Answer == nil {
			t.Errorf("wabac.js replays nothing from the WARC files for %s at %d", a.Query.URL, a.Query.TS)
			continue
		}
		k := secondKey(a.Query.URL, a.Query.TS)
		right[k] = append(right[k], *a.Answer)
	}
	for _, w := range []string{plain, zipnum} {
		var got waczReplay
		js.nodeJSON(t, &got, "replay-wacz.mjs", qf, w)
		if len(got.Answers) != len(qs) {
			t.Fatalf("%s: %d answers, %d queries", w, len(got.Answers), len(qs))
		}
		for _, a := range got.Answers {
			ok := false
			for _, d := range right[secondKey(a.Query.URL, a.Query.TS)] {
				ok = ok || (a.Answer != nil && a.Answer.Status == d.Status && a.Answer.Length == d.Length && a.Answer.SHA256 == d.SHA256)
			}
			switch {
			case a.Answer == nil:
				t.Errorf("%s: wabac.js replays nothing for %s %s at %d", filepath.Base(w), a.Query.Kind, a.Query.URL, a.Query.TS)
			case !ok:
				t.Errorf("%s: %s %s at %d replays as %+v from the WACZ; from the WARC files the captures of that second replay as %+v", filepath.Base(w), a.Query.Kind, a.Query.URL, a.Query.TS, *a.Answer, right[secondKey(a.Query.URL, a.Query.TS)])
			case a.Query.Kind == "page" && a.Answer.Status != 200:
				t.Errorf("%s: page %s replays with status %d", filepath.Base(w), a.Query.URL, a.Answer.Status)
			}
		}
		if len(got.Pages) != nPages {
			t.Errorf("%s: wabac.js read %d pages, pages.jsonl holds %d", filepath.Base(w), len(got.Pages), nPages)
		}
		sig, key := false, ""
		if got.Verify != nil {
			for _, e := range got.Verify.Entries {
				switch e.ID {
				case "signature":
					sig = e.Matched == true
				case "publicKey":
					key, _ = e.Expected.(string)
				}
			}
		}
		if !sig || key != pub {
			t.Errorf("%s: wabac.js: signature valid %v, key %q (want %q)", filepath.Base(w), sig, key, pub)
		}
		var chk waczCheck
		js.nodeJSON(t, &chk, "check-wacz.mjs", w)
		if len(chk.Problems) > 0 || !chk.Signature || chk.Pages != nPages || chk.Lines == 0 {
			t.Errorf("%s: independent check: %+v", filepath.Base(w), chk)
		}
	}
}

// waczCheck is what js/check-wacz.mjs prints.
type waczCheck struct {
	Members   int      `json:"members"`
	Resources int      `json:"resources"`
	Lines     int      `json:"lines"`
	Pages     int      `json:"pages"`
	Signature bool     `json:"signature"`
	Problems  []string `json:"problems"`
}

// TestWACZAgainstJSWACZ packages the same WARC files with js-wacz 0.1.6
// (@harvard-lil/js-wacz, pinned in js/package-lock.json) and with `wayside
// wacz create`, and compares contents: the same WARC bytes under the same
// names, the same set of index lines (field by field, modulo the
// documented differences between pywb's and warcio.js's conventions that
// cdxjDiff accepts: js-wacz indexes with warcio.js), and every page
// js-wacz finds among Wayside's pages with the same timestamp and title
// (Wayside also lists revisits of HTML pages and every capture of a URL;
// js-wacz keeps one capture per URL and only full responses).
// js-wacz 0.1.6 lists wrong sha256 values for the WARC resources in its
// datapackage.json, so its hashes are not compared: the WARC members are
// compared byte for byte instead, and `wayside wacz verify` of js-wacz's
// file is expected to report exactly those hashes and nothing else.
func TestWACZAgainstJSWACZ(t *testing.T) {
	t.Parallel()
	js := tools(t)
	dir := crawlExample(t, true, "--max-file-size", "40000")
	warcs := glob(t, filepath.Join(dir, "*.warc.gz"))
	out := t.TempDir()
	ours := filepath.Join(out, "ours.wacz")
	theirs := filepath.Join(out, "theirs.wacz")
	wayside(t, "wacz", "create", "-q", "--no-sign", "-o", ours, dir)
	run(t, js.node, filepath.Join(js.dir, "node_modules", "@harvard-lil", "js-wacz", "bin", "cli.js"),
		"create", "--log-level", "error", "-f", filepath.Join(dir, "*.warc.gz"), "-o", theirs)

	om, tm := testenv.ZipMembers(t, ours), testenv.ZipMembers(t, theirs)
	for _, w := range warcs {
		name := "archive/" + filepath.Base(w)
		in, _ := os.ReadFile(w)
		if !bytes.Equal(om[name], in) || !bytes.Equal(tm[name], in) {
			t.Errorf("%s: the WARC bytes differ (Wayside %d, js-wacz %d, input %d bytes)", name, len(om[name]), len(tm[name]), len(in))
		}
	}
	for name := range tm {
		if strings.HasPrefix(name, "archive/") && om[name] == nil {
			t.Errorf("js-wacz has %s, Wayside does not", name)
		}
	}

	// Index lines, matched by file and offset.
	theirIdx := tm["indexes/index.cdx"]
	if theirIdx == nil {
		t.Fatalf("js-wacz wrote no indexes/index.cdx (members %v)", keys(tm))
	}
	parse := func(b []byte) map[string]cdxj.Line {
		m := map[string]cdxj.Line{}
		for _, s := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			l, err := cdxj.Parse(s)
			if err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			m[l.Filename+" "+strings.Repeat("0", 12-len(itoa(l.Offset)))+itoa(l.Offset)] = l
		}
		return m
	}
	ol, tl := parse(om["indexes/index.cdxj"]), parse(theirIdx)
	if len(ol) != len(tl) {
		t.Errorf("Wayside indexes %d records, js-wacz %d", len(ol), len(tl))
	}
	notes := map[string]int{}
	for k, l := range ol {
		o, ok := tl[k]
		if !ok {
			t.Errorf("js-wacz has no line for %s (%s)", k, l.URL)
			continue
		}
		if l.IsRevisit() && l.Status == 0 && o.Status == 304 {
			// Wayside's WACZ index leaves out the 304 of server-not-modified
			// revisits (see package wacz): wabac.js would replay them as
			// empty 304s.
			notes["status of a server-not-modified revisit left out (package wacz)"]++
			o.Status = 0
		}
		diffs, ns := cdxjDiff(l, o, nil)
		for _, d := range diffs {
			t.Errorf("%s %s: %s", k, l.URL, d)
		}
		for _, n := range ns {
			notes[n]++
		}
	}
	for n, c := range notes {
		t.Logf("accepted %d times: %s", c, n)
	}

	// Pages.
	type page struct{ URL, TS, Title string }
	readPages := func(m map[string][]byte) map[string][]page {
		out := map[string][]page{}
		for _, name := range []string{"pages/pages.jsonl", "pages/extraPages.jsonl"} {
			lines := strings.Split(strings.TrimSpace(string(m[name])), "\n")
			for _, l := range lines[min(1, len(lines)):] {
				if l == "" {
					continue
				}
				var p page
				if err := json.Unmarshal([]byte(l), &p); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				d, _ := warcio.ParseDate(p.TS)
				k := p.URL + " " + d.UTC().Format("20060102150405")
				out[k] = append(out[k], p)
			}
		}
		return out
	}
	op, tp := readPages(om), readPages(tm)
	if len(tp) == 0 {
		t.Fatal("js-wacz found no pages")
	}
	for k, ps := range tp {
		// Two captures of a URL within one second (the crawls run back to
		// back) share url and ts: any of Wayside's pages there may match.
		for _, p := range ps {
			found := false
			for _, o := range op[k] {
				found = found || o.Title == p.Title
			}
			if !found {
				t.Errorf("js-wacz's page %s %q is not among Wayside's: %+v", k, p.Title, op[k])
			}
		}
	}
	t.Logf("pages: Wayside %d, js-wacz %d", len(op), len(tp))

	// js-wacz's datapackage: only its WARC hashes are wrong.
	rep := struct {
		Problems []struct{ Member, Msg string }
	}{}
	cmdOut := runAllowFail(t, "wacz", "verify", "--allow-unsigned", "--json", theirs)
	if err := json.Unmarshal([]byte(cmdOut), &rep); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, cmdOut)
	}
	for _, p := range rep.Problems {
		if !strings.HasPrefix(p.Member, "archive/") || !strings.HasPrefix(p.Msg, "sha256 is ") {
			t.Errorf("wacz verify of js-wacz's file: %s: %s", p.Member, p.Msg)
		}
	}
	t.Logf("js-wacz 0.1.6: %d wrong WARC hashes in its datapackage.json", len(rep.Problems))
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// runAllowFail runs the wayside binary and returns its stdout whatever its
// exit status.
func runAllowFail(t testing.TB, args ...string) string {
	t.Helper()
	wayside(t, "version") // builds the binary once
	var stdout bytes.Buffer
	cmd := exec.Command(waysideP, args...)
	cmd.Stdout = &stdout
	cmd.Run()
	return stdout.String()
}

// TestWACZCheckersCatchBrokenOutput: the independent checker
// (js/check-wacz.mjs) names a WARC member whose bytes changed, a page
// missing from the index and a forged signature, and wabac.js finds the
// forged signature invalid, so the checks TestWACZReplay relies on can
// fail.
func TestWACZCheckersCatchBrokenOutput(t *testing.T) {
	t.Parallel()
	js := tools(t)
	warc := filepath.Join(testenv.SharedDir(t), "corpus", "warc", "pywb-iana.warc.gz")
	dir := t.TempDir()
	good := filepath.Join(dir, "good.wacz")
	wayside(t, "wacz", "create", "-q", "--key", filepath.Join(dir, "key.pem"), "-o", good, warc)
	var chk waczCheck
	js.nodeJSON(t, &chk, "check-wacz.mjs", good)
	if len(chk.Problems) != 0 || !chk.Signature {
		t.Fatalf("good file: %+v", chk)
	}
	flipped := filepath.Join(dir, "flipped.wacz")
	testenv.Rezip(t, good, flipped, "archive/pywb-iana.warc.gz", func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
	js.nodeJSON(t, &chk, "check-wacz.mjs", flipped)
	if !anyContains(chk.Problems, "archive/pywb-iana.warc.gz: sha256") {
		t.Errorf("flipped WARC byte: %v", chk.Problems)
	}
	page := filepath.Join(dir, "page.wacz")
	testenv.Rezip(t, good, page, "pages/pages.jsonl", func(b []byte) []byte {
		return append(b, `{"id":"x","url":"http://nowhere.example/","ts":"2020-01-01T00:00:00Z"}`+"\n"...)
	})
	js.nodeJSON(t, &chk, "check-wacz.mjs", page)
	if !anyContains(chk.Problems, "page http://nowhere.example/ at 20200101000000 not in the index") {
		t.Errorf("page not in the index: %v", chk.Problems)
	}
	forged := filepath.Join(dir, "forged.wacz")
	testenv.Rezip(t, good, forged, "datapackage-digest.json", func(b []byte) []byte {
		var d map[string]any
		json.Unmarshal(b, &d)
		sd := d["signedData"].(map[string]any)
		sig := []byte(sd["signature"].(string))
		sig[5] = map[bool]byte{true: 'B', false: 'A'}[sig[5] == 'A']
		sd["signature"] = string(sig)
		out, _ := json.Marshal(d)
		return out
	})
	js.nodeJSON(t, &chk, "check-wacz.mjs", forged)
	if chk.Signature {
		t.Error("the independent checker accepts a forged signature")
	}
	var rep waczReplay
	qf := filepath.Join(dir, "q.json")
	os.WriteFile(qf, []byte("[]"), 0o644)
	js.nodeJSON(t, &rep, "replay-wacz.mjs", qf, forged)
	for _, e := range rep.Verify.Entries {
		if e.ID == "signature" && e.Matched != false {
			t.Errorf("wabac.js: forged signature matched %v", e.Matched)
		}
	}
}

func anyContains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}
