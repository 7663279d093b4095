package sidecar_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/client"
	"github.com/wayside-archive/wayside/crawl/sitetest"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/warcio"
)

// TestMaintRoutesNeedToken: the delete and replace routes are write
// routes: over TCP they need the bearer token (the CDX path token is not
// enough), an empty selector is refused, and with the token a delete
// removes exactly what it selects from the daemon's dedup index.
func TestMaintRoutesNeedToken(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, apiTestConfig)
	ctx := context.Background()
	for _, p := range []string{"/v1/index/delete", "/v1/index/update", "/v1/index/scan", "/v1/captures/delete", "/v1/captures/replace"} {
		for _, pre := range []string{"", "/t/" + testCDXToken} {
			req, _ := http.NewRequest("POST", d.tcp+pre+p, strings.NewReader(`{"files":["a.warc.gz"]}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
				t.Errorf("POST %s%s without the token: %d, want 401 or 403", pre, p, resp.StatusCode)
			}
		}
	}
	tc, err := client.New(d.tcp, client.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.DeleteIndex(ctx, dedupindex.Selector{}); err == nil || !strings.Contains(err.Error(), "selector") {
		t.Fatalf("empty selector: %v", err)
	}
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var es []dedupindex.Entry
	for i, f := range []string{"a.warc.gz", "b.warc.gz", "a.warc.gz"} {
		o := dedupindex.Original{Digest: "sha1:" + strings.Repeat(string(rune('A'+i)), 32), TargetURI: "http://e.example/" + f,
			Date: date, RecordID: "<urn:uuid:0000000" + string(rune('0'+i)) + "-1111-4222-8333-444455556666>", File: f, Offset: int64(i)}
		es = append(es, dedupindex.Entry{Key: dedupindex.Key{Scope: "default", Digest: o.Digest}, Original: o})
	}
	if _, err := tc.Put(ctx, es); err != nil {
		t.Fatal(err)
	}
	n, err := tc.DeleteIndex(ctx, dedupindex.Selector{Files: []string{filepath.Join("/elsewhere", "a.warc.gz")}})
	if err != nil || n != 2 {
		t.Fatalf("delete --file a.warc.gz = %d, %v; want 2", n, err)
	}
	var left []string
	if err := tc.ScanIndex(ctx, dedupindex.Selector{}, func(e dedupindex.Entry) error { left = append(left, e.Original.File); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != "b.warc.gz" {
		t.Fatalf("after delete the index holds %v", left)
	}
}

// TestE2EDedupReplaceUnderDaemon is the reported bug: `wayside dedup run
// --replace` on a directory the daemon watches left the daemon's capture
// index with the old rows beside the re-ingested ones (CDX listed captures
// twice, id_ fetches at old offsets failed, a restart did not repair it).
// With --replace-index sidecar:///SOCKET the daemon's dedup and capture
// indexes are updated as each file is swapped in: right after the run,
// without waiting for any re-ingest, the CDX API lists every capture of
// the new files exactly once and every id_ fetch returns the archived
// payload (revisits from their originals); after the daemon has re-read
// the replaced files, and after a restart, still exactly once. (Without
// --replace-index this test fails: captures listed twice, id_ fetches at
// the old offsets fail.)
func TestE2EDedupReplaceUnderDaemon(t *testing.T) {
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	srv, err := sitetest.Start(sitetest.New())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for i := range 2 {
		out, err := exec.Command(waysideBin, "crawl", "--warc-dir", warcs, "--no-dedup", "--capture-index", "-", "--delay", "0", "--parallel", "1", "--quiet", srv.URL+"/").CombinedOutput()
		if err != nil {
			t.Fatalf("crawl %d: %v\n%s", i, err, out)
		}
		// Captures of a URL a second apart at least (its id_ URL names the second).
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	}
	d := startDaemon(t, dir, cdxTestConfig)
	base := d.tcp + "/t/" + testCDXToken + "/default"
	cdxCount := func() map[string]int {
		resp := httpGetRaw(t, base+"/cdx?url="+url.QueryEscape(srv.URL+"/")+"&matchType=host&output=text&fl=timestamp,original,offset,filename", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				out[l]++
			}
		}
		return out
	}
	before := len(cdxjLines(t, warcs))
	waitFor(t, "the daemon to index every capture", func() bool { return len(cdxCount()) == before })

	files, _ := filepath.Glob(filepath.Join(warcs, "*.warc.gz"))
	args := append([]string{"dedup", "run", "-o", filepath.Join(dir, "out"), "--replace", "--min-size", "1", "--quiet",
		"--replace-index", "sidecar://" + d.sock}, files...)
	code, stdout, stderr := runBinary(t, args...)
	if code != 0 {
		t.Fatalf("dedup run --replace: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "capture index of the daemon") {
		t.Fatalf("the report does not name the daemon's capture index:\n%s", stdout)
	}

	// What the replaced files hold now, read independently.
	type capture struct {
		uri, ts string
		payload []byte
		status  int
	}
	byID := map[string]*warcio.Record{}
	var recs []*warcio.Record
	for _, f := range files {
		r, err := warcio.Open(f, warcio.Options{KeepPayload: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			byID[rec.RecordID] = rec
			recs = append(recs, rec)
		}
		r.Close()
	}
	var want []capture
	revisits := 0
	for _, rec := range recs {
		switch rec.Type {
		case "response":
			want = append(want, capture{rec.TargetURI, rec.Date.UTC().Format("20060102150405"), rec.Payload, rec.Status()})
		case "revisit":
			orig := byID[rec.Header("WARC-Refers-To")]
			if orig == nil {
				t.Fatalf("revisit %s refers to no record", rec.TargetURI)
			}
			revisits++
			want = append(want, capture{rec.TargetURI, rec.Date.UTC().Format("20060102150405"), orig.Payload, rec.Status()})
		}
	}
	if revisits == 0 {
		t.Fatal("dedup run made no revisit: the test shows nothing")
	}
	lines := cdxjLines(t, warcs)
	check := func(when string) {
		t.Helper()
		got := cdxCount()
		for l, n := range got {
			if n != 1 {
				t.Errorf("%s: CDX lists %q %d times", when, l, n)
			}
		}
		if len(got) != len(lines) {
			t.Errorf("%s: CDX lists %d captures, the replaced files' CDXJ %d", when, len(got), len(lines))
		}
		for _, c := range want {
			resp := httpGetRaw(t, base+"/"+c.ts+"id_/"+c.uri, nil)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !bytes.Equal(body, c.payload) {
				t.Errorf("%s: id_ %s %s: status %d (archived %d), %d bytes (archived %d, equal %v)", when, c.ts, c.uri, resp.StatusCode, c.status, len(body), len(c.payload), bytes.Equal(body, c.payload))
			}
		}
	}
	check("right after the replace")

	// The daemon re-reads the replaced files; nothing is listed twice.
	sizes := map[string]int64{}
	for _, f := range files {
		fi, _ := os.Stat(f)
		sizes[filepath.Base(f)] = fi.Size()
	}
	waitFor(t, "the daemon to re-read the replaced files", func() bool {
		st, err := d.client.Ingest(context.Background())
		if err != nil {
			return false
		}
		done := 0
		for _, fp := range st.Files {
			if s, ok := sizes[fp.Name]; ok && fp.Size == s && fp.Offset == s {
				done++
			}
		}
		return done == len(files)
	})
	check("after the daemon re-read the files")
	if err := d.term(); err != nil {
		t.Fatal(err)
	}
	d.start()
	base = d.tcp + "/t/" + testCDXToken + "/default" // a new port
	check("after a restart")
}
